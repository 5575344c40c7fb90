"""One ledger entry: a capacity commitment (a reservation, capacity block, committed use discount, capacity
reservation group, or a purchase the plan makes), what it holds, when it runs, what it costs, who uses it.

Unknown is never zero: a field the source cannot say (an end date offline, a price no table lists) is None.
"""

from __future__ import annotations

import datetime as dt
import json
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from capacity.csvio import InputError, RowProblem


class Kind(StrEnum):
    CAPACITY_BLOCK = "capacity_block"  # AWS EC2 Capacity Block for ML
    CAPACITY_RESERVATION = "capacity_reservation"  # AWS On-Demand Capacity Reservation
    RESERVATION = "reservation"  # GCP reservation
    COMMITMENT = "commitment"  # GCP committed use discount
    CAPACITY_RESERVATION_GROUP = "capacity_reservation_group"  # Azure
    PLANNED = "planned"  # a purchase the plan makes (commitments.csv)


class Reference(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    stack: str  # "" where it is not known (a policy pack judges one stack's graph)
    cluster: str
    pool: str

    @property
    def name(self) -> str:
        return "/".join(x for x in (self.stack, self.cluster, self.pool) if x)


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
        return key(self.cloud, self.id)


def key(cloud: str, ident: str) -> tuple[str, str]:
    """How a commitment is matched across sources: by cloud and id, case-insensitively (ARM ids are); a GCP
    reservation by its name, however a pool spells it (``projects/P/reservations/NAME``, a zone, a block)."""
    ident = ident.lower()
    if cloud == "gcp" and "reservations/" in ident:
        ident = ident.rsplit("reservations/", 1)[1].split("/", 1)[0]
    return (cloud, ident)


def read(path: Path) -> list[Entry]:
    """The entries of a recorded `capacity ledger --format json` document; InputError naming the file, the entry
    and the field when it is not one."""
    try:
        document = json.loads(path.read_text())
        rows = document["entries"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise InputError([RowProblem(str(path), None, None, None, f"is not a capacity ledger document ({err}).",
                                     "Record one with `gpufleet capacity ledger --live --format json > FILE`.")])\
            from None
    out, problems = [], []
    for i, row in enumerate(rows if isinstance(rows, list) else [rows]):
        try:
            out.append(Entry.model_validate(row))
        except ValidationError as err:
            first = err.errors()[0]
            problems.append(RowProblem(str(path), None, f"entries[{i}].{'.'.join(map(str, first['loc']))}",
                                       None, f"{first['msg']}.", "Record the ledger again with `gpufleet capacity "
                                       "ledger --live --format json` (docs/ledger.md lists its fields)."))
    if problems:
        raise InputError(problems)
    return out
