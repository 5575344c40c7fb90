"""`capacity ledger`: offline it lists every reservation / capacity block id the example stacks reference (held to
the stack files read as plain YAML, an independent reading); live, the real clients read the clouds' answers: boto3
EC2 through botocore's Stubber (moto 5 does not implement DescribeCapacityReservations; the Stubber checks requests
and answers against EC2's service model), google-cloud-compute and azure-mgmt-compute against loopback fakes whose
JSON is written by the SDKs' own types."""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from azure.core.credentials import AccessToken
from azure.mgmt.compute import ComputeManagementClient
from azure.mgmt.compute import models as az
from botocore.stub import Stubber
from google.auth.credentials import AnonymousCredentials
from google.cloud import compute_v1
from loopback import Fake, self_signed, serve
from typer.testing import CliRunner

from capacity.ledger import aws, azure, gcp, merge
from capacity.ledger.cli import live_entries
from capacity.ledger.model import Entry, Kind
from gpufleet.cli import app

STACKS = Path(__file__).resolve().parents[2] / "stacks"
UTC = dt.UTC


def _referenced() -> set[tuple[str, str, str]]:
    found = set()
    for path in STACKS.glob("Pulumi.*.yaml"):
        fleet = yaml.safe_load(path.read_text())["config"]["gpufleet:fleet"]
        for cluster in fleet["clusters"]:
            for pool in cluster.get("node_pools", []):
                ident = (pool.get("capacity") or {}).get("id")
                if ident:
                    found.add((path.name[7:-5], pool["name"], ident))
    return found


def test_offline_lists_every_id_the_example_stacks_reference() -> None:
    result = CliRunner().invoke(app, ["capacity", "ledger", "--json"])
    assert result.exit_code == 0, result.output
    entries = json.loads(result.stdout)["entries"]
    got = {(r["stack"], r["pool"], e["id"]) for e in entries for r in e["references"]}
    assert got == _referenced() and len(got) == 3
    block = next(e for e in entries if e["id"] == "cr-0a1b2c3d4e5f60718")
    assert block["kind"] == "capacity_block" and block["gpus"] == 128 and block["kueue_queues"] == ["train/pretrain"]
    assert block["end"] is None and block["state"] is None  # offline: unknown, not invented


def test_aws_blocks_and_reservations_through_the_ec2_model() -> None:
    client = boto3.client("ec2", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    start, end = dt.datetime(2026, 3, 1, 11, 30, tzinfo=UTC), dt.datetime(2026, 3, 15, 11, 30, tzinfo=UTC)
    with Stubber(client) as stub:
        stub.add_response("describe_capacity_reservations", {"CapacityReservations": [
            {"CapacityReservationId": "cr-0a1b2c3d4e5f60718", "InstanceType": "p5.48xlarge",
             "AvailabilityZone": "us-east-1a", "AvailabilityZoneId": "use1-az6", "TotalInstanceCount": 16,
             "AvailableInstanceCount": 0, "StartDate": start, "EndDate": end, "State": "active",
             "ReservationType": "capacity-block"},
            {"CapacityReservationId": "cr-00000000000000001", "InstanceType": "m5.xlarge",  # not a GPU: left out
             "TotalInstanceCount": 2, "State": "active"}], "NextToken": "page2"}, {})
        stub.add_response("describe_capacity_reservations", {"CapacityReservations": [
            {"CapacityReservationId": "cr-0fedcba9876543210", "InstanceType": "p4d.24xlarge",
             "AvailabilityZoneId": "use1-az4", "TotalInstanceCount": 2, "State": "expired",
             "ReservationType": "default", "StartDate": start, "EndDate": start}]}, {"NextToken": "page2"})
        entries = aws.fetch("us-east-1", client)
    assert [(e.id, e.kind, e.gpus, e.zone, e.active) for e in entries] == [
        ("cr-0a1b2c3d4e5f60718", Kind.CAPACITY_BLOCK, 128, "use1-az6", True),
        ("cr-0fedcba9876543210", Kind.CAPACITY_RESERVATION, 16, "use1-az4", False)]
    assert entries[0].end == end and entries[1].state == "expired"


def _gcp_clients(url: str) -> tuple[Any, Any]:
    options = {"credentials": AnonymousCredentials(), "transport": "rest", "client_options": {"api_endpoint": url}}
    return compute_v1.ReservationsClient(**options), compute_v1.RegionCommitmentsClient(**options)


def test_gcp_reservations_and_commitments() -> None:
    project = "acme-train"
    reservation = compute_v1.Reservation(
        name="a3mega-train", zone=f"https://www.googleapis.com/compute/v1/projects/{project}/zones/us-central1-c",
        status="READY", creation_timestamp="2026-01-05T10:00:00.000-08:00", delete_at_time="2026-07-01T00:00:00Z",
        specific_reservation=compute_v1.AllocationSpecificSKUReservation(
            count=8, in_use_count=6,
            instance_properties=compute_v1.AllocationSpecificSKUAllocationReservedInstanceProperties(
                machine_type="a3-megagpu-8g")))
    commitment = compute_v1.Commitment(
        name="h100-cud", region=f"https://www.googleapis.com/compute/v1/projects/{project}/regions/us-central1",
        status="ACTIVE", plan="TWELVE_MONTH", start_timestamp="2026-01-01T00:00:00.000-08:00",
        end_timestamp="2027-01-01T00:00:00.000-08:00",
        resources=[compute_v1.ResourceCommitment(type_="ACCELERATOR", accelerator_type="nvidia-h100-mega-80gb",
                                                 amount=64), compute_v1.ResourceCommitment(type_="VCPU", amount=100)])
    fake = Fake({
        ("GET", f"/compute/v1/projects/{project}/aggregated/reservations"): [(200, json.loads(
            compute_v1.ReservationAggregatedList.to_json(compute_v1.ReservationAggregatedList(
                items={"zones/us-central1-c": compute_v1.ReservationsScopedList(reservations=[reservation])}))))],
        ("GET", f"/compute/v1/projects/{project}/aggregated/commitments"): [(200, json.loads(
            compute_v1.CommitmentAggregatedList.to_json(compute_v1.CommitmentAggregatedList(
                items={"regions/us-central1": compute_v1.CommitmentsScopedList(commitments=[commitment])}))))]})
    with serve(fake):
        entries = gcp.fetch(project, *_gcp_clients(fake.url))
    got = {e.id: e for e in entries}
    assert got["a3mega-train"].gpus == 64 and got["a3mega-train"].zone == "us-central1-c"
    assert got["a3mega-train"].end == dt.datetime(2026, 7, 1, tzinfo=UTC) and got["a3mega-train"].active
    assert got["h100-cud"].kind is Kind.COMMITMENT and got["h100-cud"].gpus == 64
    assert got["h100-cud"].end == dt.datetime(2027, 1, 1, 8, tzinfo=UTC)


class FakeCredential:
    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        return AccessToken("fake-token", int(time.time()) + 3600)


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return self_signed(tmp_path_factory.mktemp("tls"))


def test_azure_capacity_reservation_groups(tls: tuple[Path, Path]) -> None:
    sub = "3f2a6b1c-9d4e-4f5a-8b7c-1d2e3f4a5b6c"
    group_id = f"/subscriptions/{sub}/resourceGroups/capacity/providers/Microsoft.Compute/capacityReservationGroups/" \
               "nd-h100-eastus2"
    group = az.CapacityReservationGroup(location="eastus2", zones=["1"])
    group.id, group.name = group_id, "nd-h100-eastus2"
    properties = az.CapacityReservationProperties()
    properties.provisioning_state, properties.time_created = "Succeeded", dt.datetime(2026, 2, 1, tzinfo=UTC)
    member = az.CapacityReservation(location="eastus2", sku=az.Sku(name="Standard_ND96isr_H100_v5", capacity=8),
                                    zones=["1"], properties=properties)
    fake = Fake({
        ("GET", f"/subscriptions/{sub}/providers/Microsoft.Compute/capacityReservationGroups"):
            [(200, {"value": [group.as_dict()]})],
        ("GET", f"{group_id}/capacityReservations"): [(200, {"value": [member.as_dict()]})]})
    with serve(fake, tls):
        client = ComputeManagementClient(FakeCredential(), sub, base_url=fake.url, connection_verify=str(tls[0]),
                                         retry_total=0)
        entries = azure.fetch(sub, client)
    assert [(e.id, e.gpus, e.machine_type, e.active, e.end) for e in entries] == [
        (group_id, 64, "Standard_ND96isr_H100_v5", True, None)]


def test_live_state_merges_into_what_the_stacks_reference() -> None:
    end = dt.datetime(2026, 3, 15, tzinfo=UTC)
    offline = [Entry(cloud="aws", kind=Kind.CAPACITY_BLOCK, id="cr-0a1b2c3d4e5f60718", gpus=128, usd_per_hour=629.28,
                     references=[{"stack": "aws-train", "cluster": "train", "pool": "h100"}])]
    live = [Entry(cloud="aws", kind=Kind.CAPACITY_BLOCK, id="cr-0a1b2c3d4e5f60718", gpus=128, state="active",
                  active=True, start=end - dt.timedelta(days=14), end=end, source="live"),
            Entry(cloud="aws", kind=Kind.CAPACITY_RESERVATION, id="cr-0fedcba9876543210", gpus=16, state="active",
                  active=True, source="live")]
    block, other = merge.merge(offline, live)
    assert block.source == "stacks+live" and block.end == end and block.references[0].pool == "h100"
    assert block.usd_total == pytest.approx(629.28 * 14 * 24)
    assert other.references == [] and other.active


def test_a_cloud_without_credentials_is_a_warning_and_the_rest_is_read() -> None:
    from stacks.config import load_stack_file

    fleets = [(p.name[7:-5], load_stack_file(p)) for p in sorted(STACKS.glob("Pulumi.*-train.yaml"))]

    def refuse(scope: str) -> list:
        raise PermissionError("no credentials")

    entries, warnings = live_entries(fleets, {"aws": lambda region: [Entry(cloud="aws", kind=Kind.CAPACITY_BLOCK,
                                                                           id="cr-1", source="live")],
                                              "gcp": refuse, "azure": refuse})
    assert [e.id for e in entries] == ["cr-1"]
    assert len(warnings) == 2 and all(  # GCP: the stack's project; Azure: the subscription of the group it names
        "live state not read (PermissionError: no credentials)" in w for w in warnings)
