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
