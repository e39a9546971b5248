"""Issue 27, items 3 and 7: ``offline:judge-corroborating``, the deterministic second
judge of the demo, asks two sources per claim: paired with ``offline:judge`` it sends a
single-source answer to a person ("judges disagree") and lets a corroborated one pass."""

from __future__ import annotations

import pytest

from evidence_app.models import SnapshotKind, ValidationSnapshot
from evidence_app.offline_judge.judge import corroborate
from evidence_app.validation.services import validation_run
from tests.evidence_app.validation_helpers import validating_task

pytestmark = pytest.mark.django_db

FACT = "The annual training budget per employee is 1,750 EUR."


def _validate(evidence: list[str]) -> tuple[str, str, ValidationSnapshot, ValidationSnapshot]:
    task = validating_task(
        answer=FACT, evidence=evidence, second_model="offline:judge-corroborating"
    )
    validation_run(task_id=task.pk, attempt_index=1)
    task.refresh_from_db()
    first = ValidationSnapshot.objects.get(task=task, kind=SnapshotKind.VALIDATION)
    second = ValidationSnapshot.objects.get(task=task, kind=SnapshotKind.SECOND)
    reason = task.events.order_by("-at", "-id").first().reason  # type: ignore[union-attr]
    return task.status, reason, first, second


def test_a_single_source_answer_accepted_by_the_offline_judge_goes_to_a_person(
    settings: object,
) -> None:
    status, reason, first, second = _validate([FACT])
    assert first.status == "accepted" and first.model_name == "offline:judge"
    assert second.status == "insufficient_evidence"
    assert second.model_name == "offline:judge-corroborating"
    assert second.companion_of_id == first.pk
    assert status == "needs_review" and "judges disagree" in reason
    assert "one source only" in second.result["claims"][0]["note"]


def test_an_answer_two_sources_state_is_accepted_by_both() -> None:
    status, _, first, second = _validate(
        [FACT, f"Budget memo. {FACT} Unused budget does not carry over."]
    )
    assert first.status == second.status == "accepted"
    assert status == "awaiting_feedback"


def test_corroborate_changes_nothing_else() -> None:
    rejected = {"status": "rejected", "claims": [{"verdict": "contradicted", "citations": []}]}
    assert corroborate(rejected) == rejected
    two = {
        "status": "accepted",
        "claims": [{"verdict": "supported", "citations": [{"ref": "R1"}, {"ref": "R2"}]}],
    }
    assert corroborate(two) == two
