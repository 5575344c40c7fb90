"""The Azure quota fetcher: the real azure-mgmt-compute client (usage.list) with a fake credential, against
a loopback HTTPS fake of the Microsoft.Compute usages API (JSON shape of ListUsagesResult, nextLink paging).
HTTPS because azure-core sends bearer tokens over TLS only; the certificate is made for the test."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from azure.core.credentials import AccessToken
from azure.mgmt.compute import ComputeManagementClient
from loopback import Fake, self_signed, serve

from capacity.quotas import Backoff, azure

SUB = "00000000-0000-0000-0000-000000000001"
PATH = f"/subscriptions/{SUB}/providers/Microsoft.Compute/locations/{{}}/usages"
NO_WAIT = Backoff(sleep=lambda _s: None)


class FakeCredential:
    """A fake token credential: hands out a fixed token and counts the asks."""

    def __init__(self) -> None:
        self.asked = 0

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        self.asked += 1
        return AccessToken("fake-token", int(time.time()) + 3600)


def usage(name: str, limit: float, localized: str | None = None) -> dict[str, Any]:
    return {"unit": "Count", "currentValue": 0, "limit": limit,
            "name": {"value": name, "localizedValue": localized or f"{name} vCPUs"}}


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return self_signed(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def fake(tls: tuple[Path, Path]) -> Iterator[Fake]:
    with serve(Fake(), tls) as server:
        yield server


def client(fake: Fake, tls: tuple[Path, Path]) -> ComputeManagementClient:
    return ComputeManagementClient(FakeCredential(), SUB, base_url=fake.url, connection_verify=str(tls[0]),
                                   retry_total=0)


def test_family_vcpus_and_low_priority_cores_become_gpus_across_pages(fake: Fake, tls: tuple[Path, Path]) -> None:
    path = PATH.format("eastus")
    fake.routes[("GET", path)] = [
        (200, {"value": [usage("cores", 350), usage("standardNDSH100v5Family", 192)],
               "nextLink": f"{fake.url}{path}?api-version=2024-11-01&$skiptoken=2"}),
        (200, {"value": [usage("standardNDAMSv4_A100Family", 96), usage("lowPriorityCores", 480),
                         usage("StandardNCadsH100v5Family", 80)]}),
    ]
    c = client(fake, tls)
    result = azure.fetch(SUB, ["eastus"], c, NO_WAIT)
    got = {(r.gpu, r.market.value): r.max_gpus for r in result.rows}
    # Each VM family is one product (https://learn.microsoft.com/en-us/azure/virtual-machines/sizes/gpu-accelerated/
    # ndh100v5-series: 8 x H100 80 GB; .../ncadsh100v5-series: H100 NVL 94 GB; .../ndma100v4-series: A100 80 GB).
    # standardNDSH100v5Family: 192 vCPUs / 96 per ND96isr_H100_v5 x 8 = 16 H100 (SXM)
    assert got[("H100", "on_demand")] == 16
    # StandardNCadsH100v5Family: 80 vCPUs / 80 per NC80adis_H100_v5 x 2 = 2 H100 NVL, never added to H100
    assert got[("H100-NVL", "on_demand")] == 2
    # standardNDAMSv4_A100Family is the 80 GB A100 family: 96 / 96 x 8; no 40 GB (NDASv4) family, so no row
    assert got[("A100-80GB", "on_demand")] == 8
    assert ("A100-40GB", "on_demand") not in got
    assert got[("H100", "spot")] == 40  # 480 low-priority vCPUs / 96 x 8
    assert got[("H100-NVL", "spot")] == 12  # the same shared 480 / 80 per NC80adis_H100_v5 x 2
    assert "$skiptoken=2" in fake.requests[1][1]
    assert fake.requests[0][2].get("Authorization") == "Bearer fake-token"
    assert any("lowPriorityCores" in w for w in result.warnings)


def test_throttling_retries_then_succeeds_and_a_bad_location_is_a_warning(fake: Fake,
                                                                          tls: tuple[Path, Path]) -> None:
    fake.routes[("GET", PATH.format("westus3"))] = [
        (429, {"error": {"code": "TooManyRequests", "message": "slow down"}}),
        (200, {"value": [usage("standardNDISRH200V5Family", 288)]}),
    ]
    fake.routes[("GET", PATH.format("nowhere"))] = [
        (404, {"error": {"code": "NoRegisteredProviderFound", "message": "No registered resource provider"}})]
    waits: list[float] = []
    result = azure.fetch(SUB, ["westus3", "nowhere"], client(fake, tls),
                         Backoff(sleep=waits.append, jitter=lambda: 1.0, base_s=0.5))
    assert waits == [0.5]
    rows = [(r.region, r.gpu, r.market.value, r.max_gpus) for r in result.rows]
    assert rows == [("westus3", "H200", "on_demand", 24)]
    assert any(w.startswith("Azure nowhere: quotas not fetched") for w in result.warnings)
