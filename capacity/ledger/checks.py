"""Flags on the ledger: a pool that references capacity which has ended, or ends within ``warn_days``, named with its
end date; and active capacity no pool references, billed while idle. Entries whose end or state is unknown
(offline, no live state) are not judged: the flags need `capacity ledger --live` or a ledger recorded with it.

``judge`` is what the policy pack and the pull-request comment ask: the pools of a change, as its graph draws them,
against a recorded ledger. There what cannot be judged is a flag too (``undecided``, ``idle_undecided``): a check
that cannot decide says so, it never passes.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from capacity.ledger.model import Entry, Kind, Reference, key

WARN_DAYS = 30
BLOCKING = ("expired", "undecided")  # a pool on them cannot be shown to start; the rest are advice


class Flag(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    rule: str  # expired | ending | idle_billed; from judge also undecided | idle_undecided
    cloud: str
    id: str
    end: dt.datetime | None
    pools: list[str]  # stack/cluster/pool that reference it
    message: str


def check(entries: Sequence[Entry], now: dt.datetime, warn_days: int = WARN_DAYS) -> list[Flag]:
    flags = []
    for e in entries:
        pools = [r.name for r in e.references]
        if e.kind is Kind.PLANNED:
            continue
        if pools and e.end is not None:
            when = e.end.date().isoformat()
            if e.end <= now:
                flags.append(Flag(rule="expired", cloud=e.cloud, id=e.id, end=e.end, pools=pools,
                                  message=f"{_draw(pools)} on {e.kind.value} {e.id}, which ended on {when}: its "
                                          "nodes cannot start on it. Point the pool at current capacity or change "
                                          "its capacity type."))
            elif e.end <= now + dt.timedelta(days=warn_days):
                days = (e.end - now).days
                flags.append(Flag(rule="ending", cloud=e.cloud, id=e.id, end=e.end, pools=pools,
                                  message=f"{_draw(pools)} on {e.kind.value} {e.id}, which ends on {when} (in "
                                          f"{days} day(s), within {warn_days}): renew or replace it before then."))
        if not pools and e.active:
            flags.append(Flag(rule="idle_billed", cloud=e.cloud, id=e.id, end=e.end, pools=[],
                              message=f"{e.kind.value} {e.id} ({e.gpus} GPUs in {e.zone or e.region}) is active and "
                                      "billed, and no pool of the stacks references it: it is paid for while idle."))
    return flags


def _draw(pools: Sequence[str]) -> str:
    """"pool a/b/c draws", "pools a/b/c, d/e/f draw"."""
    return f"pool {pools[0]} draws" if len(pools) == 1 else f"pools {', '.join(pools)} draw"


class PoolUse(BaseModel):
    """A node pool of a graph, and the reservation or capacity block it draws on (``capacity_id``, None: none)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    stack: str  # "" when not known
    cloud: str
    region: str | None
    cluster: str
    pool: str
    capacity_id: str | None = None

    @property
    def reference(self) -> Reference:
        return Reference(stack=self.stack, cluster=self.cluster, pool=self.pool)

    @property
    def name(self) -> str:
        return self.reference.name


def judge(ledger: Sequence[Entry], pools: Sequence[PoolUse], now: dt.datetime,
          warn_days: int = WARN_DAYS) -> list[Flag]:
    """The flags of ``pools`` (every pool of the graphs judged) against a recorded ledger: what those graphs' clusters
    referenced when it was recorded gives way to what the graphs draw on now (a cluster is its cloud, region and
    name: unique within an account, whatever the stack is called). Expired and ending capacity the pools draw on;
    active capacity in their clouds and regions that no pool references; and what cannot be judged: capacity the
    ledger does not list or knows no end or state of, a cloud it has no live state for."""
    clusters = {(p.cloud, p.region, p.cluster) for p in pools}
    entries = {e.key: e.model_copy(update={"references": [r for r in e.references if (e.cloud, e.region, r.cluster)
                                                           not in clusters]}, deep=True) for e in ledger}
    flags, drawn, missing = [], {}, defaultdict(list)
    for p in (p for p in pools if p.capacity_id):
        found = entries.get(key(p.cloud, p.capacity_id))  # type: ignore[arg-type]
        if found is None:
            missing[(p.cloud, p.capacity_id)].append(p.name)
            continue
        found.references.append(p.reference)
        drawn[found.key] = found
    flags += [_undecided(cloud, ident, names, "the ledger does not list it (recorded before it was bought, or "
                         "without the stack that names it)") for (cloud, ident), names in missing.items()]
    for e in drawn.values():
        if e.end is None and not e.active and not (e.start and e.start > now):
            flags.append(_undecided(e.cloud, e.id, [r.name for r in e.references],
                                    f"the ledger gives no end and its state is {e.state or 'unknown'} "
                                    f"({e.source}: record it with --live)"))
    ours = {p.name for p in pools}
    regions = {(p.cloud, p.region) for p in pools}
    flags += [f for f in check(list(entries.values()), now, warn_days)
              if set(f.pools) & ours or (f.rule == "idle_billed" and _where(entries, f) in regions)]
    for cloud in sorted({c for c, _ in regions} - {e.cloud for e in ledger if e.active is not None}):
        flags.append(Flag(rule="idle_undecided", cloud=cloud, id="", end=None, pools=[],
                          message=f"cannot tell which {cloud} capacity is billed while idle: the ledger has no live "
                                  f"state for {cloud} (record it with `gpufleet capacity ledger --live --format json` "
                                  "where that cloud's credentials are)"))
    return flags


def _where(entries: dict[tuple[str, str], Entry], flag: Flag) -> tuple[str, str | None]:
    e = entries[key(flag.cloud, flag.id)]
    return (e.cloud, e.region)


def _undecided(cloud: str, ident: str, pools: list[str], why: str) -> Flag:
    return Flag(rule="undecided", cloud=cloud, id=ident, end=None, pools=pools,
                message=f"{_draw(pools)} on {ident}, and {why}: cannot tell whether its nodes can start. "
                        "Record the ledger with `gpufleet capacity ledger --live --format json` and check again.")
