"""The pack's entry point, started by the Pulumi CLI (or gpufleet.checks.analyzer): serves the Analyzer gRPC service
and prints its port on stdout."""

import sys
from pathlib import Path

# Import from the project root (components/, policies/), not from this directory, whose module names
# (security, gpu, cost) must not shadow anything.
_HERE = Path(__file__).resolve().parent
sys.path = [str(_HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from pulumi_policy import EnforcementLevel, PolicyPack  # noqa: E402

from policies import serve  # noqa: E402
from policies.pack import NAME, all_policies  # noqa: E402

serve.install()
PolicyPack(name=NAME, policies=all_policies(), enforcement_level=EnforcementLevel.ADVISORY)
