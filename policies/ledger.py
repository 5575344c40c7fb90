"""Reserved capacity against the capacity ledger: a pool that draws on a reservation or capacity block that has
ended cannot start its nodes (mandatory); one ending within ``warn_days``, and active capacity in the stack's
clouds and regions that no pool draws on, billed while idle, are advice. The judgement is
capacity.ledger.checks.judge, the one the pull-request comment makes (docs/pr-comment.md).

The pack has no credentials: it reads a ledger recorded where they are (``gpufleet capacity ledger --live --format
json > ledger.json``), named in ``ledger_json``. Both policies are off until configured with one. Once on, what
they cannot decide is a violation, never a pass: no ledger configured or readable, a pool's capacity the ledger
does not list or knows no end or state of, a cloud of the stack it has no live state for.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator

from capacity.csvio import InputError
from capacity.ledger import model
from capacity.ledger.checks import BLOCKING, WARN_DAYS, PoolUse, judge
from policies import prices
from policies.cost import stack_pool_region
from policies.props import LAUNCH_TEMPLATE, NODE_POOLS, POOL_LABEL, node_pool, reserved_id
from policies.rule import Config, EnforcementLevel, Node, Stack, stack_policy

CURRENT, ADVICE = "capacity-not-expired", "capacity-ending-or-idle"
LEDGER = {"ledger_json": {"type": ["string", "null"], "default": None,
                          "description": "a recorded `gpufleet capacity ledger --live --format json` (absolute, or "
                                         "relative to the project root); null: not configured"},
          "as_of": {"type": ["string", "null"], "default": None,
                    "description": "the date (YYYY-MM-DD, UTC) or ISO time to judge at; null: now"}}


def pools(stack: Stack) -> Iterator[tuple[Node, PoolUse]]:
    """Every node pool of the stack and what it draws on (its stack's name is not the pack's to know)."""
    for r in stack.of_type(*NODE_POOLS):
        pool = node_pool(r.type, r.props)
        if pool is None:
            continue
        templates = [t.props for t in stack.depends_on(r, LAUNCH_TEMPLATE)]
        yield r, PoolUse(stack="", cloud=pool.cloud.value, region=stack_pool_region(stack, r), cluster=pool.cluster,
                         pool=str(pool.labels.get(POOL_LABEL, r.name)),
                         capacity_id=reserved_id(r.type, r.props, templates))


def _as_of(config: Config) -> dt.datetime:
    given = config.get("as_of")
    if not given:
        return dt.datetime.now(dt.UTC)
    when = dt.datetime.fromisoformat(given)
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)


def _flags(policy: str, stack: Stack, config: Config) -> Iterable[tuple[str, Node | None]]:
    """Every flag of the stack, each on the first of its pools in the graph (the stack when none is)."""
    path = prices.project_path(config.get("ledger_json"))
    if path is None:
        yield f"cannot check reserved capacity: no ledger is configured. Record one where the cloud credentials are " \
              f"(gpufleet capacity ledger --live --format json > ledger.json) and set {policy}.ledger_json, or " \
              f"disable {policy}", None
        return
    try:
        now, entries = _as_of(config), model.read(path)
    except ValueError as err:
        yield f"{policy}.as_of {config.get('as_of')!r} is not a date: {err}. Write YYYY-MM-DD or an ISO time", None
        return
    except InputError as err:
        yield f"{policy}.ledger_json: {' '.join(str(err).split())}", None
        return
    found = list(pools(stack))
    nodes = {use.name: node for node, use in found}
    for flag in judge(entries, [use for _, use in found], now, int(config.get("warn_days") or WARN_DAYS)):
        if (flag.rule in BLOCKING) is (policy == CURRENT):
            yield flag.message, next((nodes[p] for p in flag.pools if p in nodes), None)


def current(stack: Stack, config: Config) -> Iterable[tuple[str, Node | None]]:
    return _flags(CURRENT, stack, config)


def advice(stack: Stack, config: Config) -> Iterable[tuple[str, Node | None]]:
    return _flags(ADVICE, stack, config)


OFF = EnforcementLevel.DISABLED  # needs a ledger recorded with credentials: turned on with one (docs/policies.md)
POLICIES = [
    stack_policy(CURRENT, "A pool may not draw on a reservation or capacity block that has ended: its nodes cannot "
                 "start. Judged against a recorded capacity ledger (ledger_json); off until configured, mandatory "
                 "is meant. A pool whose capacity the ledger cannot judge is a violation.", OFF, current,
                 config=LEDGER),
    stack_policy(ADVICE, "Reserved capacity a pool draws on that ends within warn_days, and active capacity no pool "
                 "draws on (billed while idle). Judged against a recorded capacity ledger (ledger_json); off until "
                 "configured, advisory is meant.", OFF, advice,
                 config={**LEDGER, "warn_days": {"type": "integer", "minimum": 0, "default": WARN_DAYS,
                                                 "description": "days before its end that a reservation a pool "
                                                               "draws on is flagged"}}),
]
