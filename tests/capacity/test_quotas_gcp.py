"""The GCP quota fetcher: the real google-cloud-compute RegionsClient (REST transport, anonymous
credentials) against a loopback fake of the Compute Engine v1 regions API (JSON shapes of Region and
RegionList)."""

from __future__ import annotations

from typing import Any

from google.auth.credentials import AnonymousCredentials
from google.cloud import compute_v1
from loopback import Fake, serve

from capacity.quotas import Backoff, gcp

PROJECT = "acme-train"
BASE = f"/compute/v1/projects/{PROJECT}/regions"
NO_WAIT = Backoff(sleep=lambda _s: None)


def region(name: str, **limits: float) -> dict[str, Any]:
    return {"kind": "compute#region", "id": str(abs(hash(name)) % 10**12), "name": name, "status": "UP",
            "selfLink": f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/regions/{name}",
            "quotas": [{"metric": metric, "limit": limit, "usage": 0.0} for metric, limit in limits.items()]}


def client(url: str) -> compute_v1.RegionsClient:
    return compute_v1.RegionsClient(credentials=AnonymousCredentials(), transport="rest",
                                    client_options={"api_endpoint": url})


def test_named_regions_read_gpu_metrics_and_sum_h100_and_mega() -> None:
    fake = Fake({("GET", f"{BASE}/us-central1"): [(200, region("us-central1", NVIDIA_H100_GPUS=16.0,
                                                                 NVIDIA_H100_MEGA_GPUS=32.0,
                                                                 PREEMPTIBLE_NVIDIA_H100_GPUS=64.0,
                                                                 NVIDIA_L4_GPUS=8.0, CPUS=2400.0))]})
    with serve(fake):
        result = gcp.fetch(PROJECT, ["us-central1"], client(fake.url), NO_WAIT)
    got = {(r.gpu, r.market.value): r.max_gpus for r in result.rows}
    assert got[("H100", "on_demand")] == 48  # H100 + H100 Mega: separate quotas, both usable
    assert got[("H100", "spot")] == 64
    assert got[("L4", "on_demand")] == 8
    assert ("A100-40GB", "on_demand") not in got  # no metric in that region: no row
    assert fake.requests[0][0] == "GET" and fake.requests[0][1].startswith(f"{BASE}/us-central1")


def test_all_regions_are_listed_page_by_page() -> None:
    fake = Fake({("GET", BASE): [
        (200, {"kind": "compute#regionList", "id": "x", "items": [region("us-east4", NVIDIA_H100_GPUS=8.0)],
               "nextPageToken": "tok2", "selfLink": "x"}),
        (200, {"kind": "compute#regionList", "id": "x", "items": [region("europe-west4", NVIDIA_A100_GPUS=4.0,
                                                                         NVIDIA_A100_80GB_GPUS=16.0)],
               "selfLink": "x"}),
    ]})
    with serve(fake):
        result = gcp.fetch(PROJECT, None, client(fake.url), NO_WAIT)
    got = {(r.region, r.gpu, r.market.value): r.max_gpus for r in result.rows}
    # https://cloud.google.com/compute/resource-usage#gpu_quota: NVIDIA_A100_GPUS counts A100 40GB and
    # NVIDIA_A100_80GB_GPUS counts A100 80GB; each lands on its own product, never summed.
    assert got == {("us-east4", "H100", "on_demand"): 8, ("europe-west4", "A100-40GB", "on_demand"): 4,
                   ("europe-west4", "A100-80GB", "on_demand"): 16}
    assert "pageToken=tok2" in fake.requests[1][1]
    assert not result.warnings


def test_throttled_requests_back_off_and_a_failing_region_is_a_warning() -> None:
    waits: list[float] = []
    fake = Fake({("GET", f"{BASE}/us-east5"): [(429, {"error": {"code": 429, "message": "Rate Limit Exceeded",
                                                                 "errors": [{"reason": "rateLimitExceeded"}]}}),
                                                (503, {"error": {"code": 503, "message": "backend error"}}),
                                                (200, region("us-east5", NVIDIA_B200_GPUS=64.0))],
                 ("GET", f"{BASE}/asia-east1"): [(403, {"error": {"code": 403, "message": "Compute Engine API has "
                                                                   "not been used in project acme-train"}})]})
    with serve(fake):
        result = gcp.fetch(PROJECT, ["us-east5", "asia-east1"], client(fake.url),
                           Backoff(sleep=waits.append, jitter=lambda: 1.0, base_s=0.25))
    assert waits == [0.25, 0.5]
    assert [(r.region, r.gpu, r.max_gpus) for r in result.rows] == [("us-east5", "B200", 64)]
    (warning,) = result.warnings
    assert warning.startswith("GCP asia-east1: quotas not fetched (Forbidden")


def test_a_failed_page_keeps_the_regions_already_read() -> None:
    fake = Fake({("GET", BASE): [
        (200, {"kind": "compute#regionList", "id": "x", "items": [region("us-east4", NVIDIA_H100_GPUS=8.0)],
               "nextPageToken": "tok2", "selfLink": "x"}),
        (400, {"error": {"code": 400, "message": "Invalid page token"}}),
    ]})
    with serve(fake):
        result = gcp.fetch(PROJECT, None, client(fake.url), NO_WAIT)
    assert [(r.region, r.gpu) for r in result.rows] == [("us-east4", "H100")]
    assert "listing regions failed after 1 row(s)" in result.warnings[0]
