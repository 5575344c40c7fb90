"""GPU products in node pools: a family picks its documented default and says so; a variant is honoured.

Machine types are the vendors' (https://aws.amazon.com/ec2/instance-types/p4/: p4d.24xlarge is 8 x A100 40 GB,
p4de.24xlarge 8 x A100 80 GB; https://learn.microsoft.com/en-us/azure/virtual-machines/sizes/gpu-accelerated/
ncadsh100v5-series: Standard_NC40ads_H100_v5 is 1 x H100 NVL 94 GB).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console

from components.errors import SpecError
from components.validate import resolve
from gpufleet.engine.preview import preview_stack
from gpufleet.engine.render import print_preview
from tests.conftest import example_fleet

NOTE_PATH = "clusters[0].node_pools[1].accelerator"


def problems(fleet: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as caught:
        resolve(fleet, "stacks/Pulumi.test.yaml")
    return [p.render() for p in caught.value.problems]


def aws_eval_pool(accelerator: str, team_gpu: str = "A100-40GB") -> dict[str, Any]:
    """aws-train with its evaluation pool asking for an accelerator instead of naming p4d.24xlarge."""
    fleet = example_fleet("aws-train")
    pool = fleet["clusters"][0]["node_pools"][1]
    del pool["machine_type"]
    pool.update(accelerator=accelerator, gpus=8)
    fleet["clusters"][0]["addons"]["kueue_teams"][1]["gpus"] = {team_gpu: 24}
    return fleet


def test_a_plain_family_gets_its_default_variant_and_a_note() -> None:
    fleet = resolve(aws_eval_pool("A100"))
    assert fleet.clusters[0].pools[1].machine.name == "p4d.24xlarge"
    [note] = fleet.notes
    assert note.path == NOTE_PATH
    assert note.render() == (f"{NOTE_PATH}: 'A100' is a GPU family; picked its default product A100-40GB "
                             "(p4d.24xlarge, 8 x 40 GB). Write accelerator: A100-40GB to keep it and silence this "
                             "note, or A100-80GB for the other variant.")


@pytest.mark.parametrize(("accelerator", "machine"), [("A100-40GB", "p4d.24xlarge"), ("A100-80GB", "p4de.24xlarge")])
def test_an_explicit_variant_is_honoured_without_a_note(accelerator: str, machine: str) -> None:
    fleet = resolve(aws_eval_pool(accelerator, team_gpu=accelerator))
    assert fleet.clusters[0].pools[1].machine.name == machine
    assert fleet.notes == ()


def test_examples_need_no_note() -> None:
    for stack in ("aws-train", "gcp-train", "azure-train", "dev"):
        assert resolve(example_fleet(stack)).notes == (), stack


def test_a_machine_type_agrees_with_its_family_but_not_with_the_other_variant() -> None:
    fleet = example_fleet("aws-train")
    pool = fleet["clusters"][0]["node_pools"][1]
    pool.update(machine_type="p4de.24xlarge", accelerator="A100")
    fleet["clusters"][0]["addons"]["kueue_teams"][1]["gpus"] = {"A100-80GB": 24}
    assert resolve(fleet).clusters[0].pools[1].machine.name == "p4de.24xlarge"
    pool["accelerator"] = "A100-40GB"
    assert problems(fleet) == ["clusters[0].node_pools[1]: p4de.24xlarge has 8 x A100-80GB, "
                               "not accelerator A100-40GB. Drop accelerator/gpus or the machine_type."]


def test_plain_h100_means_sxm_and_points_at_nvl_for_a_one_gpu_azure_pool() -> None:
    fleet = example_fleet("azure-train")
    fleet["clusters"][0]["node_pools"][1]["accelerator"] = "H100"
    [message] = problems(fleet)
    assert message.startswith("clusters[0].node_pools[1].gpus: no Azure machine type has "
                              "1 x H100; it comes with 8 GPUs per node. H100-NVL does (Standard_NC40ads_H100_v5): "
                              "write accelerator: H100-NVL if you meant it.")


def test_team_quotas_name_products_not_families() -> None:
    fleet = example_fleet("aws-train")
    fleet["clusters"][0]["addons"]["kueue_teams"][1]["gpus"] = {"A100": 24}
    assert problems(fleet) == ["clusters[0].addons.kueue_teams[1].gpus.A100: 'A100' is a "
                               "GPU family; team quotas name the product (A100-40GB in this cluster's node pools). "
                               "Write A100-40GB."]


def test_preview_shows_the_note_in_json_and_on_the_terminal(tmp_path: Path) -> None:
    fleet = aws_eval_pool("A100")
    (tmp_path / "Pulumi.fam.yaml").write_text(yaml.safe_dump({"config": {"gpufleet:fleet": fleet}}))
    preview = preview_stack("fam", tmp_path)
    assert preview.ok
    note, *program = preview.document()["notes"]  # validation's notes first, then the program's warnings
    assert all("capacity-block pool" in w for w in program)  # aws-train's capacity-block pool, if the fleet has one
    assert note.endswith(f"Pulumi.fam.yaml: {NOTE_PATH}: 'A100' is a GPU family; picked its default product "
                         "A100-40GB (p4d.24xlarge, 8 x 40 GB). Write accelerator: A100-40GB to keep it and silence "
                         "this note, or A100-80GB for the other variant.")
    assert preview.document()["summary"]["gpus"] == {"A100-40GB": 32, "H100": 128}
    console = Console(record=True, width=300)
    print_preview(console, preview, tree=False)
    assert "picked its default product A100-40GB" in console.export_text()
