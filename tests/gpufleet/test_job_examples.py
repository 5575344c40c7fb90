"""The example jobs (gpufleet/jobs/examples.py, examples/jobs/): each validates against its CRD digest and, pod
template by pod template, against the Kubernetes OpenAPI (kubernetes-validate); carries what Kueue needs to admit it as
one gang (queue label of an existing LocalQueue, its pod sets, a topology request on a level of the cluster's Topology);
fits its team's nominal quota; has the fabric wiring of its cloud and the Lustre volume; and the checked-in files
are what the CLI renders now."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from typer.testing import CliRunner

from components.fleet import Cluster
from components.k8s.inputs import AddonInputs
from components.k8s.render import render
from components.k8s.upstream.crd import problems
from gpufleet.cli import app
from gpufleet.jobs.examples import Choice, JobsError, examples, pick
from stacks.config import load_stack_file, stack_file

ROOT = Path(__file__).resolve().parents[2]
CHECKED_IN = ROOT / "examples" / "jobs"
STACKS = ["aws-train", "gcp-train", "azure-train"]
# The default size is the largest whole-node fit of the first team's quota in the first pool (hand computation from
# the stack files): aws-train pretrain 128 H100 / 8 per node = 16 nodes, pool h100 max 16; gcp-train 64 / 8 = 8, max 8;
# azure-train 64 / 8 = 8, max 8.
NODES = {"aws-train": 16, "gcp-train": 8, "azure-train": 8}
runner = CliRunner()


def _cluster(stack: str) -> Cluster:
    [cluster] = load_stack_file(stack_file(stack)).clusters
    return cluster


def _jobs(stack: str) -> dict[str, dict[str, Any]]:
    return {name: yaml.safe_load((CHECKED_IN / stack / name).read_text())
            for name in sorted(p.name for p in (CHECKED_IN / stack).glob("*.yaml"))}


def _pod_sets(job: dict[str, Any], cluster: Cluster) -> list[tuple[int, dict[str, Any]]]:
    """(pods, pod template) of each pod set Kueue makes from the job. A TrainJob's pods come from its runtime
    (rendered by the add-on layer) sized by numNodes, with the TrainJob's resourcesPerNode."""
    spec = job["spec"]
    if job["kind"] == "JobSet":
        return [(r["replicas"] * r["template"]["spec"]["parallelism"], r["template"]["spec"]["template"])
                for r in spec["replicatedJobs"]]
    if job["kind"] == "RayJob":
        ray = spec["rayClusterSpec"]
        return [(1, ray["headGroupSpec"]["template"])] + [(g["replicas"], g["template"])
                                                          for g in ray["workerGroupSpecs"]]
    runtimes = {m.name: m.obj for m in render(cluster, AddonInputs(kubeconfig="k")).manifests
                if m.kind == "ClusterTrainingRuntime"}
    [node] = runtimes[spec["runtimeRef"]["name"]]["spec"]["template"]["spec"]["replicatedJobs"]
    pod = node["template"]["spec"]["template"]
    main = pod["spec"]["containers"][0]
    main = {**main, "resources": spec["trainer"]["resourcesPerNode"]}
    return [(spec["trainer"]["numNodes"], {**pod, "spec": {**pod["spec"], "containers": [main]}})]


def _limits(template: dict[str, Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in template["spec"]["containers"]:
        for k, v in c.get("resources", {}).get("limits", {}).items():
            if "/" in k:  # extended resources: GPUs and fabric devices (requests = limits)
                out[k] = out.get(k, 0) + int(v)
    return out


CASES = [(stack, name) for stack in STACKS for name in ("train-rayjob.yaml", "train-jobset.yaml",
                                                        "train-trainjob.yaml")]


def test_every_operator_of_every_bundled_stack_has_an_example() -> None:
    assert sorted((s, p.name) for s in STACKS for p in (CHECKED_IN / s).glob("*.yaml")) == sorted(CASES)


@pytest.mark.parametrize("stack", STACKS)
def test_checked_in_examples_equal_a_fresh_render(stack: str, tmp_path: Path) -> None:
    result = runner.invoke(app, ["jobs", "examples", "--stack", stack, "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    fresh = {p.name: p.read_text() for p in (tmp_path / stack).iterdir()}
    assert fresh == {p.name: p.read_text() for p in (CHECKED_IN / stack).iterdir()}, \
        "examples/jobs is stale: run `gpufleet jobs examples --all`"


@pytest.mark.parametrize(("stack", "name"), CASES)
def test_example_validates_against_its_crd_and_its_pods_against_the_openapi(stack: str, name: str) -> None:
    cluster = _cluster(stack)
    job = _jobs(stack)[name]
    assert problems(job) == []
    for _, template in _pod_sets(job, cluster):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", **template.get("metadata", {})},
               "spec": template["spec"]}
        kubernetes_validate.validate(pod, f"{cluster.spec.kubernetes_version}.0", strict=True)


@pytest.mark.parametrize(("stack", "name"), CASES)
def test_example_is_queued_to_an_existing_local_queue_and_asks_for_one_topology_domain(stack: str, name: str) -> None:
    cluster = _cluster(stack)
    job = _jobs(stack)[name]
    out = render(cluster, AddonInputs(kubeconfig="k"))
    queues = {(m.obj["metadata"]["namespace"], m.name) for m in out.manifests if m.kind == "LocalQueue"}
    queue = job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    assert (job["metadata"]["namespace"], queue) in queues
    [topology] = [m.obj for m in out.manifests if m.kind == "Topology"]
    levels = [lv["nodeLabel"] for lv in topology["spec"]["levels"]]
    gpu_sets = [t for _, t in _pod_sets(job, cluster) if _limits(t).get("nvidia.com/gpu")]
    assert gpu_sets
    for template in gpu_sets:
        assert template["metadata"]["annotations"]["kueue.x-k8s.io/podset-required-topology"] in levels


@pytest.mark.parametrize(("stack", "name"), CASES)
def test_example_fits_its_teams_nominal_quota_in_the_pools_flavor(stack: str, name: str) -> None:
    cluster = _cluster(stack)
    job = _jobs(stack)[name]
    out = render(cluster, AddonInputs(kubeconfig="k"))
    team = job["metadata"]["namespace"]
    [queue] = [m.obj for m in out.manifests if m.kind == "ClusterQueue" and m.name == team]
    asked: dict[str, int] = {}
    for pods, template in _pod_sets(job, cluster):
        for resource, count in _limits(template).items():
            asked[resource] = asked.get(resource, 0) + pods * count
    [group] = queue["spec"]["resourceGroups"]
    quota = {(f["name"], r["name"]): int(r["nominalQuota"]) for f in group["flavors"] for r in f["resources"]
             if "/" in r["name"]}
    pool = pick(cluster).pool.name
    # every bundled training pool is 8 GPUs a node
    assert asked["nvidia.com/gpu"] == NODES[stack] * 8
    for resource, count in asked.items():
        assert count <= quota[(pool, resource)], (resource, count, quota)


def test_aws_example_asks_for_every_efa_interface_and_sets_the_efa_provider() -> None:
    job = _jobs("aws-train")["train-jobset.yaml"]
    [(_, template)] = _pod_sets(job, _cluster("aws-train"))
    [main] = template["spec"]["containers"]
    # p5.48xlarge: 32 EFA interfaces (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa.html)
    assert main["resources"]["limits"]["vpc.amazonaws.com/efa"] == "32"
    assert {"name": "FI_PROVIDER", "value": "efa"} in main["env"]


def test_gke_example_runs_the_tcpxo_daemon_as_a_native_sidecar_with_its_device_annotation() -> None:
    for name in ("train-jobset.yaml", "train-rayjob.yaml"):
        job = _jobs("gcp-train")[name]
        template = next(t for _, t in _pod_sets(job, _cluster("gcp-train")) if _limits(t))
        [sidecar] = [c for c in template["spec"]["initContainers"] if c["name"] == "tcpxo-daemon"]
        assert sidecar["name"] == "tcpxo-daemon" and sidecar["restartPolicy"] == "Always"
        annotations = template["metadata"]["annotations"]
        assert "/dev/dmabuf_import_helper" in annotations["devices.gke.io/container.tcpxo-daemon"]
        assert len(yaml.safe_load(annotations["networking.gke.io/interfaces"])) == 1 + 8  # eth0 + 8 GPU NICs


def test_azure_example_asks_for_the_shared_infiniband_device() -> None:
    job = _jobs("azure-train")["train-trainjob.yaml"]
    assert job["spec"]["trainer"]["resourcesPerNode"]["limits"]["rdma/rdma_shared_device_a"] == "1"


@pytest.mark.parametrize(("stack", "name"), CASES)
def test_example_mounts_lustre_and_checkpoints_under_its_export_path(stack: str, name: str) -> None:
    cluster = _cluster(stack)
    job = _jobs(stack)[name]
    export = cluster.spec.storage.lustre.export_path.strip("/")
    for _, template in _pod_sets(job, cluster):
        claims = [v["persistentVolumeClaim"]["claimName"] for v in template["spec"]["volumes"]
                  if "persistentVolumeClaim" in v]
        assert claims == ["lustre"]
    text = yaml.safe_dump(job)
    assert f"/lustre/{export}/{job['metadata']['name']}" in text


def test_a_stack_without_operators_is_refused_with_the_fix(tmp_path: Path) -> None:
    result = runner.invoke(app, ["jobs", "examples", "--stack", "dev", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "no cluster installs a job operator" in result.output and "addons.operators" in result.output


def test_an_unknown_stack_is_refused_with_a_guess(tmp_path: Path) -> None:
    result = runner.invoke(app, ["jobs", "examples", "--stack", "aws-trian", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "Did you mean 'aws-train'?" in result.output


def test_a_pool_too_small_or_a_quota_too_small_is_refused() -> None:
    cluster = _cluster("aws-train")
    with pytest.raises(JobsError, match="no pool where a team's quota holds 8 whole node"):
        pick(cluster, pool="a100-eval", nodes=8)  # at most 4 nodes
    with pytest.raises(JobsError, match="research on a100-eval: 3"):
        pick(cluster, team="research", nodes=4)  # 24 A100 GPUs: 3 nodes' worth
    with pytest.raises(JobsError, match="no GPU pool 'nope'"):
        examples(cluster, Choice(pool="nope"))
    with pytest.raises(JobsError, match="at least 1 node"):
        pick(cluster, nodes=0)


def test_the_default_size_is_the_largest_whole_node_fit_of_the_quota() -> None:
    cluster = _cluster("aws-train")
    # research: 24 A100-40GB GPUs on p4d (8 a node) = 3 whole nodes; the pool holds 4
    assert pick(cluster, team="research").nodes == 3
    # --nodes below the fit is taken as asked, at the boundary too
    assert pick(cluster, team="research", nodes=3).nodes == 3
    assert pick(cluster, nodes=1).nodes == 1


def test_a_four_node_pool_gets_examples(tmp_path: Path) -> None:
    """A pool of 4 nodes (aws-train's a100-eval, nodes.max 4) and a team holding 3 of them: the CLI writes each
    example at 3 nodes (the fit), and at 2 with --nodes 2."""
    result = runner.invoke(app, ["jobs", "examples", "--stack", "aws-train", "--pool", "a100-eval", "--team",
                                 "research", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    jobset = yaml.safe_load((tmp_path / "aws-train" / "train-jobset.yaml").read_text())
    assert jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["parallelism"] == 3
    trainjob = yaml.safe_load((tmp_path / "aws-train" / "train-trainjob.yaml").read_text())
    assert trainjob["spec"]["trainer"]["numNodes"] == 3
    result = runner.invoke(app, ["jobs", "examples", "--stack", "aws-train", "--pool", "a100-eval", "--team",
                                 "research", "--nodes", "2", "--out", str(tmp_path / "two")])
    assert result.exit_code == 0, result.output
    rayjob = yaml.safe_load((tmp_path / "two" / "aws-train" / "train-rayjob.yaml").read_text())
    [workers] = rayjob["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    assert workers["replicas"] == workers["minReplicas"] == workers["maxReplicas"] == 2
    assert "--num-workers=16 " in rayjob["spec"]["entrypoint"]  # 2 nodes x 8 A100s


def test_an_error_leaves_nothing_behind(tmp_path: Path) -> None:
    result = runner.invoke(app, ["jobs", "examples", "--stack", "aws-train", "--pool", "a100-eval", "--nodes", "8",
                                 "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "--nodes" in result.output
    assert not (tmp_path / "out").exists()


def test_a_stack_that_fails_after_another_renders_leaves_nothing_behind(tmp_path: Path) -> None:
    # a100-eval is aws-train's pool only: aws-train renders, gcp-train then fails, and aws-train is not written
    result = runner.invoke(app, ["jobs", "examples", "--stack", "aws-train", "--stack", "gcp-train", "--pool",
                                 "a100-eval", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "no GPU pool 'a100-eval'" in result.output
    assert not (tmp_path / "out").exists()


def test_a_file_that_cannot_be_written_leaves_no_file_and_no_overwritten_example(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "aws-train").mkdir(parents=True)
    (out / "aws-train" / "train-jobset.yaml").write_text("mine\n")
    (out / "gcp-train").write_text("a file where a folder must go\n")  # gcp-train's files cannot be written
    result = runner.invoke(app, ["jobs", "examples", "--stack", "aws-train", "--stack", "gcp-train",
                                 "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "cannot write the examples" in result.output and "--out" in result.output
    assert "Traceback" not in result.output
    assert sorted(p.name for p in (out / "aws-train").iterdir()) == ["train-jobset.yaml"]
    assert (out / "aws-train" / "train-jobset.yaml").read_text() == "mine\n"
    result = runner.invoke(app, ["jobs", "examples", "--stack", "aws-train", "--out", str(out / "gcp-train")])
    assert result.exit_code == 2 and "Not a directory" in result.output


@pytest.mark.parametrize("stack", STACKS)
def test_the_ray_head_takes_no_gpus(stack: str) -> None:
    job = _jobs(stack)["train-rayjob.yaml"]
    head = job["spec"]["rayClusterSpec"]["headGroupSpec"]
    # `ray start --num-gpus` as rayStartParams spell it (kuberay v1.6.2 docs/guidance/rayStartParams.md)
    assert head["rayStartParams"] == {"num-gpus": "0"}
    assert not any("nvidia.com/gpu" in c.get("resources", {}).get("limits", {})
                   for c in head["template"]["spec"]["containers"])
