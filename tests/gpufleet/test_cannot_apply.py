"""What a change cannot apply is said before the diff, and blocks: a protected resource or a GCP KMS key ring / key
replaced, and a pool that changes its machine type while keeping its reservation or capacity block."""

from __future__ import annotations

from typing import Any

from gpufleet.engine.capture import Resource, run_program
from gpufleet.review import applicable, comment, cost, gate, report
from gpufleet.review.diff import diff_resources
from tests.conftest import example_fleet

RING, KEY = "gcp:kms/keyRing:KeyRing", "gcp:kms/cryptoKey:CryptoKey"


def kms(location: str, protect: bool) -> list[Resource]:
    ring = Resource(RING, "train-keys-ring", None, True, {"location": location, "name": "train-keys-ring"}, [])
    key = Resource(KEY, "train-keys-data", None, True, {"keyRing": f"projects/p/locations/{location}/keyRings/r",
                                                         "purpose": "ENCRYPT_DECRYPT"}, [ring.key], protect=protect)
    return [ring, key]


def test_the_capture_records_the_protect_option_of_the_gcp_kms_keys() -> None:
    graph = run_program("gcp-train", {"gpufleet:fleet": example_fleet("gcp-train")})
    keys = [r for r in graph.resources if r.type == KEY]
    assert keys and all(r.protect for r in keys)  # components/gcp/kms.py: ResourceOptions(protect=True)
    assert not any(r.protect for r in graph.resources if r.type == RING)


def test_moving_the_kms_key_ring_cannot_apply_and_leads_the_comment() -> None:
    diff = diff_resources("gcp-train", kms("us-central1", True), kms("europe-west4", True))
    reasons = applicable.cannot_apply(diff)
    assert any(r.startswith("train-keys-data (gcp:kms/cryptoKey:CryptoKey) is protected") for r in reasons)
    assert any(r.startswith("train-keys-ring (gcp:kms/keyRing:KeyRing): this change would") and
               "GCP never deletes a KMS key ring" in r for r in reasons)
    r = report.build(diff, cost.Prices({}))
    assert gate.exit_code(gate.stops([r])) == gate.BLOCKED
    first = comment.render([r]).splitlines()[1]
    assert first.startswith("## Blocked: stack gcp-train: ") and "(and 1 more below)" in first


def test_an_unchanged_protected_resource_blocks_nothing() -> None:
    assert applicable.cannot_apply(diff_resources("s", kms("us-central1", True), kms("us-central1", True))) == []


def _p5en_on_the_same_block(fleet: dict[str, Any]) -> dict[str, Any]:
    pool = fleet["clusters"][0]["node_pools"][0]  # h100 on capacity block cr-0a1b2c3d4e5f60718
    pool.pop("accelerator"), pool.pop("gpus")
    pool["machine_type"] = "p5en.48xlarge"
    fleet["clusters"][0]["addons"]["kueue_teams"][0]["gpus"] = {"H200": 128}
    return fleet


def test_a_machine_type_change_that_keeps_its_capacity_block_cannot_apply() -> None:
    base = run_program("aws-train", {"gpufleet:fleet": example_fleet("aws-train")})
    head = run_program("aws-train", {"gpufleet:fleet": _p5en_on_the_same_block(example_fleet("aws-train"))})
    reasons = applicable.mismatched_capacity(diff_resources("aws-train", base.resources, head.resources))
    assert reasons == ["train-h100-ng changes its machine type p5.48xlarge -> p5en.48xlarge but keeps the reservation "
                       "or capacity block cr-0a1b2c3d4e5f60718, which holds p5.48xlarge: buy capacity for "
                       "p5en.48xlarge and set its id (capacity.id), or keep p5.48xlarge"]
    # the same change with a new block id applies
    moved = _p5en_on_the_same_block(example_fleet("aws-train"))
    moved["clusters"][0]["node_pools"][0]["capacity"]["id"] = "cr-0fedcba9876543210"
    head = run_program("aws-train", {"gpufleet:fleet": moved})
    assert applicable.mismatched_capacity(diff_resources("aws-train", base.resources, head.resources)) == []
