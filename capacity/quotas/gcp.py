"""GCP: region quotas (NVIDIA_*_GPUS, PREEMPTIBLE_NVIDIA_*_GPUS) from Compute Engine, already in GPUs.

Which regions: the ones given (``regions.get``), or every region of the project (``regions.list``,
followed page by page). The catalogue names the metric of each machine type; a GPU with two metrics
(H100 and H100 Mega) gets the sum.
"""

from __future__ import annotations

from typing import Any

from capacity.quotas import DEFAULT_BACKOFF, Backoff, FetchResult, per_region, to_rows, with_retries
from components.catalog import Cloud

TIMEOUT_S = 30.0


def _throttled(err: BaseException) -> bool:
    from google.api_core import exceptions

    if isinstance(err, exceptions.TooManyRequests | exceptions.ServiceUnavailable | exceptions.InternalServerError):
        return True
    return isinstance(err, exceptions.Forbidden) and "rateLimitExceeded" in str(err)


def default_client() -> Any:
    from google.cloud import compute_v1

    return compute_v1.RegionsClient()


def _values(region: Any) -> dict[str, float]:
    return {q.metric: float(q.limit) for q in region.quotas}


def fetch(project: str, regions: list[str] | None = None, client: Any = None,
          backoff: Backoff = DEFAULT_BACKOFF) -> FetchResult:
    from google.cloud import compute_v1

    client = client or default_client()
    if regions is not None:
        def one(name: str) -> list:
            region = with_retries(lambda: client.get(project=project, region=name, retry=None, timeout=TIMEOUT_S),
                                  _throttled, backoff)
            return to_rows(Cloud.GCP, name, _values(region))

        return per_region(Cloud.GCP, regions, one)
    result = FetchResult()
    token = ""
    while True:
        request = compute_v1.ListRegionsRequest(project=project, page_token=token)
        try:
            page = with_retries(lambda r=request: next(iter(client.list(request=r, retry=None,
                                                                          timeout=TIMEOUT_S).pages)),
                                _throttled, backoff)
        except Exception as err:  # keep the regions already read: a partial result, with a warning
            result.warnings.append(f"GCP project {project}: listing regions failed after {len(result.rows)} "
                                   f"row(s) ({type(err).__name__}: {' '.join(str(err).split())[:200]}). "
                                   "Later regions are missing; retry, or name regions with --region.")
            return result
        for region in page.items:
            result.rows.extend(to_rows(Cloud.GCP, region.name, _values(region)))
        token = page.next_page_token
        if not token:
            return result
