"""policies/serve.py decodes each resource once per request instead of once per policy: every response must be the
one the policy SDK's own servicer gives. Both servicers run in this process and answer the same requests, built by
gpufleet's analyzer client (the gRPC path itself is what the other policy tests drive, through the started pack)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from google.protobuf.message import Message
from pulumi_policy import EnforcementLevel

from gpufleet.checks.analyzer import Analyzer, merge_config
from gpufleet.engine.capture import UNKNOWN_MASK
from policies import serve
from policies.pack import NAME, all_policies
from tests.policies import (
    cases_budget,
    cases_cost,
    cases_gpu,
    cases_ledger,
    cases_reliability,
    cases_security,
    cases_storage,
)
from tests.policies import keys as k
from tests.policies.conftest import Bases
from tests.policies.helpers import Base, Case, mutate

# one crafted violation per theme (resource and stack policies, advisory and mandatory, config-driven ones)
CASES: list[Case] = [m.CASES[0] for m in (cases_security, cases_gpu, cases_cost, cases_ledger, cases_reliability,
                                          cases_budget)] + cases_storage.CRAFTED[:1]


class Twin:
    """A stub answering each call with the SDK's servicer and with serve.Servicer, and counting the calls after
    asserting the two responses are the same message."""

    def __init__(self) -> None:
        serve.install()
        self.sdk = serve.SdkServicer(NAME, "0.0.1", all_policies(), EnforcementLevel.ADVISORY)
        self.served = serve.Servicer(NAME, "0.0.1", all_policies(), EnforcementLevel.ADVISORY)
        self.compared: dict[str, int] = {}

    def __getattr__(self, method: str) -> Any:
        def call(request: Message) -> Message:
            expected, got = getattr(self.sdk, method)(request, None), getattr(self.served, method)(request, None)
            assert got == expected, f"{method} answered differently"
            self.compared[method] = self.compared.get(method, 0) + 1
            return got
        return call


@pytest.fixture(scope="module")
def twin() -> Twin:
    return Twin()


def _judged(twin: Twin, base: Base, config: dict[str, Any], graph: Any) -> None:
    client = Analyzer(twin)
    client.configure(merge_config(base.config, config))
    before = dict(twin.compared)
    client.analyze(graph)
    assert twin.compared.get("Analyze", 0) - before.get("Analyze", 0) == len(graph.resources)
    assert twin.compared.get("AnalyzeStack", 0) - before.get("AnalyzeStack", 0) == 1


@pytest.mark.parametrize("name", ["aws-train", "dev", "gke", "aks"])  # the graphs the other policy tests judge
def test_compliant_graphs_are_answered_the_same(twin: Twin, bases: Bases, name: str) -> None:
    _judged(twin, bases[name], {}, bases[name].graph)


@pytest.mark.parametrize("case", CASES, ids=[f"{c.policy}-{c.base}" for c in CASES])
def test_violations_are_answered_the_same(twin: Twin, bases: Bases, case: Case) -> None:
    _judged(twin, bases[case.base], case.config, case.graph(bases[case.base]))


def test_unknown_values_and_every_policy_disabled_are_answered_the_same(twin: Twin, bases: Bases) -> None:
    """Values unknown during a real preview reach the proxies (UnknownValueError diagnostics); a disabled pack
    runs nothing."""
    base = bases["aws-train"]
    graph = mutate(base.graph, k.NG_A100, {"subnetIds": UNKNOWN_MASK, "launchTemplate.id": UNKNOWN_MASK,
                                           "instanceTypes": UNKNOWN_MASK, "tags": UNKNOWN_MASK})
    _judged(twin, base, {}, graph)
    _judged(twin, base, {"all": {"enforcementLevel": "disabled"}}, graph)


def test_the_pack_serves_the_memoising_servicer() -> None:
    """The pack's entry installs it; without that the pack is right but decodes each resource once per policy."""
    import pulumi_policy.policy as sdk

    serve.install()
    assert sdk._PolicyAnalyzerServicer is serve.Servicer
    assert "serve.install()" in (Path(serve.__file__).parent / "__main__.py").read_text()
