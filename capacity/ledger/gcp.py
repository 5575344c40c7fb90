"""GCP: reservations (ReservationsClient.aggregated_list) and committed use discounts
(RegionCommitmentsClient.aggregated_list) of a project, every zone and region. Reservations of catalogue GPU
machine types; commitments that commit accelerators."""

from __future__ import annotations

import datetime as dt
from typing import Any

from capacity.ledger.model import Entry, Kind
from components import catalog
from components.catalog import Cloud

TIMEOUT_S = 30.0


def default_clients() -> tuple[Any, Any]:
    from google.cloud import compute_v1

    return compute_v1.ReservationsClient(), compute_v1.RegionCommitmentsClient()


def _when(text: str) -> dt.datetime | None:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None


def _last(url: str) -> str:
    return url.rstrip("/").rsplit("/", 1)[-1]


def fetch(project: str, reservations: Any = None, commitments: Any = None) -> list[Entry]:
    if reservations is None or commitments is None:
        reservations, commitments = default_clients()
    out = []
    for _scope, scoped in reservations.aggregated_list(project=project, timeout=TIMEOUT_S):
        for r in scoped.reservations:
            machine = catalog.by_name(Cloud.GCP, r.specific_reservation.instance_properties.machine_type)
            if machine is None or not machine.gpus:
                continue
            zone = _last(r.zone)
            out.append(Entry(cloud="gcp", kind=Kind.RESERVATION, id=r.name, region=zone.rsplit("-", 1)[0], zone=zone,
                             machine_type=machine.name, gpus=r.specific_reservation.count * machine.gpus,
                             start=_when(r.creation_timestamp), end=_when(r.delete_at_time), state=r.status,
                             active=r.status == "READY", source="live"))
    for _scope, scoped in commitments.aggregated_list(project=project, timeout=TIMEOUT_S):
        for c in scoped.commitments:
            gpus = sum(x.amount for x in c.resources if x.type_ == "ACCELERATOR")
            if not gpus:
                continue
            out.append(Entry(cloud="gcp", kind=Kind.COMMITMENT, id=c.name, region=_last(c.region), gpus=gpus,
                             start=_when(c.start_timestamp), end=_when(c.end_timestamp), state=c.status,
                             active=c.status == "ACTIVE", source="live"))
    return out
