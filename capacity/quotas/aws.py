"""AWS: EC2 vCPU quotas per instance family from Service Quotas, converted to GPUs.

Which regions: the ones given, or every region EC2 ``describe_regions`` lists for the account. In each
region, ``describe_instance_type_offerings`` says which catalogue machine types exist there; Service Quotas
``list_service_quotas`` (paginated) gives the applied values, and ``get_aws_default_service_quota`` fills
any code with no applied value. On-demand and spot are separate codes (L-417A185B "Running On-Demand P
instances", L-7212CCBC "All P Spot Instance Requests", ...), both in vCPUs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from capacity.quotas import DEFAULT_BACKOFF, Backoff, FetchResult, per_region, to_rows, with_retries
from capacity.schema import Market
from components import catalog
from components.catalog import Cloud

THROTTLING = {"Throttling", "ThrottlingException", "TooManyRequestsException", "RequestLimitExceeded",
              "ServiceUnavailable", "RequestThrottled"}
ClientFactory = Callable[[str, str], Any]  # (service, region) -> boto3 client


def _code(err: BaseException) -> str | None:
    response = getattr(err, "response", None)
    return response.get("Error", {}).get("Code") if isinstance(response, dict) else None


def _throttled(err: BaseException) -> bool:
    return _code(err) in THROTTLING


def default_clients(service: str, region: str) -> Any:
    import boto3
    from botocore.config import Config

    # our own backoff (capacity.quotas.with_retries) is the one retry layer
    return boto3.client(service, region_name=region, config=Config(retries={"max_attempts": 1}))


def fetch(regions: list[str] | None = None, clients: ClientFactory = default_clients,
          backoff: Backoff = DEFAULT_BACKOFF) -> FetchResult:
    machines = [m for m in catalog.for_cloud(Cloud.AWS) if m.gpus > 0]
    if regions is None:
        ec2 = clients("ec2", "us-east-1")
        answer = with_retries(lambda: ec2.describe_regions(AllRegions=False), _throttled, backoff)
        regions = sorted(r["RegionName"] for r in answer["Regions"])
    codes = {m.quota.on_demand for m in machines} | {m.quota.spot for m in machines}

    def one(region: str) -> list:
        offered = _offered(clients("ec2", region), [m.name for m in machines], backoff)
        if not offered:
            return []
        values = _quota_values(clients("service-quotas", region), codes, backoff)
        return to_rows(Cloud.AWS, region, values, offered)

    result = per_region(Cloud.AWS, regions, one)
    by_code: dict[str, set[str]] = {}
    for m in machines:
        by_code.setdefault(m.quota.on_demand, set()).add(m.gpu)
    for code, gpus in sorted((c, sorted(g)) for c, g in by_code.items() if len(g) > 1):
        result.warnings.append(f"AWS quota {code} ({Market.ON_DEMAND.value}) is shared by {', '.join(gpus)}: each "
                               "row shows what one GPU model could use alone; together they cannot exceed it.")
    return result


def _offered(ec2: Any, names: list[str], backoff: Backoff) -> set[str]:
    found: set[str] = set()
    for start in range(0, len(names), 100):
        chunk = names[start:start + 100]
        token = None
        while True:
            args: dict[str, Any] = {"LocationType": "region",
                                    "Filters": [{"Name": "instance-type", "Values": chunk}]}
            if token:
                args["NextToken"] = token
            page = with_retries(lambda a=args: ec2.describe_instance_type_offerings(**a), _throttled, backoff)
            found.update(o["InstanceType"] for o in page.get("InstanceTypeOfferings", []))
            token = page.get("NextToken")
            if not token:
                break
    return found


def _quota_values(sq: Any, codes: set[str], backoff: Backoff) -> dict[str, float]:
    values: dict[str, float] = {}
    token = None
    while True:
        args: dict[str, Any] = {"ServiceCode": "ec2", "MaxResults": 100}
        if token:
            args["NextToken"] = token
        page = with_retries(lambda a=args: sq.list_service_quotas(**a), _throttled, backoff)
        for quota in page.get("Quotas", []):
            if quota["QuotaCode"] in codes:
                values[quota["QuotaCode"]] = float(quota["Value"])
        token = page.get("NextToken")
        if not token:
            break
    for code in sorted(codes - set(values)):
        try:
            answer = with_retries(lambda c=code: sq.get_aws_default_service_quota(ServiceCode="ec2", QuotaCode=c),
                                  _throttled, backoff)
        except Exception as err:
            if _code(err) == "NoSuchResourceException":
                continue  # the code does not exist in this region
            raise
        values[code] = float(answer["Quota"]["Value"])
    return values
