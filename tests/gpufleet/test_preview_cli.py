"""`gpufleet preview` end to end: the real programs of the example stacks, text and JSON output, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from gpufleet.cli import app
from gpufleet.engine.capture import SECRET_MASK, run_program
from tests.conftest import example_fleet

runner = CliRunner()


def test_json_document_follows_the_documented_schema() -> None:
    result = runner.invoke(app, ["preview", "--stack", "aws-train", "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["schema"] == "gpufleet.preview/v1" and doc["project"] == "gpufleet" and doc["stack"] == "aws-train"
    assert doc["summary"] == {"resources": len(doc["resources"]), "gpus": {"A100-40GB": 32, "H100": 128}}
    # its one note: the program's warning on rolling a capacity-block pool (components/aws/nodegroup.py)
    assert doc["errors"] == [] and len(doc["notes"]) == 1 and "capacity-block pool h100" in doc["notes"][0]
    keys = {f"{r['type']}::{r['name']}" for r in doc["resources"]}
    for r in doc["resources"]:
        assert set(r) == {"type", "name", "parent", "custom", "inputs", "dependencies", "provider"}
        assert r["parent"] is None or r["parent"] in keys
        assert set(r["dependencies"]) <= keys
    node_group = next(r for r in doc["resources"] if r["name"] == "train-h100-ng")
    assert node_group["parent"] == "gpufleet:aws:GpuNodeGroup::train-h100" and node_group["custom"] is True
    assert "aws:ec2/launchTemplate:LaunchTemplate::train-h100-lt" in node_group["dependencies"]
    assert node_group["provider"] == "pulumi:providers:aws::train-aws"  # components/aws/__init__.py: <cluster>-aws


def test_pools_are_what_the_stack_file_declares() -> None:
    # stacks/Pulumi.aws-train.yaml: h100 is 16 x p5.48xlarge (8 H100 each) on capacity block cr-0a1b2c3d4e5f60718
    # in use1-az6; a100-eval 0-4 x p4d.24xlarge (8 A100 40 GB) on demand, in use1-az6
    doc = json.loads(runner.invoke(app, ["preview", "--stack", "aws-train", "--format", "json", "--no-policies"]
                                   ).stdout)
    assert doc["pools"] == [
        {"cluster": "train", "pool": "h100", "machine_type": "p5.48xlarge", "gpu": "H100", "gpus_per_node": 8,
         "nodes_min": 16, "nodes_max": 16, "gpus_max": 128, "capacity": "capacity_block",
         "capacity_id": "cr-0a1b2c3d4e5f60718", "zone": "use1-az6"},
        {"cluster": "train", "pool": "a100-eval", "machine_type": "p4d.24xlarge", "gpu": "A100-40GB",
         "gpus_per_node": 8, "nodes_min": 0, "nodes_max": 4, "gpus_max": 32, "capacity": "on_demand",
         "capacity_id": None, "zone": "use1-az6"}]
    text = runner.invoke(app, ["preview", "--stack", "aws-train", "--no-tree", "--no-policies"]).stdout
    assert "GPU pools" in text and "capacity_block cr-0a1b2c3d4e5f60718" in text and "16-16" in text


def test_program_warnings_are_notes_of_their_stack_printed_once() -> None:
    # azure-train's program warns that its InfiniBand pool needs a subscription feature (components/azure/
    # infiniband.py); the line reaches stderr once, prefixed by the stack, and is in that stack's document only
    result = runner.invoke(app, ["preview", "--all", "--format", "json", "--no-policies"])
    assert result.exit_code == 0, result.output
    docs = {d["stack"]: d for d in json.loads(result.stdout)}
    feature = "AKSInfinibandSupport"
    assert [n for n in docs["azure-train"]["notes"] if feature in n]
    assert not [n for s, d in docs.items() if s != "azure-train" for n in d["notes"] if feature in n]
    lines = [line for line in result.stderr.splitlines() if feature in line]
    assert len(lines) == 1 and lines[0].startswith("stack azure-train: train: pools h100 need")


def test_preview_is_stable_run_to_run() -> None:
    first = runner.invoke(app, ["preview", "--stack", "dev", "--format", "json"]).stdout
    assert first == runner.invoke(app, ["preview", "--stack", "dev", "--format", "json"]).stdout


def test_secret_inputs_are_masked_in_the_captured_graph(tmp_path: Path) -> None:
    program = tmp_path / "program.py"
    program.write_text(
        "import pulumi, pulumi_aws as aws\n"
        "p = aws.Provider('p', region='us-east-1')\n"
        "aws.ssm.Parameter('token', type='SecureString', value=pulumi.Output.secret('hunter2'),\n"
        "                  opts=pulumi.ResourceOptions(provider=p))\n")
    graph = run_program("secret", {}, program)
    param = next(r for r in graph.resources if r.name == "token")
    assert param.inputs["value"] == SECRET_MASK
    assert "hunter2" not in json.dumps([r.inputs for r in graph.resources])


def test_text_output_shows_tree_counts_and_gpus() -> None:
    result = runner.invoke(app, ["preview", "--all"], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    for text in ("stack aws-train", "stack dev", "train-h100-ng", "GpuNodeGroup", "stack aws-train: resources by type",
                 "H100", "128"):
        assert text in result.output


def test_all_writes_one_document_per_stack(tmp_path: Path) -> None:
    result = runner.invoke(app, ["preview", "--all", "--format", "json", "--out", str(tmp_path / "previews")])
    assert result.exit_code == 0, result.output
    names = sorted(p.stem for p in (tmp_path / "previews").glob("*.json"))
    assert {"aws-train", "dev"} <= set(names)


def _stack_dir(tmp_path: Path, fleet: object) -> Path:
    (tmp_path / "Pulumi.bad.yaml").write_text(yaml.safe_dump({"config": {"gpufleet:fleet": fleet}}))
    return tmp_path


def test_bad_config_lists_every_problem_and_builds_nothing(tmp_path: Path) -> None:
    fleet = example_fleet("aws-train")
    fleet["clusters"][0]["node_pools"][0]["accelerator"] = "H10"
    fleet["clusters"][0]["region"] = "us-east-9"
    stacks = _stack_dir(tmp_path, fleet)
    result = runner.invoke(app, ["preview", "--stack", "bad", "--stacks-dir", str(stacks), "--format", "json"])
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["resources"] == [] and doc["summary"]["resources"] == 0
    region, accelerator = doc["errors"]  # an unknown region does not hide the cluster's other problems
    assert "clusters[0].region: 'us-east-9' is not a known AWS region with GPU offerings. Did you mean" in region
    assert "clusters[0].node_pools[0].accelerator: 'H10' is not a known GPU" in accelerator
    assert "Pulumi.bad.yaml" in region
    text = runner.invoke(app, ["preview", "--stack", "bad", "--stacks-dir", str(stacks)], env={"COLUMNS": "200"})
    assert text.exit_code == 1 and "nothing was built" in text.output and "Traceback" not in text.output


def test_unreadable_stack_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.bad.yaml").write_text("config: [unclosed")
    result = runner.invoke(app, ["preview", "--stack", "bad", "--stacks-dir", str(tmp_path)], env={"COLUMNS": "200"})
    assert result.exit_code == 1 and "is not valid YAML" in result.output


def test_unknown_stack_names_the_known_ones() -> None:
    result = runner.invoke(app, ["preview", "--stack", "prod"])
    assert result.exit_code == 2 and "aws-train" in result.output
