"""Replacement rules for the provider resources the stacks emit (pulumi:providers:aws, gcp, azure-native, azuread,
kubernetes), and the engine's cascade: a replaced provider replaces every resource it manages.

Expected effects are typed from the sources, not read from the table:
* engine: pulumi/pulumi pkg/resource/deploy/step_generator.go @00285a9b (providerChanged: a provider whose DiffConfig
  reports a replacement makes each of its resources a replacement, ReplaceKeys ["provider"]);
* aws: pulumi-aws provider/resources.go @00ba5ea5 (Config "region": ForcesProviderReplace: tfbridge.True(), no
  other key) with pulumi-terraform-bridge pkg/tfbridge/provider.go @00001f16 (configDiffer: replace only on
  ForcesProviderReplace keys);
* gcp @37bf55d4, azuread @5fd70c3f: no ForcesProviderReplace in Config;
* azure-native provider/pkg/provider/provider.go @6d9e7fe5: DiffConfig returns no Replaces;
* kubernetes provider/pkg/provider/provider.go @010f5d8e: DiffConfig replaces on an unknown kubeconfig / context /
  cluster, on a change of the active cluster, on renderYamlToDirectory, on clusterIdentifier updated (not added).
"""

from __future__ import annotations

import pytest

from gpufleet.engine.capture import Resource
from gpufleet.review.diff import Op, diff_resources
from gpufleet.review.replacements import Effect, classify


def kubeconfig(server: str, token: str = "t1", current: str = "ctx") -> str:
    return f"""apiVersion: v1
kind: Config
current-context: {current}
contexts:
- name: ctx
  context: {{cluster: gpu, user: admin}}
- name: other
  context: {{cluster: cpu, user: admin}}
clusters:
- name: gpu
  cluster: {{server: "{server}", certificate-authority-data: QUJD}}
- name: cpu
  cluster: {{server: "https://cpu.example", certificate-authority-data: REVG}}
users:
- name: admin
  user: {{token: {token}}}
"""


K8S = "pulumi:providers:kubernetes"


@pytest.mark.parametrize(("type_", "path", "old", "new", "effect"), [
    ("pulumi:providers:aws", "region", "us-east-1", "us-west-2", Effect.REPLACE),
    ("pulumi:providers:aws", "skipCredentialsValidation", "false", "true", Effect.IN_PLACE),
    ("pulumi:providers:aws", "defaultTags.tags.team", "a", "b", Effect.IN_PLACE),
    ("pulumi:providers:gcp", "project", "p-1", "p-2", Effect.IN_PLACE),
    ("pulumi:providers:gcp", "region", "us-central1", "europe-west4", Effect.IN_PLACE),
    ("pulumi:providers:gcp", "defaultLabels.team", "a", "b", Effect.IN_PLACE),
    ("pulumi:providers:azure-native", "location", "eastus", "eastus2", Effect.IN_PLACE),
    ("pulumi:providers:azure-native", "subscriptionId", "a", "b", Effect.IN_PLACE),
    ("pulumi:providers:azuread", "useMsi", "false", "true", Effect.IN_PLACE),
    (K8S, "enableServerSideApply", "true", "false", Effect.IN_PLACE),
    (K8S, "namespace", "a", "b", Effect.IN_PLACE),
    (K8S, "renderYamlToDirectory", None, "out/", Effect.REPLACE),
    (K8S, "clusterIdentifier", "blue", "green", Effect.REPLACE),  # updated
    (K8S, "clusterIdentifier", None, "blue", Effect.IN_PLACE),  # added: on-boarding never replaces
    (K8S, "clusterIdentifier", "blue", None, Effect.IN_PLACE),  # removed
    (K8S, "kubeconfig", kubeconfig("https://a.example"), kubeconfig("https://b.example"), Effect.REPLACE),
    (K8S, "kubeconfig", kubeconfig("https://a.example", "t1"), kubeconfig("https://a.example", "t2"),
     Effect.IN_PLACE),  # credentials only: the active cluster is the same
    (K8S, "kubeconfig", kubeconfig("https://a.example"), kubeconfig("https://a.example", current="other"),
     Effect.REPLACE),  # another context, another cluster
    (K8S, "kubeconfig", kubeconfig("https://a.example"), "[unknown]", Effect.REPLACE),  # computed: plays safe
    (K8S, "kubeconfig", "[secret]", "[secret]x", Effect.UNKNOWN),  # cannot be read: not guessed
    (K8S, "context", "a", "[unknown]", Effect.REPLACE),
    (K8S, "context", "a", "b", Effect.UNKNOWN),  # needs the kubeconfig to resolve
])
def test_provider_rules(type_: str, path: str, old: object, new: object, effect: Effect) -> None:
    found = classify(type_, path, old, new)
    assert found.effect is effect
    assert found.source.startswith("https://")


def res(type_: str, name: str, provider: str | None, **inputs: object) -> Resource:
    return Resource(type=type_, name=name, parent=None, custom=True, inputs=dict(inputs), dependencies=[],
                    provider=provider)


AWS_A, AWS_B = "pulumi:providers:aws::train-aws", "pulumi:providers:aws::eval-aws"
NG = "aws:eks/nodeGroup:NodeGroup"


def fleet(region: str, gcp_project: str = "p-1", size: int = 8) -> list[Resource]:
    return [res("pulumi:providers:aws", "train-aws", None, region=region),
            res("pulumi:providers:aws", "eval-aws", None, region="us-east-1"),
            res(NG, "train-h100-ng", AWS_A, instanceTypes=["p5.48xlarge"], scalingConfig={"maxSize": size}),
            res(NG, "train-l4-ng", AWS_A, instanceTypes=["g6.xlarge"]),
            res(NG, "eval-ng", AWS_B, instanceTypes=["g6.xlarge"]),
            res("pulumi:providers:gcp", "gcp", None, project=gcp_project),
            res("gcp:container/nodePool:NodePool", "pool", "pulumi:providers:gcp::gcp", nodeCount=1)]


def test_a_replaced_provider_replaces_every_resource_it_manages() -> None:
    diff = diff_resources("s", fleet("us-east-1"), fleet("us-west-2", size=16))
    ops = {c.name: (c.op, c.label) for c in diff.changes}
    assert ops == {"train-aws": (Op.REPLACE, "replace"), "train-h100-ng": (Op.REPLACE, "replace"),
                   "train-l4-ng": (Op.REPLACE, "replace")}  # eval-ng has another provider; gcp did not change
    h100 = next(c for c in diff.changes if c.name == "train-h100-ng")
    assert [(p.path, p.effect) for p in h100.paths] == [("scalingConfig.maxSize", Effect.IN_PLACE),
                                                       ("provider", Effect.REPLACE)]
    assert "step_generator.go" in h100.paths[-1].source


def test_an_updated_provider_leaves_its_resources_alone() -> None:
    diff = diff_resources("s", fleet("us-east-1"), fleet("us-east-1", gcp_project="p-2"))
    assert [(c.name, c.op, c.label) for c in diff.changes] == [("gcp", Op.UPDATE, "update")]


def test_a_resource_moved_to_another_provider_is_not_cascaded() -> None:
    base = fleet("us-east-1")
    head = fleet("us-west-2")
    head[2] = res(NG, "train-h100-ng", AWS_B, instanceTypes=["p5.48xlarge"], scalingConfig={"maxSize": 8})
    names = {c.name for c in diff_resources("s", base, head).changes}
    assert "train-h100-ng" not in names and "train-l4-ng" in names
