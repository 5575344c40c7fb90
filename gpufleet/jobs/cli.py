"""`gpufleet jobs`: example training jobs generated from a stack's fleet (gpufleet/jobs/examples.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from components.errors import SpecError
from components.fleet import Cluster
from gpufleet.jobs.examples import Choice, JobsError, render, write
from gpufleet.stackdir import check_names, known_stacks
from stacks.config import STACKS_DIR, load_stack_file, stack_file

jobs_app = typer.Typer(help="Training jobs for a stack's clusters, admitted by Kueue.", no_args_is_help=True)
console = Console()
errors = Console(stderr=True)


@jobs_app.command()
def examples(
    stack: Annotated[list[str] | None, typer.Option("--stack", "-s", help="Stack to generate for (repeatable).")]
    = None,
    all_stacks: Annotated[bool, typer.Option("--all", help="Every stack whose clusters install a job operator.")]
    = False,
    out: Annotated[Path, typer.Option("--out", "-o", help="Writes <out>/<stack>/<cluster>-<kind>.yaml "
                                                "(and <cluster>-ray.Dockerfile).")]
    = Path("examples/jobs"),
    pool: Annotated[str | None, typer.Option(help="GPU pool to run on (default: the first where a team's quota "
                                             "holds a whole node, or --nodes of them).")] = None,
    nodes: Annotated[int | None, typer.Option(min=1, help="Nodes the job spans (default: as many whole nodes of the "
                                              "pool as the team's quota holds, at most the pool's nodes.max).")]
    = None,
    team: Annotated[str | None, typer.Option(help="Team (Kueue queue and namespace) to submit as (default: the "
                                             "first whose quota holds the job).")] = None,
    ray_image: Annotated[str | None, typer.Option(
        "--ray-image", help="Image for the RayJob's head and workers, with Ray already in it (built from the "
        "written <cluster>-ray.Dockerfile): no pip install at pod start. Default: on a pool with a fabric, the "
        "pool's image with the pinned Ray installed at start; otherwise KubeRay's sample Ray image.")] = None,
    stacks_dir: Annotated[Path, typer.Option(help="Where the Pulumi.<stack>.yaml files are.")] = STACKS_DIR,
) -> None:
    """Write a multi-node PyTorch job per job operator a cluster installs (addons.operators): RayJob, JobSet, TrainJob.

    Each follows the pool's machine type (GPUs, fabric devices and wiring), mounts the team's Lustre volume and
    checkpoints under its export path, and carries the team's queue label and a topology request. Submit one with
    `kubectl create -f FILE`.

    On a pool with a fabric (EFA, InfiniBand, GPUDirect) the RayJob runs the pool's image, since KubeRay's sample
    Ray image lacks what the fabric's NCCL needs, with the sample's Ray version installed at pod start;
    <cluster>-ray.Dockerfile builds that image with Ray inside, for --ray-image.

    Exits 1 when a fleet is invalid, 2 when a stack cannot run the examples or they cannot be written (then
    nothing is written).
    """
    known = known_stacks(stacks_dir)
    names = stack or []
    check_names(names, known, stacks_dir)
    if all_stacks:
        names = [n for n in known if any(c.spec.addons.operators for c in _clusters(n, stacks_dir))]
    if not names:
        errors.print("Name a stack with --stack NAME, or use --all. Stacks: " + ", ".join(known))
        raise typer.Exit(2)
    choice = Choice(pool, team, nodes, ray_image)
    try:  # every stack is rendered before anything is written: an error leaves nothing behind
        texts = {path: text for name in names
                 for path, text in render(name, _clusters(name, stacks_dir), choice).items()}
        written = write(out, texts)
    except JobsError as err:
        errors.print(f"error: {err}", markup=False)
        raise typer.Exit(2) from None
    for path in written:
        console.print(f"wrote {path}", markup=False)


def _clusters(name: str, stacks_dir: Path) -> tuple[Cluster, ...]:
    try:
        return load_stack_file(stack_file(name, stacks_dir)).clusters
    except SpecError as err:
        errors.print(str(err), markup=False)
        raise typer.Exit(1) from None
