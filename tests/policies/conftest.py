"""One running policy pack per test session, and the graphs the policy tests judge (captured lazily, once)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gpufleet.checks.analyzer import PolicyPack, Verdict, fleet_config
from gpufleet.engine.preview import preview_stack
from stacks.config import STACKS_DIR
from tests.policies import crafted
from tests.policies.helpers import Base, judge

CRAFTED = {"gke": crafted.gcp_graph, "aks": crafted.azure_graph}


class Bases(dict[str, Base]):
    """Example stacks by name (captured by the real program under mocks) and the crafted GKE / AKS graphs."""

    def __missing__(self, name: str) -> Base:
        if name in CRAFTED:
            base = Base(CRAFTED[name](), crafted.CONFIG)
        else:
            preview = preview_stack(name, STACKS_DIR)
            assert preview.ok and preview.graph and preview.fleet, preview.errors
            base = Base(preview.graph, fleet_config(preview.fleet))
        self[name] = base
        return base


class Verdicts(dict[str, list[Verdict]]):
    def __init__(self, pack: PolicyPack, bases: Bases):
        super().__init__()
        self.pack, self.bases = pack, bases

    def __missing__(self, name: str) -> list[Verdict]:
        base = self.bases[name]
        self[name] = judge(self.pack, base.graph, base.config)
        return self[name]


@pytest.fixture(scope="session")
def pack() -> Iterator[PolicyPack]:
    with PolicyPack() as running:
        yield running


@pytest.fixture(scope="session")
def bases() -> Bases:
    return Bases()


@pytest.fixture(scope="session")
def base_verdicts(pack: PolicyPack, bases: Bases) -> Verdicts:
    """Every policy's verdicts on each base, judged once."""
    return Verdicts(pack, bases)
