"""The offline preview of one stack: validate its fleet, run its program under mocks, summarise the graph.

The JSON document (schema gpufleet.preview/v1) is documented in docs/preview-json.md; keep them in step.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.deploy_path import deploy_path
from components.errors import SpecError
from components.fleet import Fleet
from gpufleet.checks.analyzer import fleet_config
from gpufleet.engine.capture import Graph
from gpufleet.engine.shares import run_in_shares, shares
from stacks.config import PEERS_DIR, capacity_plan, check_peers, display, load_stack, stack_file

SCHEMA = "gpufleet.preview/v1"


@dataclass
class Preview:
    stack: str
    graph: Graph | None = None
    fleet: Fleet | None = None
    errors: list[str] = field(default_factory=list)
    source: str | None = None  # the stack file as notes name it
    capacity_plan: dict[str, Any] | None = None  # stacks.config.PLAN_KEY: what the accepted plan costs here

    @property
    def ok(self) -> bool:
        return not self.errors

    def gpus(self) -> dict[str, int]:
        """GPUs by model at every pool's nodes.max: what quotas and budgets must cover."""
        total: Counter[str] = Counter()
        for cluster in self.fleet.clusters if self.fleet else ():
            total.update(cluster.gpus_by_model())
        return dict(sorted(total.items()))

    def notes(self) -> list[str]:
        """What validation decided for the user (a GPU family resolved to its default product) and what the program
        warned of (a subscription feature to register), one line each, each once."""
        found = [n.render(self.source) for n in self.fleet.notes] if self.fleet else []
        return list(dict.fromkeys([*found, *(self.graph.warnings if self.graph else [])]))

    def deploy(self) -> dict[str, dict[str, Any]]:
        """Per cluster: the path its `pulumi up` takes to the API server (components/deploy_path.py) and the
        Alertmanager receivers that page (names only: their secrets stay in Kubernetes Secrets)."""
        return {c.name: {**deploy_path(c.cloud, c.spec).document(),
                         "receivers": [r.name for r in c.spec.addons.alerting.receivers]}
                for c in (self.fleet.clusters if self.fleet else ())}
    def pools(self) -> list[dict[str, Any]]:
        """Per GPU pool what a reviewer checks first: machine, size, how it is bought, where it runs."""
        return [{"cluster": c.name, "pool": p.name, "machine_type": p.machine.name, "gpu": p.machine.gpu,
                 "gpus_per_node": p.machine.gpus, "nodes_min": p.spec.nodes.min, "nodes_max": p.spec.nodes.max,
                 "gpus_max": p.max_gpus, "capacity": p.capacity.value, "capacity_id": p.spec.capacity.id,
                 "zone": p.zone}
                for c in (self.fleet.clusters if self.fleet else ()) for p in c.pools]

    def counts_by_type(self) -> dict[str, int]:
        resources = self.graph.resources if self.graph else []
        return dict(sorted(Counter(r.type for r in resources).items()))

    def document(self) -> dict[str, Any]:
        resources = self.graph.resources if self.graph else []
        return {
            "schema": SCHEMA,
            "project": self.graph.project if self.graph else "gpufleet",
            "stack": self.stack,
            "resources": [{"type": r.type, "name": r.name, "parent": r.parent, "custom": r.custom,
                           "inputs": r.inputs, "dependencies": r.dependencies, "provider": r.provider,
                           **({"protect": True} if r.protect else {})}
                          for r in resources],
            "summary": {"resources": len(resources), "gpus": self.gpus()},
            "pools": self.pools(),
            "notes": self.notes(),
            "deploy": self.deploy(),
            "policy_config": fleet_config(self.fleet) if self.fleet else {},
            "capacity_plan": self.capacity_plan,
            "errors": self.errors,
        }


def preview_stack(stack: str, stacks_dir: Path, processes: int = 1) -> Preview:
    """Never raises for bad config: problems land in ``errors`` and nothing is registered. A stack of several clusters
    runs in up to ``processes`` shares at once (0: one per CPU core; gpufleet/engine/shares.py)."""
    path = stack_file(stack, stacks_dir)
    try:
        config, fleet = load_stack(path)
        plan = capacity_plan(config, display(path))
        check_peers(stack, fleet, display(path), stacks_dir)
    except SpecError as err:
        return Preview(stack=stack, errors=[p.render(err.source) for p in err.problems])
    peers = PEERS_DIR.set(stacks_dir)  # the program reads the stacks its MultiKueue clusters name from there too
    try:
        graph = run_in_shares(stack, config, stacks_dir, shares(processes, len(fleet.clusters)))
    finally:
        PEERS_DIR.reset(peers)
    return Preview(stack=stack, graph=graph, fleet=fleet, source=display(path), capacity_plan=plan)

