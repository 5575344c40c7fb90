"""Versioned feature gates read from Go source (components/k8s/upstream/derive_go.py)."""

from __future__ import annotations

import pytest

from components.k8s import charts, upstream
from components.k8s.upstream.derive_go import feature_gates, gate_at

GO = '''var defaultVersionedFeatureGates = map[featuregate.Feature]featuregate.VersionedSpecs{
\tOld: {
\t\t{Version: version.MustParse("0.6"), Default: false, PreRelease: featuregate.Alpha},
\t\t{Version: version.MustParse("0.9"), Default: true, PreRelease: featuregate.Beta},
\t\t{Version: version.MustParse("0.12"), Default: true, PreRelease: featuregate.GA, LockToDefault: true},
\t},
\tNew: {
\t\t{Version: version.MustParse("0.19"), Default: true, PreRelease: featuregate.Beta},
\t},
}
'''


def test_each_gates_history_oldest_first() -> None:
    gates = feature_gates(GO, ["Old", "New"])
    assert gates["Old"] == [{"version": "0.6", "default": False, "stage": "Alpha", "locked": False},
                            {"version": "0.9", "default": True, "stage": "Beta", "locked": False},
                            {"version": "0.12", "default": True, "stage": "GA", "locked": True}]
    assert gate_at(gates["Old"], "0.8")["stage"] == "Alpha"
    assert gate_at(gates["Old"], "0.9")["stage"] == "Beta"  # the boundary: from that release on
    assert gate_at(gates["Old"], "0.19")["locked"] is True  # 0.19 > 0.12 numerically, not as text


def test_a_gate_the_file_lacks_fails_loudly() -> None:
    with pytest.raises(KeyError, match="Missing"):
        feature_gates(GO, ["Old", "Missing"])


def test_the_pinned_kueue_dispatches_in_config_order_by_default() -> None:
    gates = upstream.digest("kueue")["feature_gates"]["pkg/features/kube_features.go"]
    release = charts.KUEUE.version.rsplit(".", 1)[0]
    assert gate_at(gates["MultiKueueIncrementalDispatcherRespectConfigOrder"], release)["default"] is True
    assert gate_at(gates["TopologyAwareScheduling"], release)["default"] is True  # so the layer sets no gate


PACKAGE = '''STAGING_IMAGE_REGISTRY=${STAGING_IMAGE_REGISTRY:-staging.example/kueue}
IMAGE_REGISTRY=${IMAGE_REGISTRY:-${STAGING_IMAGE_REGISTRY}}
readonly k8s_registry="registry.k8s.io/kueue"
readonly promoted_version_regex='^v([0-9]+)(\\.[0-9]+){1,2}$'
${YQ} e ".m.image.repo = \\"${IMAGE_REGISTRY}/kueue\\" | .m.tag = \\"${GIT_TAG}\\"" -i charts/kueue/values.yaml
${YQ}  e  ".other.image.tag = \\"${GIT_TAG}\\"" -i cmd/other/values.yaml
${HELM} package --version "${chart_version}" --app-version "${GIT_TAG}" charts/kueue -d "${DEST_CHART_DIR}"
${YQ}  e  ".m.image.repository = \\"${default_image_repo}\\"" -i charts/kueue/values.yaml
'''


def test_the_chart_package_runs_the_image_the_packaging_script_stamps() -> None:
    from components.k8s.upstream.derive_package import chart_package_values

    promoted = chart_package_values(PACKAGE, "v0.19.2", "charts/kueue/values.yaml")
    assert promoted == {"m.image.repo": "registry.k8s.io/kueue/kueue",
                        "m.tag": "v0.19.2"}  # the restore after packaging is not shipped
    rc = chart_package_values(PACKAGE, "v0.20.0-rc.0", "charts/kueue/values.yaml")  # not a promoted version
    assert rc["m.image.repo"] == "staging.example/kueue/kueue"


def test_kueue_runs_the_released_image_of_its_pin() -> None:
    from components.k8s.kueue import manager_image

    # https://kueue.sigs.k8s.io/docs/installation/: releases are served from registry.k8s.io/kueue
    assert manager_image() == {"repository": "registry.k8s.io/kueue/kueue", "tag": f"v{charts.KUEUE.version}",
                               "pullPolicy": "IfNotPresent"}
