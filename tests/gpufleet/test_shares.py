"""A stack of several clusters previews as parallel shares of its clusters (gpufleet/engine/shares.py): each forked
run builds only its share, and the merged graph is what one run of the whole program records, byte for byte, with
the warnings in the program's order; a resource registered twice fails either way, as `pulumi up` does."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from components.fleet import Fleet
from components.spec import PENDING_ID
from gpufleet.engine import shares as engine_shares
from gpufleet.engine.capture import Graph, ProgramError, Resource, run_program
from gpufleet.engine.preview import preview_stack
from stacks.config import SHARE, STACKS_DIR, load_stack, stack_file

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def copies(directory: Path, source: str, clusters: int, pending: int | None = None) -> str:
    """``source``'s first cluster ``clusters`` times (train0, train1, ...) in one stack, out of the fleet queue (whose
    manager stack is not in ``directory``); cluster ``pending``'s first pool with its capacity id still to buy."""
    doc = yaml.safe_load((STACKS_DIR / f"Pulumi.{source}.yaml").read_text())
    fleet = doc["config"]["gpufleet:fleet"]
    fleet["clusters"][0].pop("multikueue", None)
    fleet["clusters"] = [{**copy.deepcopy(fleet["clusters"][0]), "name": f"train{i}"} for i in range(clusters)]
    fleet["monthly_budget_usd"] *= clusters
    if pending is not None:
        fleet["clusters"][pending]["node_pools"][0]["capacity"]["id"] = PENDING_ID
    (directory / f"Pulumi.{source}-x{clusters}.yaml").write_text(yaml.safe_dump(doc))
    return f"{source}-x{clusters}"


@given(st.integers(0, 12), st.integers(1, 6))
def test_shares_cover_every_cluster_once_in_order(clusters: int, of: int) -> None:
    fleet = Fleet(spec=None, clusters=tuple(range(clusters)))  # type: ignore[arg-type]  # FAKE: numbers stand in
    parts = [fleet.share(i, of).clusters for i in range(of)]
    assert [c for part in parts for c in part] == list(range(clusters))
    assert max(map(len, parts)) - min(map(len, parts)) <= 1


@pytest.mark.parametrize(("source", "warned"), [("aws-train", "clusters[1].node_pools[0].capacity.id"),
                                                ("azure-train", "train2: pools")])
def test_the_shares_record_what_one_run_records(tmp_path: Path, source: str, warned: str) -> None:
    stack = copies(tmp_path, source, 3, pending=1)
    whole = preview_stack(stack, tmp_path, processes=1)
    assert {r.name for r in whole.graph.resources if r.parent is None} >= {"train0", "train1", "train2"}
    assert any(warned in w for w in whole.graph.warnings)
    expected = json.dumps(whole.document(), indent=2)
    for processes in (2, 3):
        shared = preview_stack(stack, tmp_path, processes)
        assert shared.graph.warnings == whole.graph.warnings
        assert json.dumps(shared.document(), indent=2) == expected


def run_share(stack: str, config: dict[str, object], index: int, of: int) -> Graph:
    token = SHARE.set((index, of))
    try:
        return run_program(stack, config)
    finally:
        SHARE.reset(token)


def test_a_share_builds_only_its_clusters(tmp_path: Path) -> None:
    """The program run with SHARE (1, 3) registers train1's resources and no other cluster's; the pending-capacity
    warnings (of the whole file) are the first share's, so they come first once, as in one run."""
    stack = copies(tmp_path, "aws-train", 3, pending=1)
    config, _ = load_stack(stack_file(stack, tmp_path))
    second, first = run_share(stack, config, 1, 3), run_share(stack, config, 0, 3)
    assert {r.name.split("-")[0] for r in second.resources if r.parent is None} == {"train1"}
    assert not [w for w in second.warnings if PENDING_ID in w]
    assert {r.name.split("-")[0] for r in first.resources if r.parent is None} == {"train0"}
    assert [w for w in first.warnings if PENDING_ID in w] == [
        "clusters[1].node_pools[0].capacity.id (train1/h100): capacity id is 'pending'; `pulumi up` refuses it "
        "until the id is set."]


def resource(name: str, parent: str | None = None, **inputs: object) -> Resource:
    return Resource(type="aws:s3/bucket:Bucket", name=name, parent=parent, custom=True, inputs=dict(inputs),
                    dependencies=[])


def graph(*resources: Resource, warnings: tuple[str, ...] = ()) -> Graph:
    return Graph(project="gpufleet", stack="s", resources=list(resources), warnings=list(warnings))


def test_merge_orders_the_tree_and_keeps_each_shares_warnings_in_turn() -> None:
    merged = engine_shares.merge([graph(resource("b"), resource("logs", "x::train0"), warnings=("first",)),
                                  graph(resource("a"), resource("logs", "x::train1"), warnings=("second",))])
    assert [(r.name, r.parent) for r in merged.resources] == [("a", None), ("b", None), ("logs", "x::train0"),
                                                              ("logs", "x::train1")]
    assert merged.warnings == ["first", "second"]


@pytest.mark.parametrize("parent", [None, "x::train0"])
def test_a_resource_two_shares_registered_fails_as_pulumi_up_would(parent: str | None) -> None:
    """Even registered alike: one run would have registered it twice, which `pulumi up` refuses."""
    with pytest.raises(ProgramError, match="Duplicate resource URN 'aws:s3/bucket:Bucket::logs") as err:
        engine_shares.merge([graph(resource("a"), resource("logs", parent)), graph(resource("logs", parent))])
    assert err.value.registered == 2


def test_one_run_refuses_a_second_resource_of_one_urn(tmp_path: Path) -> None:
    """The SDK's mock runtime registers both; `pulumi up` stops at the second (diag 2001)."""
    program = tmp_path / "program.py"
    program.write_text('import pulumi\nfor size in (1, 2):\n    pulumi.CustomResource("test:index:Thing", "same", '
                       'props={"size": size})\n')
    with pytest.raises(ProgramError, match=r"Duplicate resource URN '.*test:index:Thing::same'; try giving it a "
                                           "unique name") as err:
        run_program("s", {}, program)
    assert err.value.registered == 1


def test_a_failed_share_fails_the_preview_counting_what_came_before() -> None:
    failed = engine_shares._Failed("the stack program failed under the offline preview: boom", 2)
    with pytest.raises(ProgramError, match="boom") as err:
        engine_shares.merge([graph(resource("a"), resource("b")), failed, graph(resource("c"))])
    assert err.value.registered == 4


@pytest.mark.parametrize(("processes", "clusters", "cores", "expected"),
                         [(0, 50, 2, 2), (0, 1, 2, 1), (1, 50, 2, 1), (3, 2, 2, 2), (0, 3, 8, 3)])
def test_shares_per_process_never_more_than_clusters(monkeypatch: pytest.MonkeyPatch, processes: int,
                                                     clusters: int, cores: int, expected: int) -> None:
    monkeypatch.setattr(engine_shares.os, "cpu_count", lambda: cores)
    assert engine_shares.shares(processes, clusters) == expected


def test_no_shares_where_processes_cannot_fork(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine_shares.multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    assert engine_shares.shares(0, 50) == 1
