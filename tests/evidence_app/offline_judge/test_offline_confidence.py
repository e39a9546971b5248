"""Issue 38, item 1: the embedded judge's graded confidence orders its verdicts: a claim
two sources state above one stated once, above a disputed one, above one not stated; a
partly answered request lowers it; every verdict carries it."""

from __future__ import annotations

import pytest

from evidence_app.models import ValidationSnapshot
from evidence_app.offline_judge.confidence import ClaimSignal, answer_confidence, claim_confidence
from evidence_app.validation.services import validation_run
from tests.evidence_app.validation_helpers import validating_task


def test_the_claim_signals_are_ordered_as_the_issue_says() -> None:
    two = ClaimSignal("supported", coverage=1.0, tightness=1.0, sources=2)
    one = ClaimSignal("supported", coverage=1.0, tightness=1.0, sources=1)
    loose = ClaimSignal("supported", coverage=1.0, tightness=0.2, sources=1)
    disputed = ClaimSignal("supported", coverage=1.0, tightness=1.0, sources=2, disputed=True)
    unstated = ClaimSignal("unsupported", coverage=0.9)
    contradicted = ClaimSignal("contradicted", coverage=1.0)
    scores = [claim_confidence(s) for s in (two, one, loose, disputed, unstated, contradicted)]
    assert scores == sorted(scores, reverse=True) and len(set(scores)) == len(scores)
    assert claim_confidence(two) == pytest.approx(1.0)


def test_the_answer_is_as_sure_as_its_weakest_claim_and_the_request_it_answers() -> None:
    one = ClaimSignal("supported", coverage=1.0, tightness=1.0, sources=1)
    two = ClaimSignal("supported", coverage=1.0, tightness=1.0, sources=2)
    assert answer_confidence([two, one], ["yes"]) == pytest.approx(0.9)
    assert answer_confidence([two], ["yes", "partly"]) == pytest.approx(0.8)
    assert answer_confidence([], ["yes"]) == 0.0


@pytest.mark.django_db
def test_offline_judge_scores_an_answer_two_sources_state_above_one_stated_once(
    settings: object,
) -> None:
    settings.VALIDATOR_MODEL = "offline:judge"  # type: ignore[attr-defined]
    fact = "The annual training budget per employee is 1,750 EUR."
    once = validating_task(answer=fact, evidence=[fact, "Other matters are handled elsewhere."])
    twice = validating_task(answer=fact, evidence=[fact, f"Finance confirms: {fact}"])
    scores = {}
    for name, task in (("once", once), ("twice", twice)):
        snapshot = validation_run(task_id=task.pk, attempt_index=1)
        assert isinstance(snapshot, ValidationSnapshot) and snapshot.status == "accepted"
        scores[name] = snapshot.score
    assert 0.85 <= scores["once"] < scores["twice"] <= 1.0
