"""AWS: On-Demand Capacity Reservations and Capacity Blocks for ML (EC2 DescribeCapacityReservations, page by page;
a block is a reservation whose ReservationType is capacity-block). Only GPU machine types of the catalogue."""

from __future__ import annotations

from typing import Any

from capacity.ledger.model import Entry, Kind
from components import catalog
from components.catalog import Cloud


def default_client(region: str) -> Any:
    import boto3

    return boto3.client("ec2", region_name=region)


def fetch(region: str, client: Any = None) -> list[Entry]:
    client = client or default_client(region)
    out = []
    for page in client.get_paginator("describe_capacity_reservations").paginate():
        for r in page.get("CapacityReservations", []):
            machine = catalog.by_name(Cloud.AWS, r["InstanceType"])
            if machine is None or not machine.gpus:
                continue
            out.append(Entry(
                cloud="aws", id=r["CapacityReservationId"], region=region,
                kind=Kind.CAPACITY_BLOCK if r.get("ReservationType") == "capacity-block" else Kind.CAPACITY_RESERVATION,
                zone=r.get("AvailabilityZoneId") or r.get("AvailabilityZone"), machine_type=machine.name,
                gpus=r["TotalInstanceCount"] * machine.gpus, start=r.get("StartDate"), end=r.get("EndDate"),
                state=r.get("State"), active=r.get("State") == "active", source="live"))
    return out
