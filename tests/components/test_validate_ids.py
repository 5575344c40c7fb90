"""Identifiers, admins, zones and spot price caps (components/validate_access.py, capabilities): each form at its
boundary, and every problem of a cluster reported at once.

Forms from the cloud docs: AWS account ids are 12 digits
(https://docs.aws.amazon.com/accounts/latest/reference/manage-acct-identifiers.html); capacity reservation and
capacity block ids are `cr-` + 17 hex digits (EC2 API CapacityReservation); EKS access entries take IAM role or
user ARNs; the EKS control plane needs subnets in two Availability Zones
(https://docs.aws.amazon.com/eks/latest/userguide/network-reqs.html).
"""

from __future__ import annotations

from typing import Any

import pytest

from components.errors import SpecError
from components.validate import resolve
from tests.conftest import example_fleet

CLUSTER = "clusters[0]"


def paths(fleet: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as caught:
        resolve(fleet)
    return [p.path for p in caught.value.problems]


def messages(fleet: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as caught:
        resolve(fleet)
    return [p.render() for p in caught.value.problems]


@pytest.mark.parametrize(("account", "ok"), [("123456789012", True), ("12345678901", False),
                                             ("1234567890123", False), ("12345678901a", False)])
def test_aws_account_id_is_twelve_digits(account: str, ok: bool) -> None:
    fleet = {**example_fleet("aws-train"), "account": account}
    if ok:
        assert resolve(fleet).spec.account == account
    else:
        assert paths(fleet) == ["account"]


@pytest.mark.parametrize(("capacity_id", "ok"), [
    ("cr-0a1b2c3d4e5f60718", True),   # cr- + 17 hex
    ("cr-0a1b2c3d4e5f6071", False),   # 16 hex
    ("cr-0a1b2c3d4e5f607189", False),  # 18 hex
    ("cr-0a1b2c3d4e5f6071g", False),  # not hex
    ("0a1b2c3d4e5f60718", False),     # no prefix
])
def test_capacity_block_id_form(capacity_id: str, ok: bool) -> None:
    fleet = example_fleet("aws-train")
    fleet["clusters"][0]["node_pools"][0]["capacity"]["id"] = capacity_id
    if ok:
        resolve(fleet)
    else:
        assert paths(fleet) == [f"{CLUSTER}.node_pools[0].capacity.id"]


def test_reservation_id_form_on_aws() -> None:
    fleet = example_fleet("aws-train")
    fleet["clusters"][0]["node_pools"][1]["capacity"] = {"type": "reservation", "id": "my-reservation"}
    [message] = messages(fleet)
    assert "'my-reservation' is not a AWS reservation id" in message and "cr-0123456789abcdef0" in message


@pytest.mark.parametrize(("admin", "ok"), [
    ("arn:aws:iam::123456789012:role/ml-platform-admin", True),
    ("arn:aws:iam::123456789012:user/alice", True),
    ("arn:aws:iam::123456789012:role/path/to/admin", True),
    ("arn:aws:iam::12345678901:role/admin", False),  # 11-digit account
    ("arn:aws:iam::123456789012:group/admins", False),  # groups cannot be access entries
    ("ml-platform-admin", False),
])
def test_eks_admin_arns(admin: str, ok: bool) -> None:
    fleet = example_fleet("aws-train")
    fleet["clusters"][0]["admins"] = [admin]
    if ok:
        resolve(fleet)
    else:
        assert paths(fleet) == [f"{CLUSTER}.admins[0]"]


def test_an_eks_cluster_without_admins_is_refused_with_the_reason() -> None:
    fleet = example_fleet("aws-train")
    fleet["clusters"][0]["admins"] = []
    [message] = messages(fleet)
    assert message.startswith(f"{CLUSTER}.admins: is empty") and "nobody can reach the Kubernetes API" in message


@pytest.mark.parametrize(("stack", "admin"), [("gcp-train", "not an email"), ("azure-train", "ml-admins")])
def test_admins_on_gcp_and_azure_have_their_forms(stack: str, admin: str) -> None:
    fleet = example_fleet(stack)
    fleet["clusters"][0]["admins"] = [admin]
    assert paths(fleet) == [f"{CLUSTER}.admins[0]"]


def test_gcp_admin_member_kinds_are_accepted() -> None:
    fleet = example_fleet("gcp-train")
    fleet["clusters"][0]["admins"] = ["user:alice@example.com", "ml-admins@example.com", "domain:example.com"]
    resolve(fleet)


def test_an_eks_cluster_needs_two_zones() -> None:
    fleet = example_fleet("aws-train")
    fleet["clusters"][0]["zones"] = fleet["clusters"][0]["zones"][:1]
    [message] = messages(fleet)
    assert message.startswith(f"{CLUSTER}.zones: has 1 zone(s)") and "at least two Availability Zones" in message


def test_one_zone_is_enough_on_gke() -> None:
    fleet = example_fleet("gcp-train")
    fleet["clusters"][0]["zones"] = ["us-central1-c"]
    fleet["clusters"][0]["node_pools"] = fleet["clusters"][0]["node_pools"][:1]
    fleet["clusters"][0]["addons"]["kueue_teams"] = fleet["clusters"][0]["addons"]["kueue_teams"][:1]
    resolve(fleet)


def test_aws_spot_price_cap_is_refused_not_ignored() -> None:
    fleet = example_fleet("dev")
    fleet["clusters"][0]["node_pools"][0]["capacity"] = {"type": "spot", "max_usd_per_hour": 0.5}
    [message] = messages(fleet)
    assert message.startswith(f"{CLUSTER}.node_pools[0].capacity.max_usd_per_hour: AWS spot capacity has no "
                              "price cap") and "RequestSpotInstances" in message


def test_an_unknown_region_does_not_hide_the_clusters_other_problems() -> None:
    fleet = example_fleet("aws-train")
    cluster = fleet["clusters"][0]
    cluster["region"] = "us-east-9"
    cluster["kubernetes_version"] = "1.20"
    cluster["admins"] = ["nobody"]
    cluster["node_pools"][0]["capacity"]["id"] = "cr-123"
    cluster["node_pools"][1]["nodes"] = {"min": 5, "max": 4}
    assert sorted(paths(fleet)) == sorted([
        f"{CLUSTER}.region", f"{CLUSTER}.kubernetes_version", f"{CLUSTER}.admins[0]",
        f"{CLUSTER}.node_pools[0].capacity.id", f"{CLUSTER}.node_pools[1].nodes"])


def test_a_machine_not_offered_in_the_region_does_not_hide_its_capacity_problem() -> None:
    fleet = example_fleet("aws-train")
    pool = fleet["clusters"][0]["node_pools"][0]
    fleet["clusters"][0]["region"] = "us-west-2"
    fleet["clusters"][0]["zones"] = ["usw2-az1", "usw2-az2"]
    pool["zone"] = "usw2-az1"
    pool["machine_type"], pool["accelerator"], pool["gpus"] = "g6.xlarge", None, None  # not a capacity block type
    fleet["clusters"][0]["node_pools"] = [pool]
    fleet["clusters"][0]["addons"]["kueue_teams"] = []
    fleet["clusters"][0]["storage"]["lustre"] = None
    assert f"{CLUSTER}.node_pools[0].capacity.type" in paths(fleet)
