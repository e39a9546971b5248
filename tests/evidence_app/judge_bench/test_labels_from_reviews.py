"""Labels from reviewers: claim labels given while deciding, per-claim agreement, and the
team's labelled cases exported for judge_bench and run through it (issue 27, item 4)."""

from __future__ import annotations

import json
from datetime import date, timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from evidence_app.judge_bench import load_cases
from evidence_app.judge_bench.from_reviews import labelled_cases, team_split
from evidence_app.models import Audit, ClaimLabel, ValidationSnapshot
from evidence_app.trust.claim_agreement import claim_agreement_stats
from evidence_app.trust.claim_labels import claim_labels_record
from evidence_app.validation.services import validation_run
from project.errors import InvalidInput, StaleAction
from tasks_app.models import Feedback, Task, ToolEvidence
from tasks_app.workflow.services import decision_undo, task_decide
from tests.evidence_app.validation_helpers import validating_task
from tests.factories import TaskFactory, UserFactory, ValidationSnapshotFactory

pytestmark = pytest.mark.django_db

FACT = "The annual training budget per employee is 1,750 EUR."


@pytest.fixture
def offline(settings: Any) -> None:
    """The validator and the bench judge with the embedded offline judge; decisions apply
    at once unless a test opens an undo window."""
    settings.VALIDATOR_MODEL = "offline:judge"
    settings.DECISION_UNDO_SECONDS = 0


def _validated(answer: str = FACT, evidence: list[str] | None = None) -> Task:
    """A task whose first attempt the offline judge has validated (awaiting a person)."""
    task = validating_task(answer=answer, evidence=evidence or [FACT])
    snapshot = validation_run(task_id=task.pk, attempt_index=1)
    assert snapshot is not None and snapshot.result.get("claims"), snapshot.result
    task.refresh_from_db()
    return task


def _latest(task: Task) -> ValidationSnapshot:
    return ValidationSnapshot.objects.filter(task=task).latest("created_at", "id")


def _decide(task: Task, action: str, labels: list[dict[str, Any]] | None = None) -> Feedback:
    reviewer = UserFactory(username="reviewer")
    return task_decide(
        task_id=task.pk,
        actor=reviewer,
        action=action,
        comment="Use the 2026 figure." if action == "revise" else "",
        claim_labels=labels or [],
        validation_id=_latest(task).pk,
    )


def _judged_audit(task: Task, *, correct: bool, labels: list[dict[str, Any]]) -> Audit:
    """An audit of the task's verdict, judged. (Test setup: the audit queue's own judging
    is not under test here, so the judged state is written directly.)"""
    snapshot = _latest(task)
    audit = Audit.objects.create(
        snapshot=snapshot,
        task=task,
        attempt_index=snapshot.attempt_index,
        route="auto_accepted",
        probability=0.1,
        state="done",
        correct=correct,
        decided_at=timezone.now(),
    )
    claim_labels_record(snapshot=snapshot, labels=labels, author=None, audit=audit)
    return audit


def test_a_decision_with_claim_labels_stores_them_in_its_transaction(offline: None) -> None:
    """Issue 27, item 4: the labels go with the decision (its Feedback), copying the
    validator's verdict on each claim; a corrected citation names this task's evidence."""
    task = _validated()
    evidence = ToolEvidence.objects.get(task=task)
    decision = _decide(
        task,
        "revise",
        [
            {
                "claim_index": 0,
                "label": "contradicted",
                "corrected_citation": {"evidence_id": evidence.pk, "quote": "1,750 EUR"},
            }
        ],
    )
    label = ClaimLabel.objects.get()
    assert label.feedback_id == decision.pk and label.snapshot_id == _latest(task).pk
    assert label.label == "contradicted" and label.judge_verdict == "supported"
    assert label.corrected_citation == {"evidence_id": evidence.pk, "quote": "1,750 EUR"}
    task.refresh_from_db()
    assert task.status == "needs_revision"


def test_a_refused_label_refuses_the_decision_and_writes_nothing(offline: None) -> None:
    """Issue 27, item 4: one transaction: a bad claim index or another task's evidence
    leaves neither a decision nor a label, and the task where it was."""
    task = _validated()
    other = _validated()
    foreign = ToolEvidence.objects.get(task=other)
    for labels in (
        [{"claim_index": 7, "label": "supported"}],
        [
            {
                "claim_index": 0,
                "label": "supported",
                "corrected_citation": {"evidence_id": foreign.pk, "quote": "x"},
            }
        ],
    ):
        with pytest.raises(InvalidInput):
            _decide(task, "satisfied", labels)
    assert not Feedback.objects.exists() and not ClaimLabel.objects.exists()
    task.refresh_from_db()
    assert task.status == "awaiting_feedback"


def test_labels_for_a_validation_that_is_no_longer_the_latest_are_refused(offline: None) -> None:
    """Issue 27, item 4: the person labelled the claims they saw; a newer verdict since
    refuses the decision with the reason, and nothing is written."""
    task = _validated()
    seen = _latest(task)
    ValidationSnapshotFactory(task=task, attempt_index=1, result={"claims": []})
    with pytest.raises(StaleAction, match="Reload"):
        task_decide(
            task_id=task.pk,
            actor=UserFactory(),
            action="satisfied",
            claim_labels=[{"claim_index": 0, "label": "supported"}],
            validation_id=seen.pk,
        )
    assert not Feedback.objects.exists() and not ClaimLabel.objects.exists()


def _three_decisions_and_an_audit() -> dict[str, Any]:
    satisfied = _validated()
    revised = _validated()
    abandoned = _validated()
    audited = _validated()
    out = {
        "satisfied": _decide(satisfied, "satisfied", [{"claim_index": 0, "label": "supported"}]),
        "revise": _decide(revised, "revise", [{"claim_index": 0, "label": "contradicted"}]),
        "abandon": _decide(abandoned, "abandon"),
        "audit": _judged_audit(
            audited, correct=False, labels=[{"claim_index": 0, "label": "unsupported"}]
        ),
    }
    return out


def test_round_trip_from_reviews_to_judge_bench(offline: None, tmp_path: Path) -> None:
    """Issue 27, item 4: decided tasks and a judged audit exported with --from-reviews
    --out load with judge_bench's --cases-file, carry the expected labels, run through
    the offline judge and are counted in the report; the bench keeps nothing."""
    made = _three_decisions_and_an_audit()
    tasks_before = Task.objects.count()
    cases_file = tmp_path / "team.json"
    out = StringIO()
    call_command("judge_bench", "--from-reviews", f"--out={cases_file}", stdout=out)
    assert "wrote 4 labelled cases (3 with claim labels)" in out.getvalue()

    cases = {c["id"]: c for c in load_cases(cases_file)}
    decision_case = cases[f"team-decision-{made['satisfied'].pk}"]
    assert decision_case["dataset"] == "team" and decision_case["kind"] == "correct"
    assert decision_case["request"] == "What is the annual training budget per employee?"
    assert decision_case["answer"] == FACT
    assert decision_case["evidence"] == [{"title": "read_document", "content": FACT}]
    assert decision_case["expected"]["status"] == "accepted"
    assert decision_case["expected"]["claims"][0]["verdict"] == "supported"
    assert decision_case["split"] == team_split(made["satisfied"].task_id)
    revise_case = cases[f"team-decision-{made['revise'].pk}"]
    assert revise_case["expected"]["status"] == "rejected" and revise_case["kind"] == "wrong"
    assert revise_case["expected"]["claims"][0]["verdict"] == "contradicted"
    abandon_case = cases[f"team-decision-{made['abandon'].pk}"]
    assert abandon_case["expected"] == {"status": "rejected", "claims": []}
    audit_case = cases[f"team-audit-{made['audit'].pk}"]
    assert audit_case["category"] == "audit_not_correct"
    assert audit_case["expected"]["status"] == "rejected"
    assert audit_case["expected"]["claims"][0]["verdict"] == "unsupported"

    report = tmp_path / "report.json"
    run = StringIO()
    call_command(
        "judge_bench",
        f"--cases-file={cases_file}",
        "--split=all",
        f"--json={report}",
        stdout=run,
    )
    summary = json.loads(report.read_text())
    team = summary["datasets"]["team"]["all"]
    assert summary["cases"] == 4 and team["cases"] == 4
    assert team["correct_answers"] == 1 and team["wrong_answers"] == 3
    # The offline judge accepts every one of these grounded answers: the people's
    # "wrong" labels show up as its false accepts.
    assert set(team["false_accepts"]) == {
        f"team-decision-{made['revise'].pk}",
        f"team-decision-{made['abandon'].pk}",
        f"team-audit-{made['audit'].pk}",
    }
    by_id = {r["id"]: r for r in summary["results"]}
    assert by_id[decision_case["id"]]["correct"] and by_id[decision_case["id"]]["claims_expected"]
    assert "team" in run.getvalue()
    assert Task.objects.count() == tasks_before


def test_running_from_reviews_directly_uses_the_same_cases(offline: None, tmp_path: Path) -> None:
    """Issue 27, item 4: without --out the team's cases run like any case file."""
    _three_decisions_and_an_audit()
    report = tmp_path / "report.json"
    call_command(
        "judge_bench", "--from-reviews", "--split=all", f"--json={report}", stdout=StringIO()
    )
    summary = json.loads(report.read_text())
    assert list(summary["datasets"]) == ["team"] and summary["cases"] == 4


def test_an_undone_decision_is_neither_exported_nor_counted(offline: None, settings: Any) -> None:
    """Issue 27, item 4: labels of an undone decision do not count anywhere."""
    settings.DECISION_UNDO_SECONDS = 30
    task = _validated()
    decision = _decide(task, "satisfied", [{"claim_index": 0, "label": "supported"}])
    assert decision.state == "pending" and ClaimLabel.objects.count() == 1
    assert labelled_cases() == [] and claim_agreement_stats() == []
    decision_undo(feedback_id=decision.pk, actor=decision.author, task_id=task.pk)
    assert labelled_cases() == [] and claim_agreement_stats() == []
    # An open (unjudged) audit does not count either.
    Audit.objects.create(
        snapshot=_latest(task),
        task=task,
        attempt_index=1,
        route="auto_accepted",
        probability=0.5,
    )
    assert labelled_cases(queue="audit") == []


def test_filters_by_period_and_queue(offline: None) -> None:
    """Issue 27, item 4: --since/--until (whole days) and --queue select the cases."""
    made = _three_decisions_and_an_audit()
    old = timezone.now() - timedelta(days=10)
    Feedback.objects.filter(pk=made["satisfied"].pk).update(created_at=old)
    today = timezone.localdate()

    def ids(**filters: Any) -> set[str]:
        return {c["id"] for c in labelled_cases(**filters)}

    assert ids(queue="review") == {f"team-decision-{made[a].pk}" for a in made if a != "audit"}
    assert ids(queue="audit") == {f"team-audit-{made['audit'].pk}"}
    assert f"team-decision-{made['satisfied'].pk}" not in ids(since=today)
    assert len(ids(since=today)) == 3
    assert ids(until=today - timedelta(days=1)) == {f"team-decision-{made['satisfied'].pk}"}
    assert ids(since=timezone.localdate(old), until=timezone.localdate(old)) == {
        f"team-decision-{made['satisfied'].pk}"
    }
    out = StringIO()
    call_command("judge_bench", "--from-reviews", "--queue=audit", "--out=/dev/null", stdout=out)
    assert "wrote 1 labelled cases" in out.getvalue()
    with pytest.raises(CommandError, match="not a date"):
        call_command("judge_bench", "--from-reviews", "--since=yesterday", "--out=/dev/null")
    with pytest.raises(CommandError, match="--from-reviews"):
        call_command("judge_bench", f"--since={date.today()}")


def test_the_split_is_a_stable_half_by_task() -> None:
    """Issue 27, item 4: the same task always lands in the same half, about half each."""
    halves = [team_split(i) for i in range(1, 401)]
    assert halves == [team_split(i) for i in range(1, 401)]
    assert 150 < halves.count("dev") < 250


# --- Per-claim agreement -------------------------------------------------------------------


def _labelled_snapshot(model: str, judge_verdicts: list[str]) -> ValidationSnapshot:
    task = TaskFactory(status="closed")
    return ValidationSnapshotFactory(
        task=task,
        template_version="default@1",
        model_name=model,
        result={
            "claims": [{"text": f"claim {i}", "verdict": v} for i, v in enumerate(judge_verdicts)]
        },
    )


def test_per_claim_kappa_equals_the_hand_computed_value() -> None:
    """Issue 27, item 4: 10 labelled claims (validator → person): S→S ×4, S→U, U→U ×2,
    C→C, U→C, C→S. Observed 0.7; marginals 5/3/2 on both sides, chance 0.38, so
    3-class kappa = 0.32 / 0.62 = 0.516; binary (supported or not): observed 0.8,
    chance 0.5, kappa 0.6. An undone decision's and an open audit's labels are left out."""
    pairs = [("supported", "supported")] * 4 + [
        ("supported", "unsupported"),
        ("unsupported", "unsupported"),
        ("unsupported", "unsupported"),
        ("contradicted", "contradicted"),
        ("unsupported", "contradicted"),
        ("contradicted", "supported"),
    ]
    snapshot = _labelled_snapshot("offline:judge", [judge for judge, _ in pairs])
    applied = Feedback.objects.create(task=snapshot.task, action="satisfied", state="applied")
    claim_labels_record(
        snapshot=snapshot,
        labels=[{"claim_index": i, "label": person} for i, (_, person) in enumerate(pairs)],
        author=None,
        feedback=applied,
    )
    undone = Feedback.objects.create(task=snapshot.task, action="revise", state="undone")
    claim_labels_record(
        snapshot=snapshot,
        labels=[{"claim_index": 0, "label": "contradicted"}],
        author=None,
        feedback=undone,
    )
    other = _labelled_snapshot("test:other", ["supported"])
    open_audit = Audit.objects.create(
        snapshot=other, task=other.task, attempt_index=1, route="auto_accepted", probability=1
    )
    claim_labels_record(
        snapshot=other,
        labels=[{"claim_index": 0, "label": "unsupported"}],
        audit=open_audit,
        author=None,
    )

    [group] = claim_agreement_stats()
    assert (group.template_version, group.model_name, group.count) == (
        "default@1",
        "offline:judge",
        10,
    )
    assert group.agreement_rate == pytest.approx(0.7)
    assert group.kappa == pytest.approx(0.32 / 0.62)
    assert group.binary_agreement_rate == pytest.approx(0.8)
    assert group.binary_kappa == pytest.approx(0.6)
    assert group.confusion["supported"] == {"supported": 4, "unsupported": 1, "contradicted": 0}
    assert group.confusion["contradicted"] == {"supported": 1, "unsupported": 0, "contradicted": 1}

    open_audit.state = "done"
    open_audit.save(update_fields=["state"])
    assert {g.model_name for g in claim_agreement_stats()} == {"offline:judge", "test:other"}


def test_the_judge_gate_compares_on_the_teams_held_out_cases_too(offline: None) -> None:
    """Issue 27, items 4 and 5: a decided task becomes a gate case when its stable split
    is the held-out half; a dev-half one stays out (a candidate may be tuned on it)."""
    from evidence_app.judges.gate import gate_cases

    decided: list[int] = []
    # Decide tasks until both halves hold one (the split is a hash of the task id).
    while len({team_split(pk) for pk in decided}) < 2:
        assert len(decided) < 20, "20 task ids all fell in one half"
        task = _validated()
        _decide(task, "satisfied")
        decided.append(task.pk)
    held_out = {pk for pk in decided if team_split(pk) == "heldout"}
    team = [c for c in gate_cases() if c["dataset"] == "team"]
    assert team and {c["split"] for c in team} == {"heldout"}
    assert len(team) == len(held_out) < len(decided)
    assert all(c["kind"] == "correct" for c in team)
