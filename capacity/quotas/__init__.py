"""Live quota fetchers, one module per cloud, each producing QuotaRow rows (GPUs) and warnings.

Shared here: retry with exponential backoff and jitter on throttling, the per-region loop that turns one
failing region into a warning instead of a failed run, and the conversion of native values to GPUs.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from capacity.quotas.convert import native_quotas
from capacity.schema import Market, QuotaRow
from components import catalog
from components.catalog import Cloud

T = TypeVar("T")


@dataclass
class FetchResult:
    rows: list[QuotaRow] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def extend(self, other: FetchResult) -> None:
        self.rows.extend(other.rows)
        self.warnings.extend(other.warnings)


@dataclass(frozen=True)
class Backoff:
    attempts: int = 6
    base_s: float = 0.5
    cap_s: float = 20.0
    sleep: Callable[[float], None] = time.sleep
    jitter: Callable[[], float] = random.random

    def delay(self, attempt: int) -> float:
        """Full jitter: uniform in [0, min(cap, base * 2**attempt)]."""
        return self.jitter() * min(self.cap_s, self.base_s * 2 ** attempt)


DEFAULT_BACKOFF = Backoff()


def with_retries(call: Callable[[], T], throttled: Callable[[BaseException], bool], backoff: Backoff) -> T:
    """Run ``call``; on a throttling error wait and try again, up to ``backoff.attempts`` times."""
    for attempt in range(backoff.attempts):
        try:
            return call()
        except Exception as err:
            if not throttled(err) or attempt == backoff.attempts - 1:
                raise
            backoff.sleep(backoff.delay(attempt))
    raise AssertionError("unreachable")


def per_region(cloud: Cloud, regions: Iterable[str], fetch_one: Callable[[str], list[QuotaRow]]) -> FetchResult:
    """Fetch region by region; a region that fails becomes a warning and the others still count."""
    result = FetchResult()
    for region in regions:
        try:
            result.rows.extend(fetch_one(region))
        except Exception as err:  # one region's failure must not lose the others: reported, not raised
            result.warnings.append(f"{cloud.title} {region}: quotas not fetched ({type(err).__name__}: "
                                   f"{_short(err)}). The rows for this region are missing; retry later or "
                                   "add them to quotas.csv by hand.")
    return result


def _short(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return text[:200] + ("..." if len(text) > 200 else "")


def to_rows(cloud: Cloud, region: str, values: Mapping[str, float], offered: set[str] | None = None) -> list[QuotaRow]:
    """Native quota values (by quota code / metric / family, as the cloud names them) -> GPU rows.

    A GPU gets a row when at least one of its native quotas is present (and, when ``offered`` is given, one
    of its machine types is offered in the region); with two distinct quotas (GCP H100 and H100 Mega) the
    GPUs of both add up."""
    normal = {_norm(k): v for k, v in values.items()}
    rows = []
    for gpu in catalog.gpu_models():
        for market in Market:
            total, seen = 0, False
            for native in native_quotas(cloud, gpu, market, offered):
                value = normal.get(_norm(native.name))
                if value is None:
                    continue
                seen = True
                total += native.to_gpus(value)
            if seen:
                rows.append(QuotaRow(cloud=cloud, region=region, gpu=gpu, market=market, max_gpus=total))
    return rows


def _norm(name: str) -> str:
    """Azure names a family 'standardNDSH100v5Family' in ``name.value`` and 'Standard NDSH100v5 Family vCPUs'
    in ``localizedValue``; compare without case, spaces or the 'vCPUs' suffix."""
    text = name.lower().replace(" ", "")
    return text[:-5] if text.endswith("vcpus") else text
