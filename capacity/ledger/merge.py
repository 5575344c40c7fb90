"""Join what the stacks reference with what the clouds say, by cloud and id (Azure ids case-insensitively, as ARM
treats them): the live state, dates and size win; the references, Kueue queues and price stay."""

from __future__ import annotations

from collections.abc import Sequence

from capacity.ledger.model import Entry


def merge(offline: Sequence[Entry], live: Sequence[Entry]) -> list[Entry]:
    entries = {e.key: e.model_copy(deep=True) for e in offline}
    for e in live:
        known = entries.get(e.key)
        if known is None:
            entries[e.key] = e.model_copy(deep=True)
            continue
        for field in ("kind", "region", "zone", "machine_type", "gpus", "start", "end", "state", "active"):
            value = getattr(e, field)
            if value is not None:
                setattr(known, field, value)
        known.source = "stacks+live"
    out = sorted(entries.values(), key=lambda x: (x.cloud, x.kind.value, x.id))
    for e in out:
        if e.usd_per_hour is not None and e.start and e.end and e.usd_total is None:
            e.usd_total = round(e.usd_per_hour * (e.end - e.start).total_seconds() / 3600, 2)
    return out
