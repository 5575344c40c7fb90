"""Flags on the ledger: a pool that references capacity which has ended, or ends within ``warn_days``, named with its
end date; and active capacity no pool references, billed while idle. Entries whose end or state is unknown
(offline, no live state) are not judged: the flags need `capacity ledger --live` or a ledger recorded with it."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from capacity.ledger.model import Entry, Kind

WARN_DAYS = 30


class Flag(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    rule: str  # expired | ending | idle_billed
    cloud: str
    id: str
    end: dt.datetime | None
    pools: list[str]  # stack/cluster/pool that reference it
    message: str


def check(entries: Sequence[Entry], now: dt.datetime, warn_days: int = WARN_DAYS) -> list[Flag]:
    flags = []
    for e in entries:
        pools = [f"{r.stack}/{r.cluster}/{r.pool}" for r in e.references]
        if e.kind is Kind.PLANNED:
            continue
        if pools and e.end is not None:
            when = e.end.date().isoformat()
            if e.end <= now:
                flags.append(Flag(rule="expired", cloud=e.cloud, id=e.id, end=e.end, pools=pools,
                                  message=f"{', '.join(pools)} reference {e.kind.value} {e.id}, which ended on {when}: "
                                          "its nodes cannot start on it. Point the pool at current capacity or "
                                          "change its capacity type."))
            elif e.end <= now + dt.timedelta(days=warn_days):
                days = (e.end - now).days
                flags.append(Flag(rule="ending", cloud=e.cloud, id=e.id, end=e.end, pools=pools,
                                  message=f"{', '.join(pools)} reference {e.kind.value} {e.id}, which ends on {when} "
                                          f"(in {days} day(s), within {warn_days}): renew or replace it before then."))
        if not pools and e.active:
            flags.append(Flag(rule="idle_billed", cloud=e.cloud, id=e.id, end=e.end, pools=[],
                              message=f"{e.kind.value} {e.id} ({e.gpus} GPUs in {e.zone or e.region}) is active and "
                                      "billed, and no pool of the stacks references it: it is paid for while idle."))
    return flags
