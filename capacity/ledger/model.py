"""One ledger entry: a capacity commitment (a reservation, capacity block, committed use discount, capacity
reservation group, or a purchase the plan makes), what it holds, when it runs, what it costs, who uses it.

Unknown is never zero: a field the source cannot say (an end date offline, a price no table lists) is None.
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum

from pydantic import BaseModel, ConfigDict


class Kind(StrEnum):
    CAPACITY_BLOCK = "capacity_block"  # AWS EC2 Capacity Block for ML
    CAPACITY_RESERVATION = "capacity_reservation"  # AWS On-Demand Capacity Reservation
    RESERVATION = "reservation"  # GCP reservation
    COMMITMENT = "commitment"  # GCP committed use discount
    CAPACITY_RESERVATION_GROUP = "capacity_reservation_group"  # Azure
    PLANNED = "planned"  # a purchase the plan makes (commitments.csv)


class Reference(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    stack: str
    cluster: str
    pool: str


class Entry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cloud: str
    kind: Kind
    id: str
    region: str | None = None
    zone: str | None = None
    machine_type: str | None = None
    gpus: int | None = None  # GPUs it holds (live); offline: the GPUs the referencing pools expect of it
    start: dt.datetime | None = None
    end: dt.datetime | None = None  # None: no end (a reservation held until released), or unknown offline
    usd_per_hour: float | None = None
    usd_total: float | None = None  # over start..end; None when either is unknown or it has no end
    price_source: str | None = None
    references: list[Reference] = []  # the stack pools that name it
    kueue_queues: list[str] = []  # cluster/team: the ClusterQueues with nominal quota in those pools
    state: str | None = None  # the cloud's own word (active, expired, scheduled, ACTIVE, Succeeded...); None offline
    active: bool | None = None  # billing now, as the cloud's state says; None when unknown
    source: str = "stacks"  # stacks | live | plan | stacks+live

    @property
    def key(self) -> tuple[str, str]:
        return (self.cloud, self.id.lower())
