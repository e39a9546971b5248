"""Changing the judge: the gate (comparison, McNemar, making a default) and shadow mode."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from evidence_app.jobs import judge_comparison_job, shadow_validation_job
from evidence_app.judges.at_target import at_target_figures
from evidence_app.judges.figures import (
    BETTER,
    NO_DIFFERENCE,
    WORSE,
    comparison_figures,
    gate_verdict,
    shadow_figures,
)
from evidence_app.judges.gate import (
    COMPARISON_JOB,
    MIN_COMPARED_CASES,
    comparison_is_stale,
    comparison_request,
    comparison_run,
    gate_cases,
    judge_default_make,
    shadow_start,
    shadow_stop,
)
from evidence_app.models import (
    Audit,
    JudgeComparison,
    JudgeDefault,
    ShadowJudge,
    ShadowVerdict,
    ValidationSnapshot,
)
from evidence_app.validation.current_judge import SHADOW_JOB, current_judge
from evidence_app.validation.selectors import task_cost
from evidence_app.validation.services import validation_run
from project.errors import InvalidInput, StaleAction
from tasks_app.models import OutboxJob, TaskEvent, WebhookDelivery
from tasks_app.notifications.webhooks import webhook_endpoint_create
from tests.evidence_app.validation_helpers import JUDGE, ScriptedJudge, validating_task, verdict

pytestmark = pytest.mark.django_db

# Held-out handbook cases, one of each kind of verdict the offline judge gives.
FEW_CASES = ["supported-02", "contradicted-02", "missing-02", "wrong_block-02"]


def _outcomes(*, both_right: int, candidate_only: int, baseline_only: int, both_wrong: int) -> list:
    def case(candidate: bool, baseline: bool) -> dict[str, Any]:
        return {
            "kind": "correct",
            "candidate": "accepted" if candidate else "rejected",
            "baseline": "accepted" if baseline else "rejected",
            "candidate_correct": candidate,
            "baseline_correct": baseline,
        }

    return (
        [case(True, True)] * both_right
        + [case(True, False)] * candidate_only
        + [case(False, True)] * baseline_only
        + [case(False, False)] * both_wrong
    )


def test_mcnemar_says_better_worse_or_no_difference_on_constructed_pairs() -> None:
    """Issue 27, item 5: 12 cases only the candidate got right against 2 only the current
    judge got right is better (exact p = 2 × P(X ≤ 2 | 14, ½) = 0.0129); reversed it is
    worse; 7 against 6 is no significant difference. The concordant pairs do not count."""
    p_value, said = gate_verdict(12, 2)
    assert said == BETTER and p_value == pytest.approx(212 / 16384)
    assert gate_verdict(2, 12) == (pytest.approx(212 / 16384), WORSE)
    p_value, said = gate_verdict(7, 6)
    assert said == NO_DIFFERENCE and p_value == pytest.approx(1.0)
    assert gate_verdict(0, 0) == (1.0, NO_DIFFERENCE)

    figures = comparison_figures(
        _outcomes(both_right=80, candidate_only=12, baseline_only=2, both_wrong=6)
    )
    assert figures["verdict"] == BETTER and figures["cases"] == 100
    assert (figures["candidate_only"], figures["baseline_only"]) == (12, 2)
    accuracy = figures["candidate"]["accuracy"]
    assert (accuracy["k"], accuracy["n"], accuracy["estimate"]) == (92, 100, 0.92)
    # The exact (Clopper–Pearson) 95 % interval of 92/100.
    assert accuracy["low"] == pytest.approx(0.8484, abs=1e-4)
    assert accuracy["high"] == pytest.approx(0.9648, abs=1e-4)
    assert figures["baseline"]["false_reject"]["k"] == 18
    assert figures["baseline"]["false_accept"]["n"] == 0  # no wrong answer among these


def test_a_comparison_judges_both_judges_on_the_same_cases_and_records_the_figures(
    operator: Any, settings: Any
) -> None:
    """Issue 27, item 5: the job runs the current judge and the candidate on the same
    shipped held-out cases with the offline judge, records progress and the paired
    outcomes, then the figures with intervals and McNemar's verdict; a late delivery of a
    finished comparison does nothing."""
    settings.VALIDATOR_MODEL = "offline:judge"
    comparison = comparison_request(
        template="terse", model="offline:judge", requested_by=operator, case_filter=FEW_CASES
    )
    assert (comparison.state, comparison.done, comparison.total) == ("queued", 0, 4)
    assert (comparison.baseline_template, comparison.baseline_model) == ("default", "offline:judge")
    assert OutboxJob.objects.filter(name=COMPARISON_JOB, args=[comparison.pk]).count() == 1

    assert judge_comparison_job(comparison.pk) == "succeeded"
    comparison.refresh_from_db()
    assert comparison.done == comparison.total == 4 and comparison.finished_at is not None
    assert [o["id"] for o in comparison.outcomes] == FEW_CASES
    by_id = {o["id"]: o for o in comparison.outcomes}
    assert by_id["supported-02"]["expected"] == "accepted"
    assert by_id["contradicted-02"]["kind"] == "wrong"
    for outcome in comparison.outcomes:
        assert outcome["baseline_correct"] == (outcome["baseline"] == outcome["expected"])
    figures = comparison.figures
    assert figures["cases"] == 4
    assert figures["baseline"]["accuracy"]["n"] == figures["candidate"]["accuracy"]["n"] == 4
    assert figures["verdict"] in (BETTER, WORSE, NO_DIFFERENCE)
    assert 0 <= figures["p_value"] <= 1
    assert (
        figures["candidate_only"]
        + figures["baseline_only"]
        + figures["both_right"]
        + figures["both_wrong"]
        == 4
    )
    assert len(figures["discordant"]) == figures["candidate_only"] + figures["baseline_only"]
    # Issue 38, item 7: both judges at a certified risk; four cases certify no threshold.
    at_target = figures["at_target"]
    assert at_target["target"] == settings.TRUST_TARGET_FALSE_ACCEPT
    assert (
        at_target["baseline"]["threshold"] is None and at_target["candidate"]["threshold"] is None
    )
    assert at_target["candidate"]["automated"]["k"] == 0 and at_target["verdict"] == NO_DIFFERENCE
    assert all("candidate_score" in o for o in comparison.outcomes)

    assert judge_comparison_job(comparison.pk) == "succeeded"  # a late duplicate
    comparison.refresh_from_db()
    assert len(comparison.outcomes) == 4
    assert judge_comparison_job(999_999) == "gone"


def test_a_long_comparison_runs_in_slices_each_queueing_the_rest(
    operator: Any, settings: Any
) -> None:
    """Issue 27, item 5: each delivery judges cases for a slice of time (at least one),
    records its progress and queues the rest through the outbox."""
    settings.VALIDATOR_MODEL = "offline:judge"
    comparison = comparison_request(
        template="terse", model="offline:judge", requested_by=operator, case_filter=FEW_CASES[:2]
    )
    comparison_run(comparison_id=comparison.pk, slice_seconds=0)
    comparison.refresh_from_db()
    assert (comparison.state, comparison.done, comparison.total) == ("running", 1, 2)
    assert OutboxJob.objects.filter(name=COMPARISON_JOB, args=[comparison.pk]).count() == 2
    comparison_run(comparison_id=comparison.pk, slice_seconds=0)
    comparison.refresh_from_db()
    assert (comparison.state, comparison.done) == ("succeeded", 2)
    assert OutboxJob.objects.filter(name=COMPARISON_JOB, args=[comparison.pk]).count() == 2


def test_a_comparison_that_crashes_or_never_finishes_says_failed_with_its_reason(
    operator: Any, settings: Any
) -> None:
    """Issue 27, item 5: a crash fails the comparison with the reason (never left
    running); deliveries that never judge a case fail it after JOB_MAX_TRIES."""
    # A template that is gone by the time the worker runs it (the page refuses one).
    crashed = JudgeComparison.objects.create(
        template="retired",
        model="offline:judge",
        baseline_template="default",
        baseline_model="offline:judge",
        case_filter=FEW_CASES[:1],
    )
    assert judge_comparison_job(crashed.pk) == "failed"
    crashed.refresh_from_db()
    assert "retired" in crashed.error and crashed.finished_at is not None
    assert crashed.figures == {} and not crashed.finished

    settings.JOB_MAX_TRIES = 2
    stuck = JudgeComparison.objects.create(
        template="terse",
        model="offline:judge",
        baseline_template="default",
        baseline_model="offline:judge",
        state="running",
        tries=2,
    )
    assert judge_comparison_job(stuck.pk) == "failed"
    stuck.refresh_from_db()
    assert "stopped after 2 tries" in stuck.error


def _finished_comparison(
    template: str,
    model: str,
    state: str = "succeeded",
    *,
    outcomes: list[dict[str, Any]] | None = None,
    baseline: tuple[str, str] | None = None,
) -> JudgeComparison:
    """A comparison against ``baseline`` (default: the default template on ``model``);
    its outcomes default to 30 cases both judges got right and 8 only the candidate did
    (better: p = 0.0078)."""
    outcomes = outcomes or _outcomes(both_right=30, candidate_only=8, baseline_only=0, both_wrong=0)
    baseline_template, baseline_model = baseline or ("default", model)
    return JudgeComparison.objects.create(
        template=template,
        model=model,
        baseline_template=baseline_template,
        baseline_model=baseline_model,
        state=state,
        done=len(outcomes),
        total=len(outcomes),
        figures=comparison_figures(outcomes),
    )


def test_making_a_default_records_it_and_the_next_validation_uses_it(
    scripted_judge: ScriptedJudge, operator: Any
) -> None:
    """Issue 27, item 5: a finished comparison's candidate becomes the default, recorded
    with who chose it and the comparison; the next verdict is made with it, an earlier
    one keeps its judge; judge_bench's defaults follow."""
    scripted_judge.replies = [verdict("accepted")]
    before = validation_run(task_id=validating_task().pk, attempt_index=1)
    assert before is not None and before.template_name == "default"
    assert current_judge() == ("default", JUDGE)

    comparison = _finished_comparison("terse", JUDGE)
    chosen = judge_default_make(
        comparison_id=comparison.pk, chosen_by=operator, note="better"
    ).default
    assert (chosen.template, chosen.model, chosen.comparison, chosen.chosen_by) == (
        "terse",
        JUDGE,
        comparison,
        operator,
    )
    assert current_judge() == ("terse", JUDGE)

    after = validation_run(task_id=validating_task().pk, attempt_index=1)
    assert after is not None and after.template_name == "terse"
    assert after.template_version.startswith("terse@")
    before.refresh_from_db()
    assert before.template_name == "default"


@pytest.mark.parametrize("state", ["queued", "running", "failed"])
def test_making_a_default_from_an_unfinished_comparison_is_refused_with_nothing_changed(
    state: str, operator: Any, settings: Any
) -> None:
    """Issue 27, item 5: only a finished comparison makes a default; otherwise nothing
    is recorded and the judge stays as it was."""
    settings.VALIDATOR_MODEL = "offline:judge"
    comparison = _finished_comparison("terse", "offline:judge", state=state)
    with pytest.raises(StaleAction, match="only a finished comparison"):
        judge_default_make(comparison_id=comparison.pk, chosen_by=operator)
    assert not JudgeDefault.objects.exists()
    assert current_judge() == ("default", "offline:judge")


def _task_state(task: Any) -> tuple[Any, ...]:
    task.refresh_from_db()
    return (
        task.status,
        task.version,
        task.validation_outcome,
        task.updated_at,
        TaskEvent.objects.filter(task=task).count(),
        WebhookDelivery.objects.filter(task_id=task.pk).count(),
        Audit.objects.filter(task=task).count(),
        OutboxJob.objects.exclude(name=SHADOW_JOB).count(),
        ValidationSnapshot.objects.originals().filter(task=task).count(),
    )


def test_shadow_mode_moves_nothing_and_stores_only_a_shadow_snapshot(
    scripted_judge: ScriptedJudge, operator: Any, settings: Any
) -> None:
    """Issue 27, item 5: with a candidate in shadow, an original verdict queues a shadow
    job in its own transaction; the job stores a kind=shadow snapshot beside the original
    (the history the original saw) and moves nothing: task status, events, webhook
    deliveries, audits and jobs stay as they were. A second delivery adds nothing."""
    settings.AUDIT_RATE = 1.0  # the original is drawn for an audit; the shadow never is
    settings.WEBHOOK_ALLOW_PRIVATE = True
    shadow = shadow_start(template="terse", model="offline:judge", started_by=operator)
    scripted_judge.replies = [verdict("accepted")]
    task = validating_task()
    webhook_endpoint_create(owner=task.owner, url="http://127.0.0.1:1/hook", events=None)

    original = validation_run(task_id=task.pk, attempt_index=1)
    assert original is not None and original.status == "accepted"
    pending = ShadowVerdict.objects.get()
    assert (pending.shadow, pending.original, pending.state) == (shadow, original, "queued")
    assert OutboxJob.objects.filter(name=SHADOW_JOB, args=[pending.pk]).count() == 1
    assert Audit.objects.filter(task=task).count() == 1
    before = _task_state(task)
    calls = len(scripted_judge.calls)

    assert shadow_validation_job(pending.pk) == "done"
    assert _task_state(task) == before
    assert len(scripted_judge.calls) == calls  # the candidate judged, not the current judge
    shadow_snapshot = ValidationSnapshot.objects.get(kind="shadow")
    assert shadow_snapshot.companion_of == original
    assert (shadow_snapshot.template_name, shadow_snapshot.model_name) == ("terse", "offline:judge")
    assert shadow_snapshot.route == "" and shadow_snapshot.audit_probability is None
    assert shadow_snapshot.status == "accepted"  # the offline judge finds the figure
    pending.refresh_from_db()
    assert pending.state == "done" and pending.snapshot == shadow_snapshot

    assert shadow_validation_job(pending.pk) == "done"  # a late duplicate
    assert ValidationSnapshot.objects.filter(kind="shadow").count() == 1
    assert _task_state(task) == before
    assert shadow_validation_job(999_999) == "gone"

    # Its cost is counted with the operators' replays, not as the attempt's validation.
    validation_cost = task_cost(task).attempts[0].validation
    ValidationSnapshot.objects.filter(kind="shadow").update(cost=Decimal("0.25"))
    assert task_cost(task).replays.amount == Decimal("0.25")
    assert task_cost(task).attempts[0].validation == validation_cost

    figures = shadow_figures(shadow)
    assert figures["judged"] == 1
    assert figures["with_current"].compared == 1 and figures["with_current"].rate == 1.0
    assert figures["with_current"].confusion == ((1, 0), (0, 0))


def test_stopping_shadow_mode_stops_new_shadow_jobs(
    scripted_judge: ScriptedJudge, operator: Any
) -> None:
    """Issue 27, item 5: one candidate in shadow at a time; once stopped, a new verdict
    queues no shadow job."""
    shadow_start(template="terse", model="offline:judge", started_by=operator)
    with pytest.raises(StaleAction, match="already judging in shadow"):
        shadow_start(template="default", model="offline:judge", started_by=operator)
    assert ShadowJudge.objects.count() == 1
    stopped = shadow_stop(stopped_by=operator)
    assert not stopped.active and stopped.stopped_at is not None
    with pytest.raises(StaleAction, match="No candidate"):
        shadow_stop(stopped_by=operator)

    scripted_judge.replies = [verdict("accepted")]
    assert validation_run(task_id=validating_task().pk, attempt_index=1) is not None
    assert not ShadowVerdict.objects.exists()
    assert not OutboxJob.objects.filter(name=SHADOW_JOB).exists()


def test_the_verdict_reads_the_candidate_in_shadow_with_its_own_insert(
    scripted_judge: ScriptedJudge, operator: Any
) -> None:
    """Issue 48: which candidate judges in shadow is read by the verdict's INSERT, not by
    a statement of its own; its job is queued with the verdict as before."""
    shadow = shadow_start(template="terse", model="offline:judge", started_by=operator)
    scripted_judge.replies = [verdict("accepted")]
    task = validating_task()
    with CaptureQueriesContext(connection) as queries:
        original = validation_run(task_id=task.pk, attempt_index=1)
    pending = ShadowVerdict.objects.get()
    assert (pending.shadow, pending.original) == (shadow, original)
    assert OutboxJob.objects.filter(name=SHADOW_JOB, args=[pending.pk]).count() == 1
    reads = [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].startswith("SELECT") and "evidence_app_shadowjudge" in q["sql"]
    ]
    assert reads == []


def test_a_verdict_is_judged_by_the_default_read_with_the_validation_claim(
    scripted_judge: ScriptedJudge, operator: Any
) -> None:
    """Issue 48: the team's current judge, read with the validation claim, judges the
    verdict; with no default made, the configured one does."""
    scripted_judge.replies = [verdict("accepted"), verdict("accepted")]
    first = validation_run(task_id=validating_task().pk, attempt_index=1)
    assert first is not None and (first.template_name, first.model_name) == ("default", JUDGE)
    JudgeDefault.objects.create(template="terse", model=JUDGE, chosen_by=operator)
    with CaptureQueriesContext(connection) as queries:
        second = validation_run(task_id=validating_task().pk, attempt_index=1)
    assert second is not None and (second.template_name, second.model_name) == ("terse", JUDGE)
    if connection.vendor == "postgresql":
        reads = [
            q["sql"]
            for q in queries.captured_queries
            if q["sql"].startswith("SELECT") and "evidence_app_judgedefault" in q["sql"]
        ]
        assert reads == []  # read by the claim's UPDATE ... RETURNING


def test_a_failing_shadow_job_is_recorded_and_not_tried_again(
    scripted_judge: ScriptedJudge, operator: Any, settings: Any
) -> None:
    """Issue 27, item 5: a shadow job that crashes is marked failed with the reason and a
    later delivery does not run it again; deliveries that never finish stop after
    JOB_MAX_TRIES."""
    ShadowJudge.objects.create(template="retired", model="offline:judge", started_by=operator)
    scripted_judge.replies = [verdict("accepted")]
    task = validating_task()
    validation_run(task_id=task.pk, attempt_index=1)
    pending = ShadowVerdict.objects.get()
    before = _task_state(task)
    assert shadow_validation_job(pending.pk) == "failed"
    pending.refresh_from_db()
    assert "retired" in pending.error and pending.tries == 1
    assert shadow_validation_job(pending.pk) == "failed"
    pending.refresh_from_db()
    assert pending.tries == 1
    assert not ValidationSnapshot.objects.filter(kind="shadow").exists()
    assert _task_state(task) == before

    settings.JOB_MAX_TRIES = 2
    ShadowVerdict.objects.filter(pk=pending.pk).update(state="queued", tries=2)
    assert shadow_validation_job(pending.pk) == "failed"
    pending.refresh_from_db()
    assert "stopped after 2 tries" in pending.error


def test_gate_cases_are_the_shipped_held_out_cases() -> None:
    """Issue 27, item 5: the gate judges the held-out half of the shipped cases files."""
    cases = gate_cases()
    assert cases and {c["split"] for c in cases} == {"heldout"}
    assert {c["dataset"] for c in cases} == {"handbook", "fever", "halueval"}
    assert [c["id"] for c in gate_cases(FEW_CASES)] == FEW_CASES


def test_a_comparison_of_fewer_than_the_minimum_cases_cannot_change_the_judge(
    operator: Any, settings: Any
) -> None:
    """Issue 39 item 4: a better candidate on 2 cases (or on MIN_COMPARED_CASES - 1) is
    refused with the minimum named; nothing changes."""
    settings.VALIDATOR_MODEL = "offline:judge"
    few = _outcomes(
        both_right=MIN_COMPARED_CASES - 9, candidate_only=8, baseline_only=0, both_wrong=0
    )
    comparison = _finished_comparison("terse", "offline:judge", outcomes=few)
    assert comparison.figures["verdict"] == BETTER and comparison.done == MIN_COMPARED_CASES - 1
    with pytest.raises(InvalidInput, match=f"at least {MIN_COMPARED_CASES} compared cases"):
        judge_default_make(
            comparison_id=comparison.pk, chosen_by=operator, note="x" * 40, override=True
        )
    assert not JudgeDefault.objects.exists()


@pytest.mark.parametrize(
    ("candidate_only", "baseline_only", "verdict"), [(0, 8, WORSE), (4, 3, NO_DIFFERENCE)]
)
def test_a_candidate_not_found_better_needs_a_reason_and_a_second_confirmation(
    operator: Any, settings: Any, candidate_only: int, baseline_only: int, verdict: str
) -> None:
    """Issue 39 item 4: a worse candidate (p = 0.0078) or one with no significant
    difference is refused with a short note, or without the second confirmation; with a
    reason and the confirmation it becomes the judge, the reason in the history."""
    settings.VALIDATOR_MODEL = "offline:judge"
    outcomes = _outcomes(
        both_right=30, candidate_only=candidate_only, baseline_only=baseline_only, both_wrong=0
    )
    comparison = _finished_comparison("terse", "offline:judge", outcomes=outcomes)
    assert comparison.figures["verdict"] == verdict
    reason = "Cheaper model; the three failures are all on the injection cases."
    for note, override in (("", False), ("too short", True), (reason, False)):
        with pytest.raises(InvalidInput, match="written reason"):
            judge_default_make(
                comparison_id=comparison.pk, chosen_by=operator, note=note, override=override
            )
    assert not JudgeDefault.objects.exists()
    change = judge_default_make(
        comparison_id=comparison.pk, chosen_by=operator, note=reason, override=True
    )
    assert (change.default.template, change.default.note) == ("terse", reason)
    assert current_judge() == ("terse", "offline:judge")


def test_a_comparison_against_a_judge_no_longer_current_is_stale_and_refused(
    operator: Any, settings: Any
) -> None:
    """Issue 39 item 4: after the judge changed, an older comparison (made against the
    previous judge) cannot make its candidate the default: nothing changes."""
    settings.VALIDATOR_MODEL = "offline:judge"
    first = _finished_comparison("terse", "offline:judge")
    older = _finished_comparison("terse", "offline:judge-b", baseline=("default", "offline:judge"))
    judge_default_make(comparison_id=first.pk, chosen_by=operator)
    assert comparison_is_stale(older, current_judge())
    with pytest.raises(InvalidInput, match="no longer the judge"):
        judge_default_make(comparison_id=older.pk, chosen_by=operator)
    assert JudgeDefault.objects.count() == 1 and current_judge() == ("terse", "offline:judge")


def test_a_default_change_stops_or_restarts_shadow_mode_with_fresh_figures(
    operator: Any, settings: Any
) -> None:
    """Issue 39 item 4: the candidate in shadow becoming the judge stops shadow mode; any
    other change restarts it (a new shadow row, so its figures start afresh against the
    new judge; the old row is stopped with its figures kept)."""
    settings.VALIDATOR_MODEL = "offline:judge"
    other = shadow_start(template="default", model="offline:judge-b", started_by=operator)
    change = judge_default_make(
        comparison_id=_finished_comparison("terse", "offline:judge").pk, chosen_by=operator
    )
    assert change.shadow_stopped == other and change.shadow_restarted is not None
    other.refresh_from_db()
    assert not other.active
    restarted = ShadowJudge.objects.get(active=True)
    assert (restarted.pk, restarted.model) == (change.shadow_restarted.pk, "offline:judge-b")
    assert restarted.pk != other.pk and not restarted.verdicts.exists()

    same = judge_default_make(
        comparison_id=_finished_comparison(
            "default", "offline:judge-b", baseline=("terse", "offline:judge")
        ).pk,
        chosen_by=operator,
    )
    assert same.shadow_stopped == restarted and same.shadow_restarted is None
    assert not ShadowJudge.objects.filter(active=True).exists()
    assert current_judge() == ("default", "offline:judge-b")


def test_at_the_target_the_candidate_that_automates_more_at_its_threshold_is_better() -> None:
    """Issue 38, item 7: each judge certified on its own scored accepts; the candidate
    whose higher scores separate right from wrong automates more at the same risk, and
    the paired test on the correct answers says so."""
    outcomes = []
    for i in range(200):
        outcomes.append(
            {
                "id": f"c{i}",
                "kind": "correct",
                "baseline": "accepted",
                "candidate": "accepted",
                "baseline_score": 0.5,
                "candidate_score": 0.99,
            }
        )
    for i in range(20):
        outcomes.append(
            {
                "id": f"w{i}",
                "kind": "wrong",
                "baseline": "accepted",
                "candidate": "accepted",
                "baseline_score": 0.5,
                "candidate_score": 0.1,
            }
        )
    figures = at_target_figures(outcomes, target=0.02)
    assert figures["baseline"]["threshold"] is None
    assert figures["candidate"]["threshold"] == pytest.approx(0.99)
    assert figures["candidate"]["automated"]["k"] == 200
    assert figures["candidate"]["wrong_auto_accepted"] == 0
    assert figures["baseline"]["today"]["k"] == 200
    assert figures["candidate_only"] == 200 and figures["verdict"] == BETTER
