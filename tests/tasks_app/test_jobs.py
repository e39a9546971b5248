"""Attempt jobs: claim with lease, fenced writes, redelivery, abandon, reaper, enqueue on
commit, revision prompts, Celery delivery settings (X1, S4, S5, E2)."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.utils import timezone
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo

from project.celery import app as celery_app
from project.celery import soft_time_limit
from tasks_app.jobs import reap_attempts_job, run_attempt_job
from tasks_app.models import OutboxJob, Run, RunMessage, Task, TaskEvent, ToolEvidence
from tasks_app.runtime.agents.loop import AgentResult
from tasks_app.runtime.agents.tools import REGISTRY, Tool, ToolOutput, register_tool
from tasks_app.runtime.attempts import attempt_claim, attempt_finish
from tasks_app.runtime.reaper import attempt_reap
from tasks_app.workflow import services, transitions
from tasks_app.workflow.fence import Fence, LeaseLost
from tasks_app.workflow.states import TaskStatus as S
from tests.factories import (
    KnowledgeDocumentFactory,
    RunFactory,
    TaskFactory,
    ValidationSnapshotFactory,
)


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, list[Any]]]:
    """Messages the runtime sends to Celery by name (the validation hand-off)."""
    messages: list[tuple[str, list[Any]]] = []
    monkeypatch.setattr(
        celery_app,
        "send_task",
        lambda name, args=None, kwargs=None, **kw: messages.append((name, list(args or []))),
    )
    return messages


def researching_model(answer: str = "The budget is 1,750 EUR (source: Training Budget).") -> Any:
    """Searches once, then answers."""
    prompts: list[str] = []

    def fn(messages: list[Any], info: AgentInfo) -> ModelResponse:
        first = messages[0].parts[1]
        assert isinstance(first, UserPromptPart)
        if len(messages) == 1:
            prompts.append(str(first.content))
            if info.function_tools:
                return ModelResponse(
                    parts=[
                        ToolCallPart(
                            "search_knowledge", {"query": "training budget"}, tool_call_id="s1"
                        )
                    ]
                )
        return ModelResponse(parts=[TextPart(answer)])

    fn.prompts = prompts  # type: ignore[attr-defined]
    return fn


@pytest.fixture
def agent_model(scripted_model: Any, settings: Any) -> Any:
    fn = researching_model()
    settings.AGENT_MODEL = scripted_model(fn, "test:agent")
    KnowledgeDocumentFactory(title="Training Budget", body="The training budget is 1,750 EUR.")
    return fn


@pytest.mark.django_db
def test_attempt_with_an_answer_goes_to_validating_and_hands_off_on_commit(
    agent_model: Any, sent: list[Any], django_capture_on_commit_callbacks: Any
) -> None:
    """X1/X6: the job claims, runs, stores the answer, moves to validating and, after
    commit, sends evidence_app.validate_attempt with [task_id, attempt]."""
    task = TaskFactory()
    with django_capture_on_commit_callbacks(execute=True):
        assert run_attempt_job(task.pk) == S.VALIDATING
    task.refresh_from_db()
    assert task.status == S.VALIDATING and task.attempt_count == 1
    assert task.final_answer.startswith("The budget is 1,750 EUR")
    assert task.lease_token == "" and task.heartbeat_at is None
    assert sent == [("evidence_app.validate_attempt", [task.pk, 1])]
    assert list(TaskEvent.objects.filter(task=task).values_list("to_status", flat=True)) == [
        S.RUNNING,
        S.VALIDATING,
    ]
    assert ToolEvidence.objects.filter(task=task, attempt_index=1).count() == 1


@pytest.mark.django_db
def test_attempt_without_a_usable_answer_fails(
    scripted_model: Any, settings: Any, sent: list[Any]
) -> None:
    """X1: no usable answer -> failed, nothing sent to validation."""
    settings.AGENT_MODEL = scripted_model(
        lambda m, i: ModelResponse(parts=[TextPart("")]), "test:mute"
    )
    task = TaskFactory()
    assert run_attempt_job(task.pk) == S.FAILED
    task.refresh_from_db()
    assert task.status == S.FAILED and sent == []
    assert "no usable answer" in TaskEvent.objects.filter(task=task).last().reason


@pytest.mark.django_db
def test_redelivered_job_runs_the_attempt_once(agent_model: Any, sent: list[Any]) -> None:
    """X1: the same job twice, one after the other: one run, no duplicated evidence."""
    task = TaskFactory()
    assert run_attempt_job(task.pk) == S.VALIDATING
    assert run_attempt_job(task.pk) == "duplicate"
    assert Run.objects.filter(task=task).count() == 1
    assert ToolEvidence.objects.filter(task=task).count() == 1
    task.refresh_from_db()
    assert task.attempt_count == 1


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_deliveries_run_the_attempt_once(agent_model: Any, sent: list[Any]) -> None:
    """X1: two workers receive the same job at once: the claim lets exactly one run."""
    task = TaskFactory()
    barrier = threading.Barrier(2)
    results: list[str] = []

    def deliver() -> None:
        try:
            barrier.wait(timeout=10)
            results.append(run_attempt_job(task.pk))
        finally:
            connection.close()

    threads = [threading.Thread(target=deliver) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)

    # The loser finds the winner's live lease (issue 17: not a takeover), or, when it
    # was scheduled only after the winner's whole attempt (a loaded machine), the work
    # done; never a second run.
    assert len(results) == 2 and S.VALIDATING in results
    assert {r for r in results if r != S.VALIDATING} <= {"lease_held", "duplicate"}
    assert Run.objects.filter(task=task).count() == 1
    assert ToolEvidence.objects.filter(task=task).count() == 1
    assert TaskEvent.objects.filter(task=task, to_status=S.RUNNING).count() == 1


@pytest.mark.django_db
def test_needs_review_and_finished_tasks_are_never_run(agent_model: Any) -> None:
    """S4: a job for a task in needs_review (or finished) does nothing; nor does one for
    a task whose attempt runs under a live lease (issue 17: ``lease_held``)."""
    for status in (S.NEEDS_REVIEW, S.VALIDATING, S.CLOSED, S.ABANDONED):
        task = TaskFactory(status=status)
        assert run_attempt_job(task.pk) == "duplicate"
        task.refresh_from_db()
        assert task.status == status and task.attempt_count == 0
    task = TaskFactory(status=S.RUNNING, lease_token="live", heartbeat_at=timezone.now())
    assert run_attempt_job(task.pk) == "lease_held"
    task.refresh_from_db()
    assert task.status == S.RUNNING and task.lease_token == "live" and task.attempt_count == 0
    assert Run.objects.count() == 0


@pytest.mark.django_db
def test_a_late_finisher_whose_lease_was_taken_over_writes_nothing() -> None:
    """X1: after a takeover, the old lease's writes update 0 rows and its result is
    discarded; the new owner's state is untouched."""
    task = TaskFactory()
    claim = attempt_claim(task_id=task.pk)
    assert claim is not None
    # The reaper (or another worker) took the attempt over.
    Task.objects.filter(pk=task.pk).update(lease_token="new-owner")

    assert (
        Task.objects.filter(pk=task.pk, lease_token=claim.lease_token).update(final_answer="x") == 0
    )
    with pytest.raises(LeaseLost):
        claim.fence.beat()
    with pytest.raises(LeaseLost), claim.fence.write():
        pass
    late = AgentResult(run_id=0, output_text="a late answer", finish_reason="stop", success=True)
    assert attempt_finish(claim=claim, result=late) is None
    task.refresh_from_db()
    assert task.status == S.RUNNING and task.lease_token == "new-owner" and task.final_answer == ""


@pytest.fixture
def side_effect_tool() -> Any:
    """A tool that runs a test-supplied action (a takeover, an abandon) in the worker's
    thread while the run is in progress, as another process would."""
    actions: list[Any] = []

    def act() -> ToolOutput:
        actions.pop(0)()
        return ToolOutput(content="side effect done")

    register_tool(
        Tool(name="test_side_effect", description="test", parameters={"type": "object"}, func=act)
    )
    yield actions
    REGISTRY.pop("test_side_effect", None)


def tool_then_answer(*tools: str) -> Any:
    calls = {"n": 0}

    def fn(messages: list[Any], info: AgentInfo) -> ModelResponse:
        calls["n"] += 1
        if calls["n"] <= len(tools):
            name = tools[calls["n"] - 1]
            args = {"query": "budget"} if name == "search_knowledge" else {}
            return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=f"c{calls['n']}")])
        return ModelResponse(parts=[TextPart("an answer nobody will see")])

    fn.calls = calls  # type: ignore[attr-defined]
    return fn


@pytest.mark.django_db
def test_run_stops_writing_when_its_lease_is_taken_over_mid_run(
    scripted_model: Any, settings: Any, sent: list[Any], side_effect_tool: list[Any]
) -> None:
    """X1/E2: evidence written before the takeover stays; nothing after it is written."""
    task = TaskFactory()
    side_effect_tool.append(
        lambda: Task.objects.filter(pk=task.pk).update(lease_token="someone-else")
    )
    fn = tool_then_answer("search_knowledge", "test_side_effect")
    settings.AGENT_MODEL = scripted_model(fn, "test:taken-over")

    assert run_attempt_job(task.pk) == "lease_lost"
    task.refresh_from_db()
    assert task.status == S.RUNNING and task.final_answer == "" and sent == []
    assert list(ToolEvidence.objects.filter(task=task).values_list("tool_name", flat=True)) == [
        "search_knowledge"
    ]
    assert fn.calls["n"] == 2
    assert not RunMessage.objects.filter(run__task=task, content="side effect done").exists()
    run = Run.objects.get(task=task)
    assert run.status == "failed" and run.finish_reason == "lease_lost"


@pytest.mark.django_db
def test_abandoned_task_stops_at_the_next_step(
    scripted_model: Any, settings: Any, requester: Any, sent: list[Any], side_effect_tool: list[Any]
) -> None:
    """S5: abandoning a running task cancels its attempt at the next step."""
    task = TaskFactory(owner=requester)
    side_effect_tool.append(
        lambda: services.task_apply_feedback(task_id=task.pk, actor=requester, action="abandon")
    )
    fn = tool_then_answer("test_side_effect", "search_knowledge")
    settings.AGENT_MODEL = scripted_model(fn, "test:abandoned")

    assert run_attempt_job(task.pk) == "lease_lost"
    assert fn.calls["n"] == 1
    task.refresh_from_db()
    assert task.status == S.ABANDONED and sent == []
    assert ToolEvidence.objects.filter(task=task).count() == 0


@pytest.mark.django_db
def test_reaper_recovers_stale_and_missing_heartbeats_only(
    settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """X1/S4: of three running attempts (heartbeat 10 minutes old, missing, fresh) only
    the first two are re-queued; needs_review is never touched."""
    settings.ATTEMPT_LEASE_SECONDS = 300
    now = timezone.now()
    stale = TaskFactory(
        status=S.RUNNING, lease_token="a", heartbeat_at=now - timedelta(minutes=10), attempt_count=1
    )
    dead_run = RunFactory(task=stale, attempt_index=1, status="running", finish_reason="")
    missing = TaskFactory(status=S.RUNNING, lease_token="b", heartbeat_at=None)
    fresh = TaskFactory(status=S.RUNNING, lease_token="c", heartbeat_at=now - timedelta(seconds=30))
    review = TaskFactory(status=S.NEEDS_REVIEW, heartbeat_at=now - timedelta(hours=1))

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        report = attempt_reap()

    assert sorted(report.requeued) == sorted([stale.pk, missing.pk]) and report.failed == []
    for task in (stale, missing):
        task.refresh_from_db()
        assert task.status == S.OPEN and task.requeue_count == 1 and task.lease_token == ""
        assert "lease expired" in TaskEvent.objects.filter(task=task).last().reason
    dead_run.refresh_from_db()
    assert dead_run.status == "failed" and dead_run.finish_reason == "lease_expired"
    fresh.refresh_from_db()
    review.refresh_from_db()
    assert fresh.status == S.RUNNING and fresh.lease_token == "c"
    assert review.status == S.NEEDS_REVIEW
    assert len(callbacks) == 2  # each job sent from the outbox on commit (issue 17)
    assert sorted(OutboxJob.objects.values_list("args", flat=True)) == sorted(
        [[stale.pk], [missing.pk]]
    )


@pytest.mark.django_db
def test_reaper_fails_an_attempt_requeued_too_often(settings: Any) -> None:
    """X1: re-queueing is bounded by ATTEMPT_MAX_REQUEUES; then the task fails with the reason."""
    settings.ATTEMPT_MAX_REQUEUES = 2
    task = TaskFactory(status=S.RUNNING, lease_token="t", heartbeat_at=None, requeue_count=2)
    assert reap_attempts_job() == {
        "requeued": [],
        "failed": [task.pk],
        "reenqueued": [],
        "revalidated": [],
    }
    task.refresh_from_db()
    assert task.status == S.FAILED
    assert "re-run 2 times" in TaskEvent.objects.filter(task=task).last().reason


@pytest.mark.django_db
def test_enqueue_happens_on_commit_and_never_after_a_rollback(
    requester: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """X1: jobs are sent on commit, under the job id stored with the task (issue 16); a
    rolled-back transaction sends nothing, not even an outbox row (issue 17)."""
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        with pytest.raises(RuntimeError), transaction.atomic():
            services.task_create(owner=requester, request="Will be rolled back")
            raise RuntimeError("boom")
    assert callbacks == []
    assert not Task.objects.filter(request="Will be rolled back").exists()
    assert not OutboxJob.objects.exists()

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        task = services.task_create(owner=requester, request="Kept")
    # Recorded in the outbox in the same transaction, published by the one callback
    # (issue 17).
    assert len(callbacks) == 1
    row = OutboxJob.objects.get()
    assert task.job_id and (row.name, row.args, row.job_id) == (
        run_attempt_job.name,
        [task.pk],
        task.job_id,
    )
    assert row.published_at is None
    callbacks[0]()
    row.refresh_from_db()
    assert row.published_at is not None


@pytest.mark.django_db
def test_next_attempt_prompt_carries_validator_feedback_and_revise_comment(
    agent_model: Any, requester: Any, sent: list[Any]
) -> None:
    """V2/S5: attempt 2's prompt includes the rejected verdict's categorized feedback and
    the requester's revise comment, wrapped as external content."""
    task = TaskFactory(owner=requester)
    run_attempt_job(task.pk)
    ValidationSnapshotFactory(
        task=task,
        attempt_index=1,
        status="rejected",
        failure_category="incomplete",
        result={
            "status": "rejected",
            "issues": ["does not say whether the budget carries over"],
            "failure_category": "incomplete",
            "recommended_revision_prompt": "State whether unused budget carries over.",
        },
    )
    transitions.task_transition(
        transitions.Transition(
            task_id=task.pk, to_status=S.AWAITING_FEEDBACK, actor_kind="validator"
        )
    )
    services.task_apply_feedback(
        task_id=task.pk, actor=requester, action="revise", comment="Please mention part-time staff."
    )
    assert run_attempt_job(task.pk) == S.VALIDATING

    second_prompt = agent_model.prompts[-1]
    assert "## Revision" in second_prompt
    assert "State whether unused budget carries over." in second_prompt
    assert "incomplete" in second_prompt
    assert "Please mention part-time staff." in second_prompt
    assert "The budget is 1,750 EUR" in second_prompt  # the previous answer
    assert second_prompt.count("<EXTERNAL-CONTENT") >= 3
    task.refresh_from_db()
    assert task.attempt_count == 2
    assert Run.objects.filter(task=task, attempt_index=2).count() == 1


def test_celery_delivery_settings_make_a_killed_workers_job_come_back() -> None:
    """X1: acks_late, reject_on_worker_lost, prefetch 1, visibility_timeout longer than the
    time limit everywhere Celery reads it, no cancelling on a broker reconnect (issue 17),
    a soft limit a tenth before the hard one, reaper and outbox relay scheduled."""
    conf = celery_app.conf
    assert conf.task_acks_late is True
    assert conf.task_reject_on_worker_lost is True
    assert conf.worker_prefetch_multiplier == 1
    assert conf.worker_cancel_long_running_tasks_on_connection_loss is False
    assert conf.task_soft_time_limit == conf.task_time_limit * 0.9
    assert soft_time_limit(10) == 9 and soft_time_limit(1800) == 1620
    assert conf.broker_transport_options["visibility_timeout"] > conf.task_time_limit
    assert conf.result_backend_transport_options["visibility_timeout"] > conf.task_time_limit
    assert conf.beat_schedule["reap-stale-attempts"]["task"] == "tasks_app.reap_attempts"
    assert conf.beat_schedule["relay-outbox"]["task"] == "tasks_app.relay_outbox"
    assert (
        "tasks_app.run_attempt" in celery_app.tasks
        and "tasks_app.reap_attempts" in celery_app.tasks
    )


@pytest.mark.django_db
def test_fence_beat_refreshes_the_heartbeat() -> None:
    """X1: a step refreshes heartbeat_at through the lease-checked update."""
    task = TaskFactory()
    claim = attempt_claim(task_id=task.pk)
    assert claim is not None
    Task.objects.filter(pk=task.pk).update(heartbeat_at=timezone.now() - timedelta(minutes=5))
    Fence(task_id=task.pk, lease_token=claim.lease_token).beat()
    task.refresh_from_db()
    assert (timezone.now() - task.heartbeat_at).total_seconds() < 5


@pytest.mark.django_db
def test_a_misconfigured_model_fails_the_attempt_with_the_reason(
    settings: Any, monkeypatch: pytest.MonkeyPatch, sent: list[Any]
) -> None:
    """X6: a missing API key is a configuration error recorded on the run and the task,
    not a crashed worker."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    settings.AGENT_MODEL = "anthropic:claude-sonnet-4-5"
    task = TaskFactory()
    assert run_attempt_job(task.pk) == S.FAILED
    run = Run.objects.get(task=task)
    assert run.status == "failed" and "ANTHROPIC_API_KEY" in run.error
    assert "ANTHROPIC_API_KEY" in TaskEvent.objects.filter(task=task).last().reason
    assert sent == []


@pytest.mark.django_db
def test_reaper_resends_the_job_of_a_runnable_task_left_waiting(
    settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """X1/S4: an open task whose job was lost is queued again once per lease period;
    fresh open tasks and needs_review are not."""
    settings.ATTEMPT_LEASE_SECONDS = 300
    old = timezone.now() - timedelta(minutes=10)
    waiting = TaskFactory(status=S.OPEN)
    revision = TaskFactory(status=S.NEEDS_REVISION)
    fresh = TaskFactory(status=S.OPEN)
    review = TaskFactory(status=S.NEEDS_REVIEW)
    Task.objects.filter(pk__in=[waiting.pk, revision.pk, review.pk]).update(updated_at=old)

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        report = attempt_reap()
    assert sorted(report.reenqueued) == sorted([waiting.pk, revision.pk])
    assert len(callbacks) == 2  # each job sent from the outbox on commit (issue 17)
    assert sorted(OutboxJob.objects.values_list("args", flat=True)) == sorted(
        [[waiting.pk], [revision.pk]]
    )
    assert fresh.pk not in report.reenqueued and review.pk not in report.reenqueued
    # Touched: not sent again on the next sweep.
    assert attempt_reap().reenqueued == []
    waiting.refresh_from_db()
    assert waiting.status == S.OPEN


@pytest.mark.django_db
def test_reaper_resends_a_lost_validation_job_once_per_lease_period(
    settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """X1: a task stuck in validating with no snapshot for its attempt gets its
    validation job again; one that has its snapshot, or is fresh, does not."""
    from tests.factories import ValidationSnapshotFactory

    settings.ATTEMPT_LEASE_SECONDS = 300
    old = timezone.now() - timedelta(minutes=10)
    lost = TaskFactory(status=S.VALIDATING, attempt_count=1)
    done = TaskFactory(status=S.VALIDATING, attempt_count=1)
    ValidationSnapshotFactory(task=done, attempt_index=1)
    fresh = TaskFactory(status=S.VALIDATING, attempt_count=1)
    Task.objects.filter(pk__in=[lost.pk, done.pk]).update(updated_at=old)

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        report = attempt_reap()
    assert report.revalidated == [lost.pk]
    assert len(callbacks) == 1
    assert fresh.pk not in report.revalidated
    # Touched: the next sweep within the lease period sends nothing.
    assert attempt_reap().revalidated == []
