"""What the fleet already holds, as supply for the planner: the ledger's active (or scheduled) capacity blocks,
capacity reservations and reservations, each at its own cloud, region and machine type, from its start to its end.

Only what the ledger can say is used: an entry whose end is unknown (read offline: the stack files do not say
it) is left out and named, never taken to last the whole plan; so is one whose machine type or size it does not
know. A GCP committed use discount adds no capacity of its own: it pays for the reservations attached to it,
which the ledger lists and the plan uses.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from capacity.ledger.model import Entry, Kind
from capacity.schema import HeldRow, Option
from components import catalog
from components.catalog import Cloud

OPTION_OF = {Kind.CAPACITY_BLOCK: Option.CAPACITY_BLOCK, Kind.CAPACITY_RESERVATION: Option.RESERVATION,
             Kind.RESERVATION: Option.RESERVATION, Kind.CAPACITY_RESERVATION_GROUP: Option.RESERVATION}
SCHEDULED = {"scheduled", "payment-pending"}  # AWS: a block bought that starts later


def held(entries: Sequence[Entry]) -> tuple[list[HeldRow], list[str]]:
    """The supply rows, and why each entry left out is left out (printed as warnings)."""
    rows: list[HeldRow] = []
    left: list[str] = []
    for e in entries:
        why = _unusable(e)
        if why:
            if why != "planned":
                left.append(f"{e.cloud} {e.id}: not used as held capacity: {why}")
            continue
        machine = catalog.by_name(Cloud(e.cloud), e.machine_type or "")
        assert machine is not None and e.gpus is not None and e.region is not None  # _unusable said so
        rows.append(HeldRow(id=e.id, cloud=Cloud(e.cloud), region=e.region, machine_type=machine.name,
                            gpu=machine.gpu, gpus=e.gpus - e.gpus % machine.gpus, option=OPTION_OF[e.kind],
                            start=e.start, end=e.end, usd_per_hour=e.usd_per_hour))
    return rows, left


def _unusable(e: Entry) -> str:
    if e.kind is Kind.PLANNED:
        return "planned"
    if e.kind is Kind.COMMITMENT:
        return "a committed use discount pays for the reservations attached to it; those are the capacity"
    state = (e.state or "").lower()
    if e.active is None and not state:
        return ("its state and end are unknown (the ledger was read offline); record it with `gpufleet capacity "
                "ledger --live --format json`")
    if not e.active and state not in SCHEDULED:
        return f"not active (state {e.state or 'unknown'})"
    if e.end is None and e.kind is Kind.CAPACITY_BLOCK:
        return "a capacity block without a known end"
    machine = catalog.by_name(Cloud(e.cloud), e.machine_type or "") if e.cloud in set(Cloud) else None
    if machine is None or not machine.gpus:
        return f"machine type {e.machine_type or 'unknown'} is not a catalogue GPU machine type"
    if e.region is None:
        return "its region is unknown"
    if e.gpus is None or e.gpus < machine.gpus:
        return f"it holds {e.gpus if e.gpus is not None else 'an unknown number of'} GPUs, not a whole node " \
               f"of {machine.gpus}"
    return ""


def load(path: Path) -> tuple[list[HeldRow], list[str]]:
    """The held supply of a recorded ledger document (InputError naming the entry and field when it is not one)."""
    from capacity.ledger.model import read

    return held(read(path))
