"""Run the gpufleet policy pack over a captured graph through the analyzer gRPC protocol, as the Pulumi CLI does.

The pack (policies/__main__.py) is started as a subprocess with the environment the CLI gives policy packs
(PULUMI_PROJECT, PULUMI_STACK, PULUMI_DRY_RUN, PULUMI_CONFIG); the Python policy SDK then serves the Analyzer
service on 127.0.0.1 and prints its port. The Python SDK never dials the engine (it logs nothing through it and
reads no engine address), so no Engine server is needed. We then speak ``AnalyzerStub``: GetAnalyzerInfo,
Configure (every policy with its level and properties), Analyze per resource and AnalyzeStack once.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import empty_pb2, json_format, struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

from components.fleet import Fleet
from components.spec import CapacityType
from gpufleet.engine.capture import UNKNOWN_MASK, Graph, Resource, urn_key

PACK_DIR = Path(__file__).resolve().parents[2] / "policies"
_UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"  # the engine's unknown-value sentinel
_OPTIONS = [("grpc.max_receive_message_length", 400 * 1024 * 1024), ("grpc.max_send_message_length", 400 * 1024 * 1024)]
PolicyConfig = Mapping[str, Mapping[str, Any]]  # policy name (or "all") -> {enforcementLevel?, properties...}


class Level(StrEnum):
    ADVISORY = "advisory"
    MANDATORY = "mandatory"
    DISABLED = "disabled"
    REMEDIATE = "remediate"


_TO_PROTO = {Level.ADVISORY: analyzer_pb2.ADVISORY, Level.MANDATORY: analyzer_pb2.MANDATORY,
             Level.DISABLED: analyzer_pb2.DISABLED, Level.REMEDIATE: analyzer_pb2.REMEDIATE}
_FROM_PROTO = {v: k for k, v in _TO_PROTO.items()}


@dataclass(frozen=True)
class PolicyInfo:
    name: str
    description: str
    level: Level
    kind: str  # "resource" or "stack"
    config_schema: dict[str, Any] = field(default_factory=dict)  # property -> JSON schema


@dataclass(frozen=True)
class Verdict:
    """One violation: which policy, how hard, what is wrong, and the resource ("type::name"; None: the stack)."""

    policy: str
    level: Level
    message: str
    resource: str | None
    description: str = ""

    @property
    def mandatory(self) -> bool:
        return self.level in (Level.MANDATORY, Level.REMEDIATE)


class PolicyPackError(RuntimeError):
    """The pack did not start, or its configuration is wrong."""


def urns(graph: Graph) -> dict[str, str]:
    """Resource key -> the URN the engine would give it (parent types joined by '$')."""
    by_key, out = graph.by_key(), {}

    def qualified(r: Resource) -> str:
        parent = by_key.get(r.parent) if r.parent else None
        return f"{qualified(parent)}${r.type}" if parent else r.type

    for r in graph.resources:
        out[r.key] = f"urn:pulumi:{graph.stack}::{graph.project}::{qualified(r)}::{r.name}"
    return out


def _wire(value: Any) -> Any:
    """Captured inputs back to wire form: the preview's unknown mask becomes the engine's unknown sentinel."""
    if isinstance(value, dict):
        return {k: _wire(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_wire(v) for v in value]
    return _UNKNOWN if value == UNKNOWN_MASK else value


def _struct(value: Mapping[str, Any]) -> struct_pb2.Struct:
    s = struct_pb2.Struct()
    s.update(_wire(dict(value)))
    return s


def fleet_config(fleet: Fleet) -> dict[str, dict[str, Any]]:
    """The policy config a fleet spec implies: its budget and the pools it puts on spot."""
    spot = [f"{c.name}/{p.name}" for c in fleet.clusters for p in c.pools if p.capacity is CapacityType.SPOT]
    return {"stack-monthly-budget": {"monthly_budget_usd": fleet.spec.monthly_budget_usd},
            "spot-only-where-allowed": {"spot_pools": spot}}


class Analyzer:
    """The client side of the analyzer protocol over ``stub`` (an ``AnalyzerStub``, or any object with its methods):
    configure the policies, then analyze graphs. ``PolicyPack`` runs the pack and gives it a gRPC stub."""

    def __init__(self, stub: Any):
        self.stub = stub
        self.policies = self._info()

    def _info(self) -> dict[str, PolicyInfo]:
        info = self.stub.GetAnalyzerInfo(empty_pb2.Empty())
        kinds = {analyzer_pb2.POLICY_TYPE_STACK: "stack"}
        return {p.name: PolicyInfo(p.name, p.description, _FROM_PROTO[p.enforcementLevel],
                                   kinds.get(p.policy_type, "resource"),
                                   json_format.MessageToDict(p.configSchema.properties))
                for p in info.policies}

    def configure(self, config: PolicyConfig | None = None) -> None:
        """Every policy gets its level (configured, else ``all``'s, else its default) and its properties."""
        config = dict(config or {})
        unknown = sorted(set(config) - set(self.policies) - {"all"})
        if unknown:
            raise PolicyPackError(f"policy config names unknown policies {unknown}; known: {sorted(self.policies)}")
        default = config.get("all", {}).get("enforcementLevel")
        request = analyzer_pb2.ConfigureAnalyzerRequest()
        for name, policy in self.policies.items():
            given = dict(config.get(name, {}))
            level = Level(given.pop("enforcementLevel", None) or default or policy.level)
            extra = sorted(set(given) - set(policy.config_schema))
            if extra:
                raise PolicyPackError(f"{name}: unknown config {extra}; known: {sorted(policy.config_schema)}")
            request.policyConfig[name].CopyFrom(analyzer_pb2.PolicyConfig(
                enforcementLevel=_TO_PROTO[level], properties=_struct(given)))
        self.stub.Configure(request)

    def _verdicts(self, response: analyzer_pb2.AnalyzeResponse, resource: str | None) -> list[Verdict]:
        out = []
        for d in response.diagnostics:
            message = d.message[len(d.description) + 1:] if d.message.startswith(d.description + "\n") else d.message
            out.append(Verdict(d.policyName, _FROM_PROTO[d.enforcementLevel], message,
                               urn_key(d.urn) if d.urn else resource, d.description))
        return out

    def analyze(self, graph: Graph) -> list[Verdict]:
        """Analyze every resource, then the stack; resource verdicts in graph order, stack verdicts last."""
        return self.analyze_resources(graph) + self.analyze_stack(graph)

    def analyze_resources(self, graph: Graph, keys: set[str] | None = None) -> list[Verdict]:
        """Analyze (the resource policies) for every resource of ``graph``, or only those in ``keys``."""
        by_urn, by_key, verdicts = urns(graph), graph.by_key(), []
        for r in graph.resources:
            if keys is None or r.key in keys:
                request = analyzer_pb2.AnalyzeRequest(type=r.type, name=r.name, urn=by_urn[r.key],
                                                      properties=_struct(r.inputs), options=self._options(r, by_urn))
                _set_provider(request, r, by_key, by_urn)
                verdicts += self._verdicts(self.stub.Analyze(request), r.key)
        return verdicts

    def analyze_stack(self, graph: Graph) -> list[Verdict]:
        """AnalyzeStack (the stack policies) over the whole graph, parents and dependencies as URNs."""
        by_urn, by_key = urns(graph), graph.by_key()
        resources = [analyzer_pb2.AnalyzerResource(
            type=r.type, name=r.name, urn=by_urn[r.key], properties=_struct(r.inputs),
            options=self._options(r, by_urn), parent=by_urn.get(r.parent or "", ""),
            dependencies=[by_urn[d] for d in r.dependencies if d in by_urn]) for r in graph.resources]
        for resource, r in zip(resources, graph.resources, strict=True):  # the engine sends each one's provider too
            _set_provider(resource, r, by_key, by_urn)
        return self._verdicts(self.stub.AnalyzeStack(analyzer_pb2.AnalyzeStackRequest(resources=resources)), None)

    @staticmethod
    def _options(r: Resource, by_urn: Mapping[str, str]) -> analyzer_pb2.AnalyzerResourceOptions:
        return analyzer_pb2.AnalyzerResourceOptions(parent=by_urn.get(r.parent or "", ""))

class PolicyPack(Analyzer):
    """A running policy pack; use as a context manager, or call ``close()``."""

    def __init__(self, pack_dir: Path = PACK_DIR, python: str = sys.executable, timeout_s: float = 60.0,
                 stack_config: Mapping[str, str] | None = None):
        """``stack_config``: the stack's config as the CLI passes it in PULUMI_CONFIG ("gpufleet:fleet" -> JSON);
        gpufleet passes fleet facts as policy config instead, so by default the pack sees none."""
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the process; closed in close()
        env = {**os.environ, "PULUMI_PROJECT": "gpufleet", "PULUMI_STACK": "preview", "PULUMI_DRY_RUN": "true",
               "PULUMI_CONFIG": json.dumps(dict(stack_config or {}))}
        self._process = subprocess.Popen([python, "-u", str(pack_dir / "__main__.py")], cwd=pack_dir, env=env,
                                         stdout=subprocess.PIPE, stderr=self._stderr, stdin=subprocess.DEVNULL)
        port = self._read_port(timeout_s)
        self._channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=_OPTIONS)
        super().__init__(analyzer_pb2_grpc.AnalyzerStub(self._channel))

    def _read_port(self, timeout_s: float) -> int:
        assert self._process.stdout is not None
        ready, _, _ = select.select([self._process.stdout], [], [], timeout_s)
        line = self._process.stdout.readline() if ready else b""
        if not line.strip().isdigit():
            self._stderr.seek(0)  # before close(), which closes this file
            detail = self._stderr.read().decode(errors="replace").strip().splitlines()[-5:]
            self.close()
            raise PolicyPackError("the policy pack did not start: " + (" | ".join(detail) or "no port printed"))
        return int(line)

    def close(self) -> None:
        if getattr(self, "_channel", None) is not None:
            self._channel.close()
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
        if self._process.stdout:
            self._process.stdout.close()
        self._stderr.close()

    def __enter__(self) -> PolicyPack:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _set_provider(message: Any, r: Resource, by_key: Mapping[str, Resource], by_urn: Mapping[str, str]) -> None:
    """Fill the request's provider (an AnalyzeRequest or AnalyzerResource) from the resource's explicit provider."""
    provider = by_key.get(r.provider or "")
    if provider is not None:
        message.provider.CopyFrom(analyzer_pb2.AnalyzerProviderResource(
            type=provider.type, name=provider.name, urn=by_urn[provider.key], properties=_struct(provider.inputs)))


def analyze(graph: Graph, config: PolicyConfig | None = None, pack: PolicyPack | None = None) -> list[Verdict]:
    """Verdicts of the policy pack on ``graph``; starts (and stops) a pack unless a running one is given."""
    if pack is not None:
        pack.configure(config)
        return pack.analyze(graph)
    with PolicyPack() as started:
        started.configure(config)
        return started.analyze(graph)


def stack_policy_config(stack: str, stacks_dir: Path | None = None) -> dict[str, dict[str, Any]]:
    """``fleet_config`` of an example stack's fleet spec (its budget and spot pools), read from its stack file."""
    from stacks.config import STACKS_DIR, load_stack, stack_file

    return fleet_config(load_stack(stack_file(stack, stacks_dir or STACKS_DIR))[1])


def merge_config(*configs: PolicyConfig | None) -> dict[str, dict[str, Any]]:
    """Later configs win, property by property (e.g. the fleet's budget, then a user's config file)."""
    out: dict[str, dict[str, Any]] = {}
    for config in configs:
        for name, props in (config or {}).items():
            out.setdefault(name, {}).update(props)
    return out


def load_config(path: Path) -> dict[str, dict[str, Any]]:
    """A ``--policy-pack-config`` JSON file, as the Pulumi CLI reads it."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise PolicyPackError(f"{path}: cannot read policy config: {err}") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise PolicyPackError(f"{path}: policy config must map policy names to objects")
    return data
