"""The Markdown pull-request comment: a marker, a one-line headline, GPU disruption risk first, a table per stack,
and collapsible details (changed paths with their sources, cost per pool, policy verdicts).

GitHub refuses comments over 65,536 characters; the comment stays within ``LIMIT`` and says so when it cut.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from gpufleet.engine.capture import Resource
from gpufleet.review import cost, gate
from gpufleet.review.diff import Change, Op
from gpufleet.review.replacements import Effect, get_path
from gpufleet.review.report import StackReport, cost_headline, failed, headline, prices_staleness
from gpufleet.review.risk import Risk

MARKER = "<!-- gpufleet-pr-comment -->"
LIMIT = 65_000
TRUNCATED = "\n\n> **Truncated**: this comment was cut at {limit:,} characters ({total:,} in full). Run " \
            "`gpufleet pr --format json` (or `gpufleet diff`) for the whole report.\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _risk_section(reports: Sequence[StackReport]) -> list[str]:
    found = sorted((k for r in reports for k in r.risks), key=Risk.sort_key)
    if not found:
        return ["No GPU node pool, Lustre file system or checkpoint bucket is replaced, rolled or drained.", ""]
    lines = ["### ⚠️ GPU disruption risk", ""]
    for k in found:
        lines += [f"- **{k.headline}** — {_cell(k.cause)}", f"  {k.impact}"]
    return [*lines, ""]


def _stack_table(r: StackReport) -> list[str]:
    counts = ", ".join(f"{n} to {op}" for op, n in r.diff.counts().items() if n) or "no changes"
    lines = [f"### Stack `{r.stack}` — {counts}", ""]
    lines += [f"> ⚠️ engine {_cell(w)}" for w in r.diff.warnings] + ([""] if r.diff.warnings else [])
    if r.diff.partial:
        lines += ["> The real preview lists only changed resources (it ran without `--show-sames`): the totals "
                  "below cover the changed pools only, and the policy pack was not run on a partial graph.", ""]
    lines += [f"Monthly cost: {cost.money(r.before)} → {cost.money(r.after)} ({cost.money_delta(r.before, r.after)})",
              ""]
    named = cost.buckets([*r.diff.base, *r.diff.head])
    lines += [f"Not counted: {cost.NOT_COUNTED}" + (f"; buckets left out: {', '.join(named)}" if named else "") + ".",
              ""]
    if r.diff.capacity_plan:
        plan = r.diff.capacity_plan
        lines += [f"Capacity plan for {plan['month']}: ${plan['usd_per_month']:,.0f} for the work it places in this "
                  "stack (`gpufleet capacity apply`); the monthly cost above prices every pool at its max nodes, "
                  "the ceiling.", ""]
    advice = [f for f in r.capacity if not gate.blocks(f)]  # what blocks leads the comment (_blocked)
    lines += [f"> ⚠️ reserved capacity ({f.rule.replace('_', ' ')}): {_cell(f.message)}" for f in advice]
    lines += [f"> {_cell(r.capacity_note)}"] if r.capacity_note else []
    lines += [""] if advice or r.capacity_note else []
    if r.diff.changes:
        lines += ["| action | resource | type | changed inputs |", "|---|---|---|---|"]
        for group in groups(r.diff.changes):
            c = group[0]
            paths = ", ".join(f"`{p.path}`" for p in c.paths[:6]) + (" …" if len(c.paths) > 6 else "")
            if len(group) == 1:
                lines.append(f"| {c.label} | `{c.name}` | `{c.type}` | {_cell(paths)} |")
            else:
                types = sorted({g.type for g in group})
                lines.append(f"| {c.label} on {len(group)} | {_names(group)} | "
                             f"{', '.join(f'`{t}`' for t in types[:3])}{' …' if len(types) > 3 else ''} | "
                             f"{_cell(paths)} (the same change on each) |")
        lines.append("")
    return lines


def _names(group: Sequence[Change], shown: int = 4) -> str:
    names = [f"`{g.name}`" for g in group[:shown]]
    return f"{len(group)} resources: " + ", ".join(names) + (f" and {len(group) - shown} more" if len(group) > shown
                                                              else "")


def groups(changes: Sequence[Change]) -> list[list[Change]]:
    """Identical in-place updates (the same paths changed from the same old to the same new values, e.g. one fleet
    tag added to every tagged resource) grouped, in first-seen order; every other change stands alone."""
    out: dict[object, list[Change]] = {}
    for c in changes:
        key: object = id(c)
        if c.op is Op.UPDATE and c.paths and all(p.effect is Effect.IN_PLACE for p in c.paths):
            key = (c.label, tuple((p.path, _json(c.old, p.path), _json(c.new, p.path)) for p in c.paths))
        out.setdefault(key, []).append(c)
    return list(out.values())


def _json(r: Resource | None, path: str) -> str:
    return json.dumps(get_path(r.inputs if r else {}, path), sort_keys=True)


def _details(r: StackReport) -> list[str]:
    """Collapsible blocks, each only when it has something in it."""
    lines: list[str] = []
    if any(c.paths for c in r.diff.changes):
        lines += ["<details><summary>Details: changed inputs and why they replace</summary>", ""]
        for group in groups(r.diff.changes):
            c = group[0]
            who = f"`{c.name}`" if len(group) == 1 else _names(group)
            for p in c.paths:
                why = f"{p.effect.value}" + (f" — {p.note}" if p.note else "") + (
                    f" ([source]({p.source}))" if p.source.startswith("http") else "")
                lines.append(f"- {who} `{p.path}`: {_cell(why)}")
        lines += ["", "</details>", ""]
    if r.before or r.after:
        lines += [f"<details><summary>Cost per pool ({cost.HOURS_PER_MONTH}-hour month, every pool at its max "
                  "nodes)</summary>", "", "| when | pool | machine | nodes | GPUs | option | $/node-h | $/month |",
                  "|---|---|---|---|---|---|---|---|"]
        for when, pools in (("before", cost.pools(r.before)), ("after", cost.pools(r.after))):
            for c in pools:
                price = c.hidden or (f"{c.usd_per_node_hour:,.2f}" if c.usd_per_node_hour is not None
                                     else "unpriced")
                lines.append(f"| {when} | `{c.key.split('::')[-1]}` | {c.machine_type} | {c.nodes} | {c.gpus} "
                             f"{c.gpu} | {c.label} | {price} | {c.hidden or f'{c.monthly_usd:,.0f}'} |")
        lines += ["", "</details>", ""]
    lines += _storage(r)
    return lines + _policy(r)


def _storage(r: StackReport) -> list[str]:
    """Lustre at its capacity x its tier's sourced rate; what has no sourced rate says so, never $0."""
    rows = [(when, c) for when, side in (("before", r.before), ("after", r.after)) for c in cost.storage(side)]
    if not rows:
        return []
    lines = ["<details><summary>Cost of storage (Lustre at its capacity x the tier's rate; buckets not counted)"
             "</summary>", "", "| when | file system | tier | TiB | $/month | price source |",
             "|---|---|---|---|---|---|"]
    for when, c in rows:
        fs = c.lustre
        size = c.hidden or ("unknown" if fs.tib is None else f"{fs.tib:,g}")
        usd = c.hidden or ("unpriced" if fs.monthly_usd is None else f"{fs.monthly_usd:,.0f}")
        lines.append(f"| {when} | `{c.key.split('::')[-1]}` | {fs.tier} | {size} | {usd} | {_cell(fs.source)} |")
    return [*lines, "", "</details>", ""]


def _policy(r: StackReport) -> list[str]:
    if not r.verdicts:
        return [f"Policy: {r.policy_note or 'no violations on the head graph.'}", ""]
    title = f"Policy verdicts on the head graph: {len(r.new_verdicts)} new, {len(r.verdicts)} in all"
    lines = [f"<details{' open' if r.new_verdicts else ''}><summary>{title}</summary>", ""]
    for v in r.verdicts:
        tag = "**new** " if v in r.new_verdicts else ""
        lines.append(f"- {tag}{v.level} `{v.policy}` {('on `' + v.resource + '`') if v.resource else ''}: "
                     f"{_cell(v.message)}")
    return [*lines, "", "</details>", ""]


def _failures(reports: Sequence[StackReport]) -> list[str]:
    lines: list[str] = []
    for r in failed(reports):
        lines += [f"### ❌ Stack `{r.stack}` could not be previewed", "",
                  "Nothing below compares this stack: its resources, cost and policy verdicts are unknown until "
                  "these errors are fixed.", "", *(f"- {_cell(p)}" for p in r.diff.problems), ""]
    return lines


def _blocked(reports: Sequence[StackReport]) -> list[str]:
    found = [s for s in gate.stops(reports) if s.code == gate.BLOCKED]
    if not found:
        return []
    return ["### ⛔ This change is blocked", "", *(f"- stack `{s.stack}`: {_cell(s.reason)}" for s in found), ""]


def render(reports: Sequence[StackReport], limit: int = LIMIT) -> str:
    """The whole comment, at most ``limit`` characters, starting with the marker; failed stacks first, then what
    blocks the change (gpufleet.review.gate), then the cost."""
    ok = [r for r in reports if not r.diff.failed]
    lines = [MARKER, f"## {headline(reports)}", "", *_failures(reports), *_blocked(reports)]
    if (failed(reports) or gate.stops(reports)) and ok:
        lines += [f"**{cost_headline(ok)}**" + (" (the stacks that previewed)" if failed(reports) else ""), ""]
    age = prices_staleness(reports)
    sources = ", ".join(sorted({r.diff.source for r in reports})) or "no stacks"
    lines += [f"_gpufleet pull-request preview: {cost.HOURS_PER_MONTH}-hour month, prices from the snapshot as of "
              f"{age.as_of or 'an unstated date'}; {sources}._", ""]
    if age.warning:
        lines += [f"> **Warning:** {age.warning}", ""]
    missing = sorted({m for r in reports for m in r.prices_leave_out})
    if missing:
        lines += [f"_The price snapshot has no citable price for: {', '.join(missing)}; those options are left out of "
                  "the comparison (a pool that buys one is priced at an upper bound, or unpriced; docs/capacity.md, "
                  "\"The bundled price snapshot\")._", ""]
    if ok:
        lines += _risk_section(ok)
    for r in ok:
        lines += _stack_table(r)
    for r in ok:
        lines += [f"#### `{r.stack}` details", "", *_details(r)]
    return truncate("\n".join(lines), limit)


def truncate(text: str, limit: int = LIMIT) -> str:
    if len(text) <= limit:
        return text
    note = TRUNCATED.format(limit=limit, total=len(text))
    cut = text[: limit - len(note)]
    cut = cut[: cut.rfind("\n")] if "\n" in cut else cut
    if cut.count("<details") > cut.count("</details>"):
        closing = "\n</details>"
        cut = cut[: limit - len(note) - len(closing)]
        cut = cut[: cut.rfind("\n")] + closing
    return cut + note
