"""The derivations scripts/refresh_upstream.py runs, on small upstream-shaped inputs with hand-computed facts;
and the digests on disk are well formed and carry their source."""

from __future__ import annotations

import re

import pytest
import yaml

from components.k8s import upstream
from components.k8s.upstream import derive, derive_manifests

CRD = yaml.safe_load("""
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
spec:
  group: example.com
  names: {kind: Widget}
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: false
    storage: false
    schema: {openAPIV3Schema: {type: object}}
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          apiVersion: {type: string}
          metadata: {type: object}
          spec:
            type: object
            required: [size]
            properties:
              size: {x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}]}
              mode: {type: string, enum: [a, b], description: prose is dropped}
              labels: {type: object, additionalProperties: {type: string}}
              items: {type: array, maxItems: 2, items: {type: object, properties: {n: {type: integer}}}}
              raw: {type: object, x-kubernetes-preserve-unknown-fields: true}
""")


def test_crd_facts_flatten_the_served_schema() -> None:
    facts = derive.crd_facts(CRD)
    assert (facts["group"], facts["kind"], facts["served"], facts["storage"]) == ("example.com", "Widget", ["v1"], "v1")
    assert facts["fields"]["v1"] == {
        "spec": {"type": "object", "required": ["size"]},
        "spec.size": {"intOrString": True},
        "spec.mode": {"type": "string", "enum": ["a", "b"]},
        "spec.labels": {"type": "object"}, "spec.labels{}": {"type": "string"},
        "spec.items": {"type": "array", "maxItems": 2}, "spec.items[]": {"type": "object"},
        "spec.items[].n": {"type": "integer"},
        "spec.raw": {"type": "object", "preserve": True},
    }


def test_chart_facts_and_workload_facts() -> None:
    template = '{{ toYaml .Values.nodeSelector }} {{ .Values.image.tag }} {{ index .Values "a-b" "c" }}'
    facts = derive.chart_facts("name: c\nversion: 1.2.3\ndependencies: [{name: d, version: 0.1.0}]\n",
                               "image: {tag: x}\nnodeSelector: {kubernetes.io/os: linux}\n", [template])
    # keys under a free-form key are dropped: anything goes there
    assert facts["keys"] == ["a-b.c", "image", "image.tag", "nodeSelector"]
    assert facts["free"] == ["a-b.c", "image.tag", "nodeSelector"]  # read whole by a template
    assert facts["dependencies"] == {"d": "0.1.0"}
    ds = yaml.safe_load("""
kind: DaemonSet
metadata: {name: i, namespace: kube-system}
spec:
  template:
    spec:
      hostPID: true
      initContainers: [{name: s, image: img, command: [sh], securityContext: {privileged: true},
                        volumeMounts: [{name: h, mountPath: /h}]}]
      containers: [{name: p, image: pause}]
      volumes: [{name: h, hostPath: {path: /home}}]
      affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [
        {matchExpressions: [{key: cloud.google.com/gke-accelerator, operator: In, values: [b, a]}]}]}}}
""")
    facts = derive_manifests.workload_facts(ds)
    assert facts["accelerators"] == ["a", "b"] and facts["hostPID"] and not facts["hostNetwork"]
    assert facts["initContainers"][0]["privileged"] and facts["initContainers"][0]["mounts"] == {"h": "/h"}
    assert facts["hostPaths"] == {"h": {"path": "/home"}}


def test_every_pin_has_a_digest_with_its_source() -> None:
    for name, row in upstream.pins().items():
        facts = upstream.digest(name)
        source = facts["source"]
        assert source["repository"] == f"https://github.com/{row['git']['repo']}"
        assert source["ref"] == str(row["git"]["ref"])
        assert re.fullmatch(r"[0-9a-f]{40}", source["commit"])
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", source["read"]) and source["paths"]
        if "chart" in row:
            assert "chart" in facts, name
        for path in row.get("crds", []):
            assert any(c["path"] == path for c in facts["crds"].values()), (name, path)
        assert set(row.get("manifests", {})) == set(facts.get("manifests", {})), name


GO = '''package constants

const (
\t// QueueLabel names the queue.
\tQueueLabel = "kueue.x-k8s.io/queue-name"
\tNode string = "node"
\tAligned             = "a/b"
\tPhaseComplete   InstallPlanPhase = "Complete"
)

var (
\tFrameworkName          = "ray.io/rayjob"
\tgvk = GroupVersion.WithKind("RayJob")
)
'''


def test_go_constants_reads_plain_typed_and_aligned_declarations() -> None:
    assert derive.go_constants(GO, ["QueueLabel", "Node", "Aligned", "FrameworkName", "PhaseComplete"]) == {
        "QueueLabel": "kueue.x-k8s.io/queue-name", "Node": "node", "Aligned": "a/b", "FrameworkName": "ray.io/rayjob",
        "PhaseComplete": "Complete"}  # a constant of a named string type (OLM's InstallPlanPhase)


def test_go_constants_names_what_is_missing() -> None:
    try:
        derive.go_constants(GO, ["QueueLabel", "gvk", "Nope"])
    except KeyError as err:
        assert "gvk, Nope" in str(err)  # a non-string value is not a constant we can read
    else:
        raise AssertionError("a missing constant must fail")


def test_images_in_finds_every_pod_template_however_deep_once_each() -> None:
    text = """
kind: RayJob
spec:
  rayClusterSpec:
    headGroupSpec: {template: {spec: {containers: [{name: h, image: ray:1}]}}}
    workerGroupSpecs:
    - template: {spec: {initContainers: [{name: i, image: busybox:1}], containers: [{name: w, image: ray:1}]}}
---
kind: ConfigMap
data: {image: not-a-container}
"""
    assert derive_manifests.images_in(text) == ["ray:1", "busybox:1"]


def test_ray_versions_in_reads_rayjobs_and_rayclusters_only() -> None:
    text = """
kind: RayJob
spec: {rayClusterSpec: {rayVersion: '2.46.0'}}
---
kind: RayCluster
spec: {rayVersion: 2.45}
---
kind: ConfigMap
data: {rayVersion: not-a-cluster}
"""
    assert derive_manifests.ray_versions_in(text) == ["2.46.0", "2.45"]


def test_operator_digests_carry_what_the_layer_reads() -> None:
    kueue = upstream.digest("kueue")
    frameworks = {v["FrameworkName"] for v in kueue["constants"].values() if "FrameworkName" in v}
    assert frameworks == {"batch/job", "ray.io/rayjob", "ray.io/raycluster", "jobset.x-k8s.io/jobset",
                          "trainer.kubeflow.org/trainjob"}
    assert "integrations:" in kueue["chart"]["defaults"]["managerConfig.controllerManagerConfigYaml"]
    assert upstream.digest("kuberay-operator")["images"]["pytorch-sample"]["images"]


def test_a_release_with_no_values_reads_nothing_unknown() -> None:
    facts = derive.chart_facts("name: c\nversion: 1.0.0\n", "a: 1\n", ["{{ .Values.a }}"])
    assert derive.unread_values({}, facts) == []
    assert derive.unread_values({"b": {}}, facts) == ["b"]


def test_go_structs_keeps_json_names_and_inline_embeddings() -> None:
    text = ('''type Outer struct {\n\tmetav1.TypeMeta `json:",inline"`\n\tInner `json:",inline"`\n'''
            '''\t// Wait is documented.\n\tWait *Wait `json:"waitForPodsReady,omitempty"`\n'''
            '''\tGates map[string]bool `json:"featureGates,omitempty"`\n}\n\ntype Other struct {\n}\n''')
    assert derive.go_structs(text, ["Outer"]) == {
        "Outer": {"fields": ["waitForPodsReady", "featureGates"], "inline": ["TypeMeta", "Inner"]}}
    try:
        derive.go_structs(text, ["Missing"])
    except KeyError as err:
        assert "Missing" in str(err)
    else:
        raise AssertionError("a missing struct must fail")


def test_go_flags_names_kingpin_flags_only() -> None:
    text = ('dir = kingpin.Flag("collector.textfile.directory", "Directory ...").Default("").Strings()\n'
            'x = kingpin.Flag(\n\t"collector.x.y", "help").Bool()\nname := "collector.not.a.flag"\n')
    assert derive.go_flags(text) == ["collector.textfile.directory", "collector.x.y"]


def test_go_backend_names_the_registered_backend_and_its_options() -> None:
    text = ('func init() {\n\tfs.Register(addProvidersToInfo(&fs.RegInfo{\n\t\tName:        "s3",\n'
            '\t\tOptions: []fs.Option{{\n\t\t\tName: fs.ConfigProvider,\n\t\t}, {\n\t\t\tName:    "env_auth",\n'
            '\t\t\tExamples: []fs.OptionExample{{Value: "true"}},\n\t\t}, {\n\t\t\tName: "region",\n\t\t}}}))\n}\n')
    assert derive.go_backend(text) == {"registers": "s3", "options": ["env_auth", "region"]}
    assert derive.go_backend('var ConfigOptions = []fs.Option{{\n\tName: "account",\n}}\n') == {
        "registers": "", "options": ["account"]}


def test_markdown_flags_reads_long_flags_of_the_flags_page() -> None:
    text = ("```\n      --checkers int     Number of checkers (default 8)\n  -c, --checksum   Check the checksum\n"
            "      --s3-region string   Region\nUse --not-a-listed-flag in prose.\n```\n")
    assert derive.markdown_flags(text) == ["checkers", "checksum", "s3-region"]


def test_docker_image_needs_the_documented_image_the_semver_tag_and_the_binary() -> None:
    install = "```console\n$ docker pull owner/tool:latest\n```\n"
    workflow = "tags: |\n  type=semver,pattern={{version}}\n"
    dockerfile = "FROM alpine\nCOPY --from=builder /go/src/x/tool /usr/local/bin/\n"
    assert derive.docker_image(install, workflow, dockerfile, "v1.2.3") == {
        "image": "owner/tool", "tag": "1.2.3", "binary": "/usr/local/bin/tool"}
    for broken in ((install, "type=raw,value=latest", dockerfile), ("no pull here", workflow, dockerfile),
                   (install, workflow, "FROM alpine\n")):
        with pytest.raises(ValueError):
            derive.docker_image(*broken, "v1.2.3")


def test_yaml_document_joins_and_lets_an_anchor_be_defined_again() -> None:
    text = ('v: &V "2.6"\nroot: &R pt\nimages:\n  a: {t: &T cpu, tag: !join [*V, "-", *T]}\n'
            '  b: {t: &T gpu, tag: !join [*V, "-", *T], dir: !join [*R, /, *T]}\n')
    doc = derive.yaml_document(text)
    assert (doc["images"]["a"]["tag"], doc["images"]["b"]["tag"], doc["images"]["b"]["dir"]) == \
        ("2.6-cpu", "2.6-gpu", "pt/gpu")
    with pytest.raises(yaml.constructor.ConstructorError):
        derive.yaml_document("x: !!python/object:os.system {}\n")  # still a safe loader


def test_markdown_table_reads_the_first_table_with_the_columns() -> None:
    text = ("| A | B |\n|---|---|\n| 1 | 2 |\n\n| Region | Code | URL |\n|:--|--|--|\n"
            "| X (Y) | x-1 | 1.ecr/&lt;repo> |\n| Z | z-2 | 2.ecr/r |\ntext\n| no | table |\n")
    assert derive.markdown_table(text, ["Code", "URL"]) == [{"Code": "x-1", "URL": "1.ecr/<repo>"},
                                                            {"Code": "z-2", "URL": "2.ecr/r"}]
    with pytest.raises(ValueError, match="Nope"):
        derive.markdown_table(text, ["Nope"])
