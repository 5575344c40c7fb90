"""One running policy pack per session for the invariant tests, and the hypothesis profiles they run under.

``GPUFLEET_INVARIANTS=long`` (used by ``make bench``) runs many more generated fleets than ``make test`` does.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, Phase, settings

from gpufleet.checks.analyzer import PolicyPack

_COMMON = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
           "derandomize": os.environ.get("GPUFLEET_HYPOTHESIS") != "explore"}  # as tests/conftest.py says
# Shrinking re-runs whole previews many times: make test reports the failing fleet unshrunk (printed in full).
settings.register_profile("invariants-quick", max_examples=4, phases=[Phase.explicit, Phase.reuse, Phase.generate],
                          **_COMMON)
settings.register_profile("invariants-long", max_examples=150, **_COMMON)
PROFILE = "invariants-long" if os.environ.get("GPUFLEET_INVARIANTS") == "long" else "invariants-quick"


@pytest.fixture(scope="session")
def pack() -> Iterator[PolicyPack]:
    with PolicyPack() as running:
        yield running
