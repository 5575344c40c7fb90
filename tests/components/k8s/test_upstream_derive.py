"""The derivations scripts/refresh_upstream.py runs, on small upstream-shaped inputs with hand-computed facts;
and the digests on disk are well formed and carry their source."""

from __future__ import annotations

import re

import yaml

from components.k8s import upstream
from components.k8s.upstream import derive

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
    facts = derive.workload_facts(ds)
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
