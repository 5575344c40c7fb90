"""`gpufleet netsim`: predict what a network profile costs a training run, and measure it on this machine."""

from __future__ import annotations

import json
from contextlib import nullcontext
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from capacity.terminal import Column, Format, print_table
from components.errors import SpecError
from gpufleet.netsim import sweep as sweeps
from gpufleet.netsim.model import NCCL_MAX_STREAMS, NCCL_STREAMS
from gpufleet.netsim.model import estimate as predict
from gpufleet.netsim.profiles import FoundProfile, ProfileError, find_profile, parse_bytes, parse_sweep
from stacks.config import STACKS_DIR

netsim_app = typer.Typer(help="Rehearse training over WAN-like links: predict (estimate) and measure their cost.",
                         no_args_is_help=True)
console = Console()
errors = Console(stderr=True)
ESTIMATE_SCHEMA = "gpufleet.netsim.estimate/v1"


Profile = Annotated[str, typer.Option("--profile", "-p", help="A network profile name from a stack's fleet.")]
Stack = Annotated[str | None, typer.Option("--stack", "-s", help="The stack declaring the profile (default: "
                                           "whichever stack does).")]
StacksDir = Annotated[Path, typer.Option(help="Where the Pulumi.<stack>.yaml files are.")]
Workers = Annotated[int, typer.Option(min=1, max=64, help="Workers in the ring.")]


def load_profile(name: str, stacks_dir: Path, stack: str | None) -> FoundProfile:
    """The profile, or exit 1 (invalid fleet) / 2 (bad name) with the message."""
    try:
        return find_profile(name, stacks_dir, stack)
    except SpecError as err:
        errors.print(str(err), markup=False)
        raise typer.Exit(1) from None
    except ProfileError as err:
        errors.print(f"error: {err}", markup=False)
        raise typer.Exit(2) from None


def size(text: str, option: str) -> int:
    try:
        return parse_bytes(text)
    except ProfileError as err:
        errors.print(f"error: {option}: {err}", markup=False)
        raise typer.Exit(2) from None


@netsim_app.command()
def estimate(
    profile: Profile,
    workers: Workers = 8,
    nbytes: Annotated[str, typer.Option("--bytes", "-b", help="All-reduce payload per worker (e.g. 1GiB).")] = "1GiB",
    checkpoint: Annotated[str | None, typer.Option("--checkpoint-bytes", help="Checkpoint size (default: "
                                                   "--bytes).")] = None,
    sweep: Annotated[str | None, typer.Option(help="Vary one field, like latency_ms=0,10,50,100: writes sweep.csv, "
                                              "sweep.json and sweep.png to --out.")] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Directory for the sweep's files.")] = Path("netsim-sweep"),
    streams: Annotated[int | None, typer.Option(min=1, max=NCCL_MAX_STREAMS, help="TCP streams per connection "
                                                "for the multi-stream figures (default: what NCCL's socket "
                                                "transport opens on the stack's cloud: AWS 16, GCP 4, else 1).")]
    = None,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="text or json (gpufleet.netsim.estimate/v1).")]
    = Format.TEXT,
    stack: Stack = None,
    stacks_dir: StacksDir = STACKS_DIR,
) -> None:
    """Predict a ring all-reduce, a checkpoint transfer and the TCP goodput bound under the profile's link, over
    one TCP flow and over the streams NCCL's socket transport opens per connection.

    Exits 1 when the fleet description is invalid, 2 on a bad option value.
    """
    found = load_profile(profile, stacks_dir, stack)
    allreduce_bytes = size(nbytes, "--bytes")
    checkpoint_bytes = size(checkpoint, "--checkpoint-bytes") if checkpoint else allreduce_bytes
    if sweep:
        try:
            field, points = parse_sweep(sweep)
            rows = sweeps.sweep(found.link, field, points, workers, allreduce_bytes, checkpoint_bytes)
        except ProfileError as err:
            errors.print(f"error: {err}", markup=False)
            raise typer.Exit(2) from None
        paths = sweeps.write(rows, field, profile, out)
        if fmt is Format.JSON:
            typer.echo(json.dumps({"schema": sweeps.SCHEMA, "profile": profile, "swept": field, "rows": rows},
                                  indent=2))
        else:
            _table(rows, field, f"{profile} ({found.stack}/{found.cluster}): model sweep")
            console.print("wrote " + ", ".join(str(p) for p in paths))
        return
    result = predict(found.link, workers, allreduce_bytes, checkpoint_bytes,
                     streams or NCCL_STREAMS.get(found.cloud, 1))
    if fmt is Format.JSON:
        typer.echo(json.dumps({"schema": ESTIMATE_SCHEMA, "profile": profile, "stack": found.stack,
                               "cluster": found.cluster, "link": found.link.__dict__, **result.as_dict()}, indent=2))
        return
    row = {**found.link.__dict__, **result.as_dict()}
    _table([row], None, f"{profile} ({found.stack}/{found.cluster}): model")
    if result.mathis_bound_mbps is not None:
        console.print(f"One TCP flow under {found.link.loss_pct:g}% loss at {found.link.rtt_s * 1000:g} ms RTT carries "
                      f"at most {_fmt(result.mathis_bound_mbps)} Mbit/s (Mathis): all-reduce "
                      f"{_fmt(result.allreduce_s)} s. NCCL's socket transport spreads each connection over "
                      f"{result.streams} stream(s) here (--streams, at most {NCCL_MAX_STREAMS}), each losing "
                      f"packets alone: {_fmt(result.multi_stream_goodput_mbps)} Mbit/s, all-reduce "
                      f"{_fmt(result.multi_stream_allreduce_s)} s. Both are bounds (docs/netsim.md).",
                      highlight=False)


def _fmt(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e6 else f"{value:,.0f}"
    return str(value)


def _table(rows: list[dict], field: str | None, title: str) -> None:
    columns = [c for c in sweeps.COLUMNS if c in rows[0]]
    if field:
        columns = [field, *(c for c in columns if c != field)]
    print_table(console, title, [Column(c, justify="right") for c in columns],
                [[_fmt(row[c]) for c in columns] for row in rows])


@netsim_app.command()
def measure(
    profile: Profile,
    workers: Annotated[int, typer.Option(min=2, max=16, help="Worker processes in the ring.")] = 3,
    nbytes: Annotated[str, typer.Option("--bytes", "-b", help="All-reduce buffer per worker (at most 1GiB).")]
    = "4MiB",
    checkpoint: Annotated[str | None, typer.Option("--checkpoint-bytes", help="Checkpoint size (default: "
                                                   "--bytes).")] = None,
    timeout_s: Annotated[float, typer.Option(min=1, max=600, help="Give up after this long.")] = 60,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="text or json (gpufleet.netsim.measure/v1).")]
    = Format.TEXT,
    stack: Stack = None,
    stacks_dir: StacksDir = STACKS_DIR,
) -> None:
    """Run a real ring all-reduce and a checkpoint transfer between worker processes in Linux network namespaces
    shaped with tc from the profile, and show them next to the model. Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN).

    Says which parts of the profile the kernel could apply (rate: tbf; delay, jitter, loss: netem) and which it
    could not. Every namespace is deleted on exit. Exits 1 on an invalid fleet, 2 on a bad option, 4 when the
    measurement cannot run here.
    """
    from gpufleet.netsim.measure import MeasureRefused, run_measure
    from gpufleet.netsim.netns import NetnsError

    found = load_profile(profile, stacks_dir, stack)
    allreduce_bytes = size(nbytes, "--bytes")
    checkpoint_bytes = size(checkpoint, "--checkpoint-bytes") if checkpoint else allreduce_bytes
    quiet = fmt is Format.JSON
    try:
        with console.status("measuring ...", spinner="dots") if not quiet else nullcontext():
            result = run_measure(profile, found.link, workers, allreduce_bytes, checkpoint_bytes, timeout_s,
                                 (lambda _: None) if quiet else lambda m: console.log(m))
    except (MeasureRefused, NetnsError) as err:
        errors.print(f"error: {err}", markup=False)
        raise typer.Exit(4) from None
    if quiet:
        typer.echo(json.dumps(result.document(), indent=2))
        return
    m, full = result.model, result.model_profile
    print_table(console, f"{profile} ({found.stack}/{found.cluster}): {workers} workers, measured vs model",
                [Column(c, justify="right")
                 for c in ("", "measured", "model (applied parts)", "model (whole profile)")],
                [("ring all-reduce s", _fmt(result.allreduce_s), _fmt(m.allreduce_s), _fmt(full.allreduce_s)),
                 ("checkpoint transfer s", _fmt(result.checkpoint_s), _fmt(m.checkpoint_s), _fmt(full.checkpoint_s)),
                 ("goodput Mbit/s", _fmt(result.goodput_mbps), _fmt(m.goodput_mbps), _fmt(full.goodput_mbps))])
    for key, how in result.applied.items():
        console.print(f"[green]applied[/] {key}: {how}")
    for key, why in result.not_applied.items():
        console.print(f"[yellow]not applied[/] {key}: {why}")
    if not result.reduced_ok:
        errors.print("error: the all-reduce result was wrong on some worker")
        raise typer.Exit(4)



@netsim_app.command()
def table(
    profiles: Annotated[list[str], typer.Option("--profile", "-p", help="Profiles to measure (repeatable).")],
    workers: Annotated[int, typer.Option(min=2, max=16, help="Worker processes in the ring.")] = 3,
    nbytes: Annotated[str, typer.Option("--bytes", "-b", help="All-reduce buffer and checkpoint size.")] = "4MiB",
    stack: Stack = None,
    stacks_dir: StacksDir = STACKS_DIR,
) -> None:
    """Measure several profiles and print one Markdown table (measured next to the model), as in docs/netsim.md.

    Needs root, like `measure`; exits 4 when a measurement cannot run.
    """
    from gpufleet.netsim.measure import MeasureRefused, run_measure
    from gpufleet.netsim.netns import NetnsError

    found = [load_profile(p, stacks_dir, stack) for p in profiles]
    allreduce_bytes = size(nbytes, "--bytes")
    typer.echo("| profile | applied | not applied | all-reduce s (model) | checkpoint s (model) | "
               "goodput Mbit/s (model) |")
    typer.echo("|---|---|---|---|---|---|")
    for name, f in zip(profiles, found, strict=True):
        try:
            r = run_measure(name, f.link, workers, allreduce_bytes, allreduce_bytes)
        except (MeasureRefused, NetnsError) as err:
            errors.print(f"error: {name}: {err}", markup=False)
            raise typer.Exit(4) from None
        typer.echo(f"| {name} | {', '.join(r.applied) or '-'} | {', '.join(r.not_applied) or '-'} | "
                   f"{r.allreduce_s:.3f} ({r.model.allreduce_s:.3f}) | "
                   f"{r.checkpoint_s:.3f} ({r.model.checkpoint_s:.3f}) | "
                   f"{r.goodput_mbps:.1f} ({_fmt(r.model.goodput_mbps)}) |")


if __name__ == "__main__":
    netsim_app()
