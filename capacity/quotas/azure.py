"""Azure: compute usage per location (VM family vCPUs; spot: the regional low-priority vCPUs), to GPUs.

``usage.list(location)`` is paged (nextLink); each item names a quota (``name.value``, e.g.
standardNDSH100v5Family, lowPriorityCores) with its ``limit`` in vCPUs. The catalogue names the family of
each machine type; spot counts against lowPriorityCores, shared by every family in the location.
"""

from __future__ import annotations

from typing import Any

from capacity.quotas import DEFAULT_BACKOFF, Backoff, FetchResult, per_region, to_rows, with_retries
from components.catalog import Cloud

THROTTLED_STATUS = {429, 500, 502, 503, 504}


def _throttled(err: BaseException) -> bool:
    return getattr(err, "status_code", None) in THROTTLED_STATUS


def default_client(subscription_id: str) -> Any:
    from azure.identity import DefaultAzureCredential
    from azure.mgmt.compute import ComputeManagementClient

    # our own backoff (capacity.quotas.with_retries) is the one retry layer
    return ComputeManagementClient(DefaultAzureCredential(), subscription_id, retry_total=0)


def fetch(subscription_id: str, locations: list[str], client: Any = None,
          backoff: Backoff = DEFAULT_BACKOFF) -> FetchResult:
    client = client or default_client(subscription_id)

    def one(location: str) -> list:
        usages = with_retries(lambda: list(client.usage.list(location)), _throttled, backoff)
        values = {u.name.value: float(u.limit) for u in usages if u.name is not None and u.name.value}
        return to_rows(Cloud.AZURE, location, values)

    result = per_region(Cloud.AZURE, locations, one)
    if result.rows:
        result.warnings.append("Azure spot quota is the location's lowPriorityCores, shared by every VM family: "
                               "each spot row shows what one GPU model could use alone.")
    return result
