"""The AWS quota fetcher: EC2 against moto in server mode; Service Quotas through botocore's Stubber.

moto implements EC2 describe_regions and describe_instance_type_offerings (with real per-region data) but
not Service Quotas for EC2, so that client is a real boto3 client whose calls the Stubber answers and
checks against the real service model.
"""

from __future__ import annotations

from typing import Any

import boto3
from botocore.stub import Stubber

from capacity.quotas import Backoff, aws
from capacity.schema import Market
from components.catalog import Cloud

P_ON_DEMAND, P_SPOT, G_ON_DEMAND, G_SPOT = "L-417A185B", "L-7212CCBC", "L-DB2E81BA", "L-3819A6DF"
CREDS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


def quota(code: str, value: float) -> dict[str, Any]:
    return {"ServiceCode": "ec2", "QuotaCode": code, "QuotaName": code, "Value": value, "Adjustable": True,
            "GlobalQuota": False}


class Clients:
    """EC2 clients aimed at moto; Service Quotas clients stubbed per region with the answers given."""

    def __init__(self, url: str, answers: dict[str, list[tuple[str, dict, dict]]]):
        self.url, self.answers, self.stubbers = url, answers, []

    def __call__(self, service: str, region: str) -> Any:
        if service == "ec2":
            return boto3.client("ec2", region_name=region, endpoint_url=self.url, **CREDS)
        client = boto3.client("service-quotas", region_name=region, **CREDS)
        stubber = Stubber(client)
        for method, response, params in self.answers.get(region, []):
            if method == "error":
                stubber.add_client_error("list_service_quotas", service_error_code=response["code"],
                                         http_status_code=response["status"], expected_params=params)
            else:
                stubber.add_response(method, response, params)
        stubber.activate()
        self.stubbers.append(stubber)
        return client


def listing(*pages: list[dict[str, Any]]) -> list[tuple[str, dict, dict]]:
    out = []
    for i, page in enumerate(pages):
        response: dict[str, Any] = {"Quotas": page}
        if i + 1 < len(pages):
            response["NextToken"] = f"page{i + 1}"
        params: dict[str, Any] = {"ServiceCode": "ec2", "MaxResults": 100}
        if i:
            params["NextToken"] = f"page{i}"
        out.append(("list_service_quotas", response, params))
    return out


def rows_by(result: aws.FetchResult) -> dict[tuple[str, str, str], int]:
    return {(r.region, r.gpu, r.market.value): r.max_gpus for r in result.rows}


NO_WAIT = Backoff(sleep=lambda _s: None)


def test_vcpu_quotas_become_gpus_per_offered_machine(moto_url: str) -> None:
    answers = {"us-east-1": listing([quota(P_ON_DEMAND, 1536.0), quota("L-1216C47A", 5000.0)],
                                    [quota(P_SPOT, 400.0), quota(G_ON_DEMAND, 64.0), quota(G_SPOT, 0.0)])}
    clients = Clients(moto_url, answers)
    result = aws.fetch(["us-east-1"], clients, NO_WAIT)
    got = rows_by(result)
    # P family: 1536 vCPUs / 192 per p5.48xlarge = 8 nodes x 8 GPUs; p4d has 96 vCPUs: 16 nodes x 8
    assert got[("us-east-1", "H100", "on_demand")] == 64
    assert got[("us-east-1", "A100-40GB", "on_demand")] == 128
    assert got[("us-east-1", "B200", "on_demand")] == 64
    assert got[("us-east-1", "H100", "spot")] == 16  # 400 // 192 = 2 nodes
    assert got[("us-east-1", "L4", "on_demand")] == 0  # 64 vCPUs < one 192-vCPU g6.48xlarge
    assert all(r.cloud is Cloud.AWS for r in result.rows)
    assert any("L-417A185B" in w and "shared by" in w for w in result.warnings)
    for stubber in clients.stubbers:
        stubber.assert_no_pending_responses()


def test_codes_without_an_applied_value_use_the_aws_default(moto_url: str) -> None:
    answers = {"ap-south-1": [
        *listing([quota(P_ON_DEMAND, 384.0), quota(G_ON_DEMAND, 192.0)]),
        ("get_aws_default_service_quota", {"Quota": quota(G_SPOT, 0.0)}, {"ServiceCode": "ec2", "QuotaCode": G_SPOT}),
        ("get_aws_default_service_quota", {"Quota": quota(P_SPOT, 192.0)},
         {"ServiceCode": "ec2", "QuotaCode": P_SPOT}),
    ]}
    result = aws.fetch(["ap-south-1"], Clients(moto_url, answers), NO_WAIT)
    got = rows_by(result)
    assert got[("ap-south-1", "H100", "on_demand")] == 16
    assert got[("ap-south-1", "H100", "spot")] == 8
    assert got[("ap-south-1", "L4", "on_demand")] == 8
    assert ("ap-south-1", "H200", "on_demand") in got  # p5en is offered there (moto's data)


def test_throttling_is_retried_with_backoff(moto_url: str) -> None:
    waits: list[float] = []
    params = {"ServiceCode": "ec2", "MaxResults": 100}
    answers = {"eu-west-1": [("error", {"code": "ThrottlingException", "status": 400}, params),
                             ("error", {"code": "TooManyRequestsException", "status": 429}, params),
                             *listing([quota(P_ON_DEMAND, 96.0), quota(P_SPOT, 0.0), quota(G_ON_DEMAND, 0.0),
                                       quota(G_SPOT, 0.0)])]}
    backoff = Backoff(sleep=waits.append, jitter=lambda: 1.0, base_s=0.5)
    result = aws.fetch(["eu-west-1"], Clients(moto_url, answers), backoff)
    assert waits == [0.5, 1.0]  # exponential
    got = rows_by(result)
    assert (got[("eu-west-1", "A100-40GB", "on_demand")], got[("eu-west-1", "A100-40GB", "spot")]) == (8, 0)
    assert ("eu-west-1", "H100", "on_demand") not in got  # moto: no p5 in eu-west-1
    assert not [w for w in result.warnings if "eu-west-1" in w]


def test_a_failing_region_is_a_warning_and_the_others_still_count(moto_url: str) -> None:
    answers = {"us-west-2": [("error", {"code": "AccessDeniedException", "status": 403},
                              {"ServiceCode": "ec2", "MaxResults": 100})],
               "eu-west-1": listing([quota(P_ON_DEMAND, 192.0), quota(P_SPOT, 0.0), quota(G_ON_DEMAND, 0.0),
                                     quota(G_SPOT, 0.0)])}
    result = aws.fetch(["us-west-2", "eu-west-1"], Clients(moto_url, answers), NO_WAIT)
    assert {r.region for r in result.rows} == {"eu-west-1"}
    (warning,) = [w for w in result.warnings if "us-west-2" in w]
    assert "AccessDeniedException" in warning and "retry later" in warning


def test_regions_default_to_describe_regions(moto_url: str) -> None:
    everything = [quota(c, 192.0) for c in (P_ON_DEMAND, P_SPOT, G_ON_DEMAND, G_SPOT)]

    class Any_(Clients):
        def __call__(self, service: str, region: str) -> Any:
            self.answers.setdefault(region, listing(everything))
            return super().__call__(service, region)

    result = aws.fetch(None, Any_(moto_url, {}), NO_WAIT)
    regions = {r.region for r in result.rows}
    assert {"us-east-1", "us-west-2", "eu-west-1"} <= regions
    assert all(r.market in (Market.ON_DEMAND, Market.SPOT) for r in result.rows)
