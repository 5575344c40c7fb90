"""`gpufleet pr` judges each preview with the policy pack as soon as it is made (gpufleet.review.verdicts.Judges):
a verdict in the report is always one on the resources and config the report shows, never an early one on others."""

from __future__ import annotations

import pytest

from gpufleet.engine.preview import preview_stack
from gpufleet.review.diff import diff_documents
from gpufleet.review.verdicts import Judges
from stacks.config import STACKS_DIR

BUDGET = "stack-monthly-budget"


@pytest.fixture(scope="module")
def dev() -> dict:
    preview = preview_stack("dev", STACKS_DIR)
    assert preview.ok, preview.errors
    return preview.document()


def _with_budget(document: dict, usd: float) -> dict:
    config = {**document["policy_config"], BUDGET: {"monthly_budget_usd": usd}}
    return {**document, "policy_config": config}


def test_an_early_judgement_of_other_config_is_judged_again(dev: dict) -> None:
    """Handed over with a budget the stack fits, reported with $1 (its GPU pool alone costs more):
    the report's verdict is the $1 one, on both sides."""
    with Judges() as judges:
        judges.submit_document("head", _with_budget(dev, 10**9))
        judges.submit_document("base", _with_budget(dev, 10**9))
        tight = _with_budget(dev, 1)
        head, base, note = judges.verdicts([diff_documents(tight, tight)])["dev"]
    assert note == ""
    assert [v.policy for v in head if v.level == "mandatory"] == [BUDGET]
    assert [v.policy for v in base if v.level == "mandatory"] == [BUDGET]


def test_an_early_judgement_of_the_same_document_is_used_once(dev: dict) -> None:
    with Judges() as judges:
        judges.submit_document("head", dev)
        early = judges._judged[("head", "dev")][2]
        head, base, _ = judges.verdicts([diff_documents({**dev, "resources": []}, dev)])["dev"]
        assert judges._judged[("head", "dev")][2] is early
    assert head == [] and base == []  # the example stack is compliant; a base without resources is not judged


def test_documents_that_cannot_be_judged_start_no_pack(dev: dict) -> None:
    with Judges() as judges:
        judges.submit_document("head", {**dev, "errors": ["stacks/Pulumi.dev.yaml: gpufleet:fleet: bad"]})
        judges.submit_document("base", {**dev, "resources": []})
        assert judges._judged == {}
    with Judges(enabled=False) as judges:
        judges.submit_document("head", dev)
        assert judges._judged == {}
        assert judges.verdicts([diff_documents(dev, dev)])["dev"] == (None, None,
                                                                       "policy pack not run (--no-policies)")


def test_held_judges_start_nothing_until_released(dev: dict) -> None:
    """`gpufleet pr` holds them until its preview workers are forked: no thread, no pack process, no gRPC before."""
    with Judges(held=True) as judges:
        judges.submit_document("base", dev)
        assert judges._judged[("base", "dev")][2] is None and judges._packs == {}
        head, base, _ = judges.verdicts([diff_documents(dev, dev)])["dev"]  # releases
    assert head == [] and base == []
