"""Issue 27, item 3: a second judge on the same rendered input; disagreement on accepted
versus not sends the task to a person with both verdicts stored."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from django.urls import reverse
from pydantic_ai.messages import ModelMessage, SystemPromptPart, UserPromptPart
from pydantic_ai.models.function import FunctionModel

from evidence_app.models import Audit, TaskAuditSettings, ValidationSnapshot
from evidence_app.validation.judge_calls import second_model_name
from evidence_app.validation.selectors import daily_costs, judge_pair_stats, task_cost
from evidence_app.validation.services import validation_run
from evidence_app.validation.task_settings import settings_of
from project.costs import format_cost
from project.llm.registry import register_model, unregister_model
from tasks_app.models import Task, TaskEvent
from tests.api.conftest import bearer_client
from tests.evidence_app.validation.test_costs import PRICED_JUDGE, UsageJudge, genai_price
from tests.evidence_app.validation_helpers import JUDGE, ScriptedJudge, validating_task, verdict

pytestmark = pytest.mark.django_db

SECOND = "test:second-judge"


@pytest.fixture
def second_judge(settings: Any) -> Iterator[ScriptedJudge]:
    """A second scripted judge registered as ``test:second-judge`` and named by the
    setting."""
    judge = ScriptedJudge()
    register_model(SECOND, judge.factory())
    settings.VALIDATOR_SECOND_MODEL = SECOND
    yield judge
    unregister_model(SECOND)


def _validate(task: Any) -> ValidationSnapshot:
    snapshot = validation_run(task_id=task.pk, attempt_index=task.attempt_count)
    assert snapshot is not None
    return snapshot


def _prompt_parts(messages: list[ModelMessage]) -> tuple[str, str]:
    parts = messages[0].parts  # type: ignore[union-attr]
    system = next(p.content for p in parts if isinstance(p, SystemPromptPart))
    user = next(p.content for p in parts if isinstance(p, UserPromptPart))
    return system, str(user)


def test_disagreement_sends_the_task_to_a_person_with_both_verdicts_and_no_audit(
    scripted_judge: ScriptedJudge, second_judge: ScriptedJudge, settings: Any
) -> None:
    """Issue 27, item 3: the first accepts, the second rejects: needs_review with the
    reason naming both, route to_person, never drawn even at AUDIT_RATE=1."""
    settings.AUDIT_RATE = settings.AUDIT_REJECT_RATE = 1.0
    scripted_judge.replies = [verdict("accepted")]
    second_judge.replies = [verdict("rejected")]
    task = validating_task()
    snapshot = _validate(task)
    task.refresh_from_db()
    assert task.status == "needs_review" and task.validation_outcome is None
    assert snapshot.status == "accepted" and snapshot.route == "to_person"
    assert snapshot.audit_probability is None
    companion = ValidationSnapshot.objects.get(kind="second")
    assert companion.companion_of_id == snapshot.pk and companion.route == ""
    assert companion.status == "rejected" and companion.model_name == SECOND
    assert companion.audit_probability is None
    assert not Audit.objects.exists()
    event = TaskEvent.objects.filter(task=task).last()
    assert event is not None
    assert event.reason == f"judges disagree: {JUDGE} says accepted, {SECOND} says rejected"


def test_a_first_rejection_with_a_second_acceptance_is_a_disagreement_too(
    scripted_judge: ScriptedJudge, second_judge: ScriptedJudge
) -> None:
    """Issue 27, item 3: no retry when the judges disagree; a person decides."""
    scripted_judge.replies = [verdict("rejected")]
    second_judge.replies = [verdict("accepted")]
    task = validating_task(max_attempts=3)
    _validate(task)
    task.refresh_from_db()
    assert task.status == "needs_review" and task.attempt_count == 1
    event = TaskEvent.objects.filter(task=task).last()
    assert event is not None and event.reason.startswith("judges disagree:")


def test_both_accepting_accepts_the_task_and_both_judges_see_the_same_prompt(
    scripted_judge: ScriptedJudge, second_judge: ScriptedJudge
) -> None:
    """Issue 27, item 3: both accept → awaiting_feedback; the second judgement gets
    exactly the first one's system prompt and rendered input."""
    scripted_judge.replies = [verdict("accepted")]
    second_judge.replies = [verdict("accepted", score=0.9)]
    task = validating_task()
    snapshot = _validate(task)
    task.refresh_from_db()
    assert task.status == "awaiting_feedback" and task.validation_outcome == "accepted"
    assert snapshot.route == "auto_accepted"
    assert len(scripted_judge.calls) == 1 and len(second_judge.calls) == 1
    assert _prompt_parts(second_judge.calls[0]) == _prompt_parts(scripted_judge.calls[0])
    companion = snapshot.companions.get()
    assert companion.kind == "second" and companion.score == 0.9
    assert companion.system_prompt == snapshot.system_prompt
    assert companion.rendered_input == snapshot.rendered_input


def test_both_rejecting_follows_the_first_judges_path(
    scripted_judge: ScriptedJudge, second_judge: ScriptedJudge
) -> None:
    """Issue 27, item 3: agreement on "not accepted" keeps the retry of V2."""
    scripted_judge.replies = [verdict("rejected")]
    second_judge.replies = [verdict("insufficient_evidence")]
    task = validating_task(max_attempts=2)
    snapshot = _validate(task)
    task.refresh_from_db()
    assert task.status == "needs_revision"
    assert snapshot.route == "auto_rejected"
    assert snapshot.companions.get().status == "insufficient_evidence"


def test_a_second_judge_that_fails_sends_an_acceptance_to_a_person(
    scripted_judge: ScriptedJudge, second_judge: ScriptedJudge, settings: Any
) -> None:
    """Issue 27, item 3: the second judge's error counts as not accepted: never
    silently passed."""
    settings.AUDIT_RATE = 1.0
    scripted_judge.replies = [verdict("accepted")]
    second_judge.replies = [RuntimeError("the second model fell over")]
    task = validating_task()
    snapshot = _validate(task)
    task.refresh_from_db()
    assert task.status == "needs_review"
    companion = snapshot.companions.get()
    assert companion.status == "validator_error" and "fell over" in companion.error
    event = TaskEvent.objects.filter(task=task).last()
    assert event is not None
    assert event.reason == (
        f"judges disagree: {JUDGE} says accepted, {SECOND} says validator_error"
    )
    assert not Audit.objects.exists()


def test_an_unknown_second_model_is_an_error_verdict_and_a_person_looks(
    scripted_judge: ScriptedJudge, settings: Any
) -> None:
    """Issue 27, item 3: a second model the registry cannot resolve counts as not
    accepted."""
    settings.VALIDATOR_SECOND_MODEL = "offline:nobody"
    scripted_judge.replies = [verdict("accepted")]
    task = validating_task()
    snapshot = _validate(task)
    task.refresh_from_db()
    assert task.status == "needs_review"
    assert "cannot be used" in snapshot.companions.get().error


def test_none_on_the_task_disables_the_second_judge_named_by_the_setting(
    scripted_judge: ScriptedJudge, second_judge: ScriptedJudge
) -> None:
    """Issue 27, item 3: a task's "none" turns the second judge off."""
    scripted_judge.replies = [verdict("accepted")]
    second_judge.replies = [verdict("rejected")]
    task = validating_task(second_model="none")
    assert second_model_name(settings_of(task)) == ""
    snapshot = _validate(task)
    task.refresh_from_db()
    assert task.status == "awaiting_feedback"
    assert second_judge.calls == [] and not snapshot.companions.exists()


def test_the_tasks_own_second_model_is_used_without_the_setting(
    scripted_judge: ScriptedJudge, second_judge: ScriptedJudge, settings: Any
) -> None:
    """Issue 27, item 3: per task: ``second_model`` names the second judge."""
    settings.VALIDATOR_SECOND_MODEL = ""
    scripted_judge.replies = [verdict("accepted")]
    second_judge.replies = [verdict("rejected")]
    plain = validating_task()
    assert second_model_name(settings_of(plain)) == ""
    _validate(plain)
    assert second_judge.calls == []
    task = validating_task(second_model=SECOND)
    snapshot = _validate(task)
    task.refresh_from_db()
    assert task.status == "needs_review"
    assert snapshot.companions.get().model_name == SECOND


def test_without_a_second_model_nothing_changes(scripted_judge: ScriptedJudge) -> None:
    """Issue 27, item 3: no second judge configured: one verdict, as before."""
    scripted_judge.replies = [verdict("accepted")]
    snapshot = _validate(validating_task())
    assert not ValidationSnapshot.objects.filter(kind="second").exists()
    assert snapshot.route == "auto_accepted"


PRICED_SECOND = "anthropic:claude-sonnet-4-5"


@pytest.fixture
def priced_pair(settings: Any) -> Iterator[tuple[UsageJudge, UsageJudge]]:
    """Two priced judges: openai:gpt-4.1 first, anthropic:claude-sonnet-4-5 second."""
    first = UsageJudge(replies=[verdict("accepted")], usage=[(1200, 300)])
    second = UsageJudge(replies=[verdict("accepted")], usage=[(1000, 100)])
    register_model(PRICED_JUDGE, lambda: FunctionModel(first.respond, model_name="scripted"))
    register_model(PRICED_SECOND, lambda: FunctionModel(second.respond, model_name="scripted"))
    settings.VALIDATOR_MODEL = PRICED_JUDGE
    settings.VALIDATOR_SECOND_MODEL = PRICED_SECOND
    settings.MODEL_MAX_RETRIES = 0
    yield first, second
    unregister_model(PRICED_JUDGE)
    unregister_model(PRICED_SECOND)


def test_the_second_judges_cost_is_counted_per_task_in_the_api_page_and_per_day(
    client: Any, operator: Any, priced_pair: tuple[UsageJudge, UsageJudge]
) -> None:
    """Issue 27, item 3: the second judge's cost is part of the task's cost, shown as
    "second judge" per attempt (page and API) and as its own row per day."""
    task = validating_task()
    validation_run(task_id=task.pk, attempt_index=1)
    first = genai_price("openai", "gpt-4.1", 1200, 300)
    second = genai_price("anthropic", "claude-sonnet-4-5", 1000, 100)
    cost = task_cost(task)
    assert cost.attempts[0].validation.value == first
    assert cost.attempts[0].second_judge.value == second
    assert cost.total.amount == first + second
    body = bearer_client(operator).get(f"/api/v1/tasks/{task.pk}").json()
    attempt = body["cost"]["attempts"][0]
    assert Decimal(attempt["second_judge"]["amount"]) == second
    assert Decimal(attempt["validation"]["amount"]) == first
    assert Decimal(body["cost"]["total"]["amount"]) == first + second
    client.force_login(operator)
    page = client.get(f"/tasks/{task.pk}/").content.decode()
    assert f"second judge {format_cost(second)}" in page
    rows = {(d.role, d.model_name): d.cost.value for d in daily_costs(days=1)}
    assert rows[("validator", PRICED_JUDGE)] == first
    assert rows[("second judge", PRICED_SECOND)] == second
    overview = client.get("/ops/").content.decode()
    assert "Second judge" in overview


def test_a_task_is_created_with_a_second_model_through_the_api_and_the_form(
    client: Any, requester: Any, scripted_judge: ScriptedJudge
) -> None:
    """Issue 27, item 3: ``second_model`` at creation: a name the registry resolves, or
    "none"; anything else is refused (422 / a form error) and nothing is created."""
    api = bearer_client(requester)
    created = api.post(
        "/api/v1/tasks",
        {"request": "What is the training budget?", "second_model": JUDGE},
        content_type="application/json",
    )
    assert created.status_code == 201, created.content
    assert created.json()["second_model"] == JUDGE
    assert TaskAuditSettings.objects.get(task_id=created.json()["id"]).second_model == JUDGE
    refused = api.post(
        "/api/v1/tasks",
        {"request": "What is the training budget?", "second_model": "offline:nobody"},
        content_type="application/json",
    )
    assert refused.status_code == 422
    assert "offline:nobody" in refused.content.decode()
    assert Task.objects.count() == 1
    client.force_login(requester)
    form = {"request": "Budget?", "validation_policy": "always", "second_model": "nonsense"}
    response = client.post(reverse("task_new"), form)
    assert response.status_code == 422
    assert "no provider prefix" in response.content.decode()
    assert Task.objects.count() == 1
    response = client.post(reverse("task_new"), {**form, "second_model": "None"})
    assert response.status_code == 302
    assert settings_of(Task.objects.latest("id")).second_model == "none"


def _reason_line(page: str) -> str:
    line = page.split('id="verdict-reason"', 1)[1].split("</p>", 1)[0]
    return line.split("</strong>", 1)[1].strip()


def test_the_review_page_shows_both_verdicts_side_by_side_and_says_judges_disagree(
    client: Any, reviewer: Any, scripted_judge: ScriptedJudge, second_judge: ScriptedJudge
) -> None:
    """Issue 27, item 3: the verdict card of a task whose judges disagree shows both
    verdicts (status, score, why, model, template, cost) and the reason "judges
    disagree"; the requester sees the reason, not the pair."""
    scripted_judge.replies = [verdict("accepted")]
    second_judge.replies = [verdict("rejected", issues=["the figure is not in the evidence"])]
    task = validating_task()
    snapshot = _validate(task)
    client.force_login(reviewer)
    page = client.get(f"/tasks/{task.pk}/").content.decode()
    assert 'id="judge-pair"' in page and "judges disagree</span>" in page
    assert _reason_line(page).endswith(
        f"Judges disagree: {JUDGE} says accepted, {SECOND} says rejected"
    )
    first = page.split('data-judge="first"', 1)[1].split("</article>", 1)[0]
    second = page.split('data-judge="second"', 1)[1].split("</article>", 1)[0]
    assert "Accepted" in first and JUDGE in first and "1.00" in first
    assert "Rejected" in second and SECOND in second and "0.20" in second
    assert "not in the evidence" in second or "contradicted" in second
    assert snapshot.template_version.split("@")[0] in first
    assert "cost unknown" in first and "cost unknown" in second
    client.force_login(task.owner)
    own = client.get(f"/tasks/{task.pk}/").content.decode()
    assert f"Judges disagree: {JUDGE} says accepted" in _reason_line(own)
    assert 'id="judge-pair"' not in own


def test_judges_that_agree_are_shown_side_by_side_without_a_disagreement(
    client: Any, reviewer: Any, scripted_judge: ScriptedJudge, second_judge: ScriptedJudge
) -> None:
    """Issue 27, item 3: both judges' verdicts are shown when they agree, too."""
    scripted_judge.replies = [verdict("accepted")]
    second_judge.replies = [verdict("accepted")]
    task = validating_task()
    _validate(task)
    client.force_login(reviewer)
    page = client.get(f"/tasks/{task.pk}/").content.decode()
    assert 'id="judge-pair"' in page and "they agree" in page
    assert "judges disagree" not in page


def test_judge_versus_judge_agreement_per_model_pair_on_the_page_and_the_api(
    client: Any, operator: Any, scripted_judge: ScriptedJudge, second_judge: ScriptedJudge
) -> None:
    """Issue 27, item 3: judge-versus-judge agreement (accepted versus not), rate, kappa
    and count per (first model, second model), beside judge-versus-person."""
    scripted_judge.replies = [
        verdict("accepted"),
        verdict("accepted"),
        verdict("rejected"),
        verdict("accepted"),
    ]
    second_judge.replies = [
        verdict("accepted"),
        verdict("rejected"),
        verdict("rejected"),
        RuntimeError("down"),
    ]
    for _ in range(4):
        _validate(validating_task(max_attempts=1))
    [group] = judge_pair_stats()
    assert (group.first_model, group.second_model) == (JUDGE, SECOND)
    assert group.count == 4 and group.compared == 3
    # Compared: (yes, yes), (yes, no), (no, no): 2 of 3 agree; po=2/3, pe=2/3*1/3+1/3*2/3.
    assert group.agreement_rate == pytest.approx(2 / 3)
    assert group.kappa == pytest.approx((2 / 3 - 4 / 9) / (1 - 4 / 9))
    assert group.disagreements == 2  # the rejection and the failed second judge
    assert group.confusion["accepted"] == {"accepted": 1, "rejected": 1, "validator_error": 1}
    body = bearer_client(operator).get("/api/v1/stats/agreement").json()
    [pair] = body["judge_pairs"]
    assert pair["count"] == 4 and pair["disagreements"] == 2
    assert pair["kappa"] == pytest.approx(group.kappa)
    client.force_login(operator)
    page = client.get(reverse("ops_agreement")).content.decode()
    row = page.split(f'data-pair="{JUDGE} {SECOND}"', 1)[1].split("</tr>", 1)[0]
    assert "67 %" in row and "0.400" in row


def test_the_operator_pages_place_a_second_verdict_beside_its_original(
    client: Any, operator: Any, scripted_judge: ScriptedJudge, second_judge: ScriptedJudge
) -> None:
    """Issue 27, item 3: the operator overview counts second-judge verdicts apart, and a
    second verdict's validation page shows its original."""
    scripted_judge.replies = [verdict("accepted")]
    second_judge.replies = [verdict("rejected")]
    snapshot = _validate(validating_task())
    companion = snapshot.companions.get()
    client.force_login(operator)
    overview = client.get(reverse("ops_index")).content.decode()
    assert "<dt>Second judge</dt><dd>1</dd>" in overview
    page = client.get(reverse("ops_validation", args=[companion.pk])).content.decode()
    card = page.split('id="original-card"', 1)[1].split("</section>", 1)[0]
    assert f"#{snapshot.pk} ·" in card
