"""Every Helm release the add-on layer installs: its chart and version are the pinned upstream release (the
Chart.yaml at the pinned ref), and every values key we set is one that chart (or its subcharts) reads."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

from components.k8s import charts, upstream
from components.k8s.upstream.derive import chart_facts, unread_values
from gpufleet.engine.capture import Graph
from tests.components.k8s.conftest import STACKS
from tests.components.k8s.upstream_cases import rendered
from tests.conftest import of_type

RENDERED = rendered()
CATALOGUE = Path(__file__).resolve().parents[3] / "components" / "data" / "machine_types.csv"


def _check(chart: str, version: str, values: dict[str, Any]) -> list[str]:
    """The values keys the pinned chart does not read (fails when the chart / version is not a pinned one)."""
    pinned = {(c.chart, c.version): c for c in charts.ALL}.get((chart, version))
    assert pinned is not None, f"{chart} {version} is not a pinned chart (components/k8s/upstream/pins.yaml)"
    return unread_values(values, upstream.digest(pinned.pin)["chart"])


@pytest.mark.parametrize("stack", STACKS)
def test_every_release_in_the_preview_is_pinned_and_reads_its_values(graphs: dict[str, Graph], stack: str) -> None:
    releases = of_type(graphs[stack], "helm.sh/v3:Release")
    assert releases
    for r in releases:
        assert _check(r.inputs["chart"], r.inputs["version"], r.inputs["values"]) == [], r.name


@pytest.mark.parametrize("case", sorted(RENDERED))
def test_every_rendered_release_reads_its_values(case: str) -> None:
    _, out = RENDERED[case]
    for release in out.releases:
        assert _check(release.chart.chart, release.chart.version, release.values) == [], release.name


def test_pinned_versions_exist_upstream() -> None:
    for chart in charts.ALL:
        facts = upstream.digest(chart.pin)
        # Chart.yaml at the ref names this chart and version (the GPU operator stamps its version from the tag
        # at release time, so its Chart.yaml says v1.0.0-devel: the tag is then the version)
        assert facts["chart"]["name"] == chart.chart.rsplit("/", 1)[-1]
        # (Chaos Mesh publishes helm/ as chart <version> when it pushes the tag chart-<version>, see its row)
        ref = facts["source"]["ref"]
        assert chart.version in (facts["chart"]["version"], ref, ref.removeprefix("chart-")), chart


def test_the_checker_catches_keys_no_template_reads() -> None:
    facts = chart_facts("name: c\nversion: 1.0.0\n", "a:\n  b: 1\n  free: {}\nlist: []\n",
                        ["{{ .Values.a.b }} {{ toYaml .Values.a.free }} {{ .Values.c.d }} {{ .Values.list }}"])
    assert unread_values({"a": {"b": 2, "free": {"x": {"y": 1}}}, "c": {"d": 1}, "list": [1]}, facts) == []
    assert unread_values({"a": {"bb": 1}, "c": {"e": 1}}, facts) == ["a.bb", "c.e"]
    gpu = upstream.digest("gpu-operator")["chart"]
    assert unread_values({"driver": {"enabeld": True}}, gpu) == ["driver.enabeld"]
    assert unread_values({"node-feature-discovery": {"worker": {"tolerations": []}}}, gpu) == []


def test_efa_plugin_affinity_covers_every_efa_machine_type() -> None:
    """The EFA device plugin schedules only on the instance types its chart lists (supportedInstanceLabels):
    every EFA machine type of the catalogue must be there, or its pods never get EFA devices."""
    with CATALOGUE.open() as f:
        efa = {row["name"] for row in csv.DictReader(f) if row["cloud"] == "aws" and row["fabric"] == "efa"}
    assert "p6-b200.48xlarge" in efa
    defaults = upstream.digest(charts.EFA_DEVICE_PLUGIN.pin)["chart"]["defaults"]
    assert defaults["supportedInstanceLabels.keys"] == ["node.kubernetes.io/instance-type"]
    missing = sorted(efa - set(defaults["supportedInstanceLabels.values"]))
    assert missing == [], f"the pinned EFA device plugin chart does not schedule on {missing}"
