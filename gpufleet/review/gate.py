"""Whether a change may merge: the one rule `gpufleet diff` and `gpufleet pr` exit by, and the reasons their
report leads with (docs/pr-comment.md, "Exit codes").

A stack that could not be previewed fails the command (exit 1). Otherwise the change is blocked (exit 3) when it
adds a mandatory policy violation (a budget lowered below the stack's cost is one: stack-monthly-budget), when a
GPU pool of the head cannot be priced (unknown is never $0: a cost that leaves a pool out cannot be checked against
a budget), or when it cannot apply as written (a replacement the engine or the cloud refuses,
gpufleet.review.applicable). Reserved capacity, judged against a recorded ledger (`--ledger`): a pool that draws on a
reservation or capacity block that has ended cannot apply (its nodes cannot start), and a pool whose capacity the
ledger cannot judge blocks too (a check that cannot decide never passes); capacity ending within the warning window
and capacity billed while idle are advice, shown and never blocking (capacity.ledger.checks.BLOCKING, the split
the policy pack's mandatory and advisory policies make). Anything else reports on a change through the same two
functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from capacity.ledger.checks import BLOCKING, Flag
from gpufleet.review import cost

if TYPE_CHECKING:  # the report renders these reasons first: it imports this module
    from gpufleet.review.report import StackReport

OK, FAILED, BLOCKED = 0, 1, 3
MANDATORY = ("mandatory", "remediate")


@dataclass(frozen=True)
class Stop:
    """One reason the command does not pass: which stack, what, and the exit code it carries."""

    stack: str
    reason: str
    code: int


def blocks(flag: Flag) -> bool:
    """Whether a reserved-capacity flag blocks the change: expired capacity, or capacity the ledger cannot judge."""
    return flag.rule in BLOCKING


def stops(reports: Sequence[StackReport]) -> list[Stop]:
    """Every reason, failures first, then per stack: what cannot apply (reserved capacity that has ended or cannot
    be judged among it), new mandatory violations, unpriced pools."""
    out = [Stop(r.stack, p, FAILED) for r in reports for p in r.diff.problems]
    for r in (r for r in reports if not r.diff.failed):
        out += [Stop(r.stack, reason, BLOCKED) for reason in r.cannot_apply]
        out += [Stop(r.stack, f"reserved capacity: {f.message}", BLOCKED) for f in r.capacity if blocks(f)]
        out += [Stop(r.stack, f"new {v.level} violation of {v.policy}"
                     + (f" on {v.resource.split('::')[-1]}" if v.resource else "") + f": {v.message}", BLOCKED)
                for v in r.new_verdicts if v.level in MANDATORY]
        out += [Stop(r.stack, f"cannot price GPU pool {c.described}: the price table has no price for it "
                     "(its cost would read as $0); add a row with its source to capacity/data/offers.csv "
                     "(docs/capacity.md, Prices) or choose a priced machine type, region or option", BLOCKED)
                for c in cost.pools(cost.unpriced(r.after)) if c.gpus > 0]
    return out


def exit_code(found: Sequence[Stop]) -> int:
    """1 when a stack could not be previewed, else 3 when anything blocks the change, else 0."""
    codes = {s.code for s in found}
    return FAILED if FAILED in codes else BLOCKED if codes else OK
