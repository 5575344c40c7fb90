"""`gpufleet up --stack S` and `gpufleet real-preview --stack S`: the real engine through the Pulumi Automation
API (LocalWorkspace over the project root, whose Pulumi.yaml points at stacks/), for users with the Pulumi CLI,
provider plugins and cloud credentials. Nothing here runs without them; the error says what is missing.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


class RealError(RuntimeError):
    """The Pulumi CLI is missing, or the stack is unknown: the message says how to fix it."""


def require_cli(which: Any = shutil.which) -> str:
    found = which("pulumi")
    if not found:
        raise RealError("the Pulumi CLI is not installed (or not on PATH): install it from "
                        "https://www.pulumi.com/docs/iac/download-install/ and log in (`pulumi login`), or use the "
                        "offline `gpufleet preview` / `gpufleet pr`, which need neither the CLI nor credentials")
    return found


def check_stack(stack: str, root: Path = ROOT) -> None:
    if not (root / "stacks" / f"Pulumi.{stack}.yaml").exists():
        known = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in (root / "stacks").glob("Pulumi.*.yaml"))
        raise RealError(f"no stack file stacks/Pulumi.{stack}.yaml; stacks: {', '.join(known) or 'none'}")


def _stack(stack: str, root: Path) -> Any:
    from pulumi import automation as auto

    return auto.create_or_select_stack(stack_name=stack, work_dir=str(root))


def stage_excludes(stack: str, stage: str, cluster: str | None, root: Path = ROOT) -> list[str]:
    """The URNs the stage leaves alone (gpufleet/deploy/stages.py); the stack file is validated first, so a deploy
    path that cannot work is refused here, with its config path, before the engine starts."""
    from components.errors import SpecError
    from gpufleet.deploy.stages import StageError, excluded, project_name
    from stacks.config import load_stack_file, stack_file

    try:
        fleet = load_stack_file(stack_file(stack, root / "stacks"))
        return excluded(stack, project_name(root), fleet, stage, cluster)
    except (SpecError, StageError) as err:
        raise RealError(str(err)) from None


def run(stack: str, action: str, root: Path = ROOT, which: Any = shutil.which,
        on_output: Any = print, stage: str = "all", cluster: str | None = None) -> dict[str, Any]:
    """``action``: "preview" or "up" of one stage (all, cloud, or cluster with its name). Returns the engine's change
    summary."""
    if action not in ("preview", "up"):
        raise RealError(f"unknown action {action!r}: use preview or up")
    check_stack(stack, root)
    excludes = stage_excludes(stack, stage, cluster, root)
    require_cli(which)
    workspace_stack = _stack(stack, root)
    leave = {"exclude": excludes, "exclude_dependents": True} if excludes else {}
    if action == "up":
        result = workspace_stack.up(on_output=on_output, **leave)
        return dict(result.summary.resource_changes or {})
    result = workspace_stack.preview(on_output=on_output, diff=True, **leave)
    return dict(result.change_summary or {})
