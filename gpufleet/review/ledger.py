"""Reserved capacity in a pull request: the head graph's pools against a recorded capacity ledger (`gpufleet pr
--ledger FILE`), judged by capacity.ledger.checks.judge as the policy pack judges one stack. Every stack of the
change is judged at once (a reservation two stacks stop using is idle), and each flag goes to the stacks whose pools
it names; an idle-billed one to the first stack in its cloud and region. gpufleet.review.gate says which block.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from capacity.ledger.checks import Flag, PoolUse, judge
from capacity.ledger.model import Entry, key
from gpufleet.review import cost
from gpufleet.review.diff import StackDiff
from policies.props import LAUNCH_TEMPLATE, NODE_POOLS, POOL_LABEL, reserved_id

PARTIAL = ("reserved capacity not judged: the real preview lists only changed resources (no --show-sames), and the "
           "pools it leaves out would read as drawing on nothing")


def pool_uses(d: StackDiff) -> list[PoolUse]:
    """Every node pool of the head graph and what it draws on (a pool whose sizing is masked still names it)."""
    by_key = {r.key: r for r in d.head}
    providers = cost.aws_providers(d.head)
    out = []
    for r in d.head:
        if r.type not in NODE_POOLS:
            continue
        pool, _ = cost.read_pool(r.type, r.inputs)
        if pool is None:
            continue
        templates = [by_key[k].inputs for k in r.dependencies if k in by_key and by_key[k].type == LAUNCH_TEMPLATE]
        out.append(PoolUse(stack=d.stack, cloud=pool.cloud.value, region=cost.pool_region_in(r, by_key, providers),
                           cluster=pool.cluster, pool=str(pool.labels.get(POOL_LABEL, r.name)),
                           capacity_id=reserved_id(r.type, r.inputs, templates)))
    return out


def flags(ledger: Sequence[Entry], diffs: Sequence[StackDiff], now: dt.datetime,
          warn_days: int) -> dict[str, list[Flag]]:
    """stack -> its flags, for the stacks that previewed in full."""
    judged = [d for d in diffs if not d.failed and not d.partial]
    uses = {d.stack: pool_uses(d) for d in judged}
    out: dict[str, list[Flag]] = {d.stack: [] for d in judged}
    for flag in judge(ledger, [u for found in uses.values() for u in found], now, warn_days):
        named = [s for s in out if any(p.startswith(f"{s}/") for p in flag.pools)]
        for stack in named or [_home(flag, ledger, uses)]:
            out[stack].append(flag)
    return out


def _home(flag: Flag, ledger: Sequence[Entry], uses: dict[str, list[PoolUse]]) -> str:
    """The stack an idle-billed flag goes to: the first with a pool in its cloud and region (for a cloud the ledger
    has no live state for, in its cloud)."""
    region = next((e.region for e in ledger if e.key == key(flag.cloud, flag.id)), None) if flag.id else None
    return next(s for s, found in uses.items() for u in found
                if u.cloud == flag.cloud and (not flag.id or u.region == region))
