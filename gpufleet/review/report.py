"""A pull-request report: per stack, the resource diff, GPU disruption risk, monthly cost before/after and the
policy verdicts on the head graph (new ones first). Rendered as JSON (gpufleet.diff/v1, docs/pr-comment.md),
Markdown (gpufleet/review/comment.py) or rich text for the terminal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console

from capacity import staleness
from capacity.ledger.checks import Flag
from capacity.prices import coverage
from capacity.terminal import Column, print_table
from gpufleet.review import applicable, cost, gate
from gpufleet.review.diff import StackDiff
from gpufleet.review.risk import Risk, risks

SCHEMA = "gpufleet.diff/v1"


@dataclass(frozen=True)
class Finding:
    """A policy verdict, as the report needs it (gpufleet.checks.analyzer.Verdict has these fields)."""

    policy: str
    level: str
    message: str
    resource: str | None


@dataclass
class StackReport:
    diff: StackDiff
    risks: list[Risk]
    before: list[cost.Cost]  # pools and Lustre file systems (cost.costs)
    after: list[cost.Cost]
    verdicts: list[Finding] = field(default_factory=list)
    new_verdicts: list[Finding] = field(default_factory=list)
    policy_note: str = ""  # why verdicts are missing, when they are
    prices_as_of: str = ""  # the oldest price date of the snapshot the costs come from
    cannot_apply: list[str] = field(default_factory=list)  # what the engine or the cloud would refuse, and the way out
    prices_leave_out: list[str] = field(default_factory=list)  # options of the stack's clouds the snapshot never prices
    capacity: list[Flag] = field(default_factory=list)  # reserved capacity against a recorded ledger (review.ledger)
    capacity_note: str = ""  # why it was not judged, when it was asked for and was not

    @property
    def stack(self) -> str:
        return self.diff.stack

    @property
    def delta_usd(self) -> float:
        return cost.total(self.after) - cost.total(self.before)


def findings(verdicts: Sequence[Any]) -> list[Finding]:
    return [Finding(v.policy, str(v.level), v.message, v.resource) for v in verdicts]


def build(diff: StackDiff, prices: cost.Prices, head_verdicts: Sequence[Any] | None = None,
          base_verdicts: Sequence[Any] | None = None, policy_note: str = "", capacity: Sequence[Flag] = (),
          capacity_note: str = "") -> StackReport:
    """``*_verdicts``: gpufleet.checks.analyzer.Verdict-like objects; None when the policy pack did not run.
    ``capacity``: the stack's flags against a recorded ledger (gpufleet.review.ledger)."""
    head = findings(head_verdicts or [])
    old = {(f.policy, f.resource, f.message) for f in findings(base_verdicts or [])}
    new = [f for f in head if (f.policy, f.resource, f.message) not in old] if base_verdicts is not None else []
    ordered = new + [f for f in head if f not in new]
    before = cost.costs(diff.base, prices)
    after = cost.costs(diff.head, prices, before)
    clouds = {c.cloud for c in before + after}
    return StackReport(diff, risks(diff), before, after, ordered, new, policy_note, prices.as_of,
                       cannot_apply=applicable.cannot_apply(diff),
                       prices_leave_out=coverage.left_out(prices.offers, clouds) if prices.offers else [],
                       capacity=list(capacity), capacity_note=capacity_note)


def _pool_json(c: cost.PoolCost) -> dict[str, Any]:
    return {"resource": c.key, "cloud": c.cloud, "region": c.region, "machine_type": c.machine_type,
            "nodes": c.nodes, "gpus": c.gpus, "gpu": c.gpu, "option": c.option, "option_label": c.label,
            "paid_nodes": c.nodes if c.paid_nodes is None else c.paid_nodes,
            "usd_per_node_hour": c.usd_per_node_hour, "monthly_usd": round(c.monthly_usd, 2), "source": c.source}


def _cost_json(r: StackReport) -> dict[str, Any]:
    before, after = cost.by_cloud(r.before), cost.by_cloud(r.after)
    return {"hours_per_month": cost.HOURS_PER_MONTH, "before_usd": round(cost.total(r.before), 2),
            "after_usd": round(cost.total(r.after), 2), "delta_usd": round(r.delta_usd, 2),
            "by_cloud": {c: {"before_usd": round(before.get(c, 0.0), 2), "after_usd": round(after.get(c, 0.0), 2)}
                         for c in sorted(before.keys() | after.keys())},
            "pools_before": [_pool_json(c) for c in cost.pools(r.before)],
            "pools_after": [_pool_json(c) for c in cost.pools(r.after)],
            "storage_before": [cost.storage_json(c) for c in cost.storage(r.before)],
            "storage_after": [cost.storage_json(c) for c in cost.storage(r.after)],
            "not_counted": cost.NOT_COUNTED, "buckets_not_counted": cost.buckets([*r.diff.base, *r.diff.head]),
            "unpriced": sorted({c.machine_type for c in cost.pools(cost.unpriced(r.after + r.before))}),
            "unpriced_pools": sorted({c.described for c in cost.unpriced(r.after + r.before)}),
            "delta_bound": cost.bound(r.before, r.after),
            "unknown": cost.hidden(r.before + r.after)}


def stack_json(r: StackReport) -> dict[str, Any]:
    return {
        "stack": r.stack, "source": r.diff.source, "ok": not r.diff.failed, "problems": r.diff.problems,
        "warnings": r.diff.warnings, "partial": r.diff.partial, "counts": r.diff.counts(),
        "changes": [{"resource": c.key, "type": c.type, "name": c.name, "op": c.op.value, "label": c.label,
                     "paths": [{"path": p.path, "effect": p.effect.value, "source": p.source, "note": p.note}
                               for p in c.paths]} for c in r.diff.changes],
        "risks": [{"resource": k.resource, "kind": k.kind, "action": k.action, "gpus": k.gpus, "gpu": k.gpu,
                   "cause": k.cause, "impact": k.impact, "headline": k.headline} for k in r.risks],
        "cost": {**_cost_json(r), "prices_leave_out": r.prices_leave_out},
        "capacity_plan": r.diff.capacity_plan,
        "policy": {"note": r.policy_note, "new": len(r.new_verdicts),
                   "verdicts": [{"policy": v.policy, "level": v.level, "message": v.message, "resource": v.resource,
                                 "new": v in r.new_verdicts} for v in r.verdicts]},
        "capacity": {"note": r.capacity_note,
                     "flags": [{**f.model_dump(mode="json"), "blocking": gate.blocks(f)} for f in r.capacity]},
    }


def prices_staleness(reports: Sequence[StackReport]) -> staleness.Staleness:
    """How old the prices behind the comment are: the oldest as_of of the snapshot."""
    return staleness.of([r.prices_as_of for r in reports if r.prices_as_of])


def document(reports: Sequence[StackReport], ledger: dict[str, Any] | None = None) -> dict[str, Any]:
    """``ledger``: what the reserved-capacity flags were judged against ({file, as_of, warn_days}), or None."""
    found = gate.stops(reports)
    return {"schema": SCHEMA, "headline": headline(reports), "exit_code": gate.exit_code(found), "ledger": ledger,
            "blocked_by": [{"stack": s.stack, "reason": s.reason, "exit_code": s.code} for s in found],
            "delta_usd": round(sum(r.delta_usd for r in reports), 2),
            "hours_per_month": cost.HOURS_PER_MONTH, "prices": prices_staleness(reports).as_dict(),
            "stacks": [stack_json(r) for r in reports]}


def failed(reports: Sequence[StackReport]) -> list[StackReport]:
    return [r for r in reports if r.diff.failed]


def cost_headline(reports: Sequence[StackReport]) -> str:
    """The cost change of the stacks that previewed (a failed stack has no diff, so no cost change): unknown when a
    pool's machine type or size is unknown or secret, a bound that names what it leaves out when a pool is
    unpriced (never priced as $0)."""
    delta = sum(r.delta_usd for r in reports)
    hidden = sorted({n for r in reports for n in cost.hidden(r.before + r.after)})
    if hidden:
        return (f"Monthly cost change unknown: {', '.join(hidden)} {'has' if len(hidden) == 1 else 'have'} a machine "
                f"type or size not known until apply (the other pools: {delta:+,.0f} USD)")
    bounds = {cost.bound(r.before, r.after) for r in reports} - {"exact"}
    left_out = "; ".join(x for r in reports if (x := cost.leaves_out(r.before + r.after)))
    if bounds:
        how = "at least" if bounds == {"at_least"} else "at most" if bounds == {"at_most"} else ""
        if not how:
            return (f"Monthly cost change unknown: no price for {left_out} (the priced pools: {delta:+,.0f} USD)")
        return f"Monthly cost will change by {how} {delta:+,.0f} USD: it leaves out {left_out}, which has no price"
    if abs(delta) < 0.005:
        return "Monthly cost will not change"
    return f"Monthly cost will {'increase' if delta > 0 else 'decrease'} by ${abs(delta):,.0f}"


def headline(reports: Sequence[StackReport]) -> str:
    """A failed preview leads, then what blocks the change (gpufleet.review.gate): its cost and resources are
    unknown, or it may not merge, so no cost headline may stand alone."""
    bad = failed(reports)
    if bad:
        names = ", ".join(r.stack for r in bad)
        return f"Preview failed for {len(bad)} stack{'s' if len(bad) > 1 else ''} ({names}): no resource diff for it"
    found = gate.stops(reports)
    if found:
        more = f" (and {len(found) - 1} more below)" if len(found) > 1 else ""
        return f"Blocked: stack {found[0].stack}: {found[0].reason}{more}"
    return cost_headline(reports)


_COLOUR = {"replace": "red", "delete": "red", "create": "green"}
CHANGE_COLUMNS = (Column("resource"), Column("action"), Column("changed inputs", prose=True))


def print_report(console: Console, reports: Sequence[StackReport]) -> None:
    for r in failed(reports):
        console.print(f"[bold red]✗ stack {r.stack} could not be previewed: no resource diff[/]")
        for p in r.diff.problems:
            console.print(f"  [red]•[/] {p}")
    for s in (s for s in gate.stops(reports) if s.code == gate.BLOCKED):
        console.print(f"[bold red]⛔ blocked: stack {s.stack}:[/] {s.reason}", highlight=False)
    console.print(f"[bold]{cost_headline(reports)}[/] ({cost.HOURS_PER_MONTH}-hour month, every pool at its max "
                  "nodes" + (", stacks that previewed" if failed(reports) else "") + ")")
    age = prices_staleness(reports)
    console.print(f"prices as of {age.as_of or 'an unstated date'}", highlight=False)
    if age.warning:
        console.print(f"[yellow]warning: {age.warning}[/]", highlight=False)
    for k in sorted((k for r in reports for k in r.risks), key=Risk.sort_key):
        console.print(f"[bold red]⚠ {k.headline}[/] — {k.cause}\n  {k.impact}")
    for r in (r for r in reports if not r.diff.failed):
        rows = [(c.key, f"[{_COLOUR.get(c.op.value, 'yellow')}]{c.label}[/]", ", ".join(p.path for p in c.paths))
                for c in r.diff.changes]
        if rows:
            print_table(console, f"stack {r.stack} ({r.diff.source})", CHANGE_COLUMNS, rows, show_edge=False)
        else:
            console.print(f"stack {r.stack}: no changes")
        console.print(f"  cost {cost.money(r.before)} -> {cost.money(r.after)} per month "
                      f"({cost.money_delta(r.before, r.after)})")
        for v in r.new_verdicts:
            console.print(f"  [red]new {v.level} violation[/] {v.policy}: {v.message}")
        for f in (f for f in r.capacity if not gate.blocks(f)):
            console.print(f"  [yellow]reserved capacity ({f.rule}):[/] {f.message}", highlight=False)
        if r.capacity_note:
            console.print(f"  [dim]{r.capacity_note}[/]")
        if r.policy_note:
            console.print(f"  [dim]{r.policy_note}[/]")
