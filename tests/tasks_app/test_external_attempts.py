"""External attempts through the ingestion service (issue 14): stored in the same tables
as internal attempts, moved through the transition service, atomic, never queued or
re-queued, and a stale streamed attempt handled by the reaper."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from evidence_app.models import ValidationSnapshot
from evidence_app.packets.packet_text import render_packet
from evidence_app.packets.task_packet import build_packet
from tasks_app.intake.external import (
    AttemptIn,
    AttemptNotExpected,
    EventsIn,
    FieldError,
    FinishIn,
    external_attempt_append,
    external_attempt_finish,
    external_attempt_submit,
    revision_feedback,
)
from tasks_app.models import Run, RunMessage, Task, TaskEvent, ToolEvidence
from tasks_app.runtime.attempts import attempt_run
from tasks_app.runtime.reaper import attempt_reap
from tasks_app.workflow import services, transitions
from tasks_app.workflow.states import TaskStatus as S

pytestmark = pytest.mark.django_db(transaction=False)

FACT = "The annual training budget per employee is 1,750 EUR."


def external_task(owner: Any, **kwargs: Any) -> Task:
    return services.task_create(
        owner=owner,
        request="What is the annual training budget per employee?",
        agent="external",
        **kwargs,
    )


def whole_attempt(answer: str = "The annual training budget is 1,750 EUR.") -> AttemptIn:
    return AttemptIn.model_validate(
        {
            "final_answer": answer,
            "runs": [
                {
                    "kind": "main",
                    "model": "acme:agent-1",
                    "finish_reason": "stop",
                    "usage": {"input_tokens": 120, "output_tokens": 30},
                    "messages": [
                        {"role": "user", "content": "What is the training budget?"},
                        {
                            "role": "assistant",
                            "content": "lookup(training budget)",
                            "payload": {"tool_calls": [{"tool_call_id": "c1"}]},
                        },
                        {"role": "tool", "content": FACT, "payload": {"tool_call_id": "c1"}},
                        {"role": "assistant", "content": answer},
                    ],
                    "tool_results": [
                        {
                            "tool_name": "lookup",
                            "tool_call_id": "c1",
                            "arguments": {"topic": "training budget"},
                            "content": FACT,
                            "title": "Handbook: Training",
                            "url": "https://intranet.example/handbook#training",
                        }
                    ],
                }
            ],
        }
    )


def test_external_task_gets_no_job_and_a_stray_job_does_nothing(requester: Any) -> None:
    """Issue 14: an external task waits in open; the runtime's job never claims it and
    the reaper never re-queues it."""
    task = external_task(requester)
    assert task.status == S.OPEN and task.agent == "external"
    assert attempt_run(task_id=task.pk).result == "duplicate"
    task.refresh_from_db()
    assert task.status == S.OPEN and task.attempt_count == 0
    Task.objects.filter(pk=task.pk).update(updated_at=timezone.now() - timedelta(hours=2))
    report = attempt_reap()
    assert task.pk not in report.reenqueued


def test_whole_attempt_is_stored_like_an_internal_one_and_goes_to_validating(
    requester: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """Issue 14 / E1 / E4: runs, messages and tool results land in Run, RunMessage and
    ToolEvidence; the packet and its rendering contain the full tool result; the task
    moves open → running → validating through the transition service."""
    task = external_task(requester)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        result = external_attempt_submit(task_id=task.pk, attempt=whole_attempt())
    assert result["attempt_index"] == 1 and result["task_status"] == S.VALIDATING
    assert result["tool_result_count"] == 1 and result["message_count"] == 4
    assert callbacks, "the validation job is sent after commit"
    task.refresh_from_db()
    assert task.final_answer == "The annual training budget is 1,750 EUR."
    assert list(task.events.values_list("from_status", "to_status")) == [
        (S.OPEN, S.RUNNING),
        (S.RUNNING, S.VALIDATING),
    ]
    run = Run.objects.get(task=task)
    assert (run.kind, run.model_name, run.status, run.input_tokens) == (
        "main",
        "acme:agent-1",
        "completed",
        120,
    )
    assert run.output_text == task.final_answer  # the packet's final output
    packet = build_packet(task, 1)
    assert packet.final_output == task.final_answer
    assert packet.main_run is not None and packet.main_run.tool_results[0].content == FACT
    assert FACT in render_packet(packet)


def test_a_whole_run_is_two_inserts_with_the_size_and_digest_of_each_result(
    requester: Any,
) -> None:
    """Issue 28 (fewer round trips) / E5: a whole attempt's messages and tool results are
    inserted one statement per table, however many rows, in order, and each tool result
    has the size and digest ``save`` would give it."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tasks_app.runtime.models import content_digest

    attempt = whole_attempt()
    run_in = attempt.runs[0]
    extra = [
        run_in.tool_results[0].model_copy(
            update={"content": f"{FACT} ({i})", "tool_call_id": f"c{i}"}
        )
        for i in range(2, 7)
    ]
    attempt.runs[0] = run_in.model_copy(update={"tool_results": [*run_in.tool_results, *extra]})
    task = external_task(requester)
    with CaptureQueriesContext(connection) as captured:
        external_attempt_submit(task_id=task.pk, attempt=attempt)
    inserts = [q["sql"] for q in captured.captured_queries if q["sql"].startswith("INSERT")]
    assert sum('"tasks_app_runmessage"' in sql for sql in inserts) == 1
    assert sum('"tasks_app_toolevidence"' in sql for sql in inserts) == 1
    stored = list(ToolEvidence.objects.filter(task=task).order_by("sequence"))
    assert [e.sequence for e in stored] == list(range(6))
    assert [e.content for e in stored] == [FACT] + [f"{FACT} ({i})" for i in range(2, 7)]
    assert all(e.content_chars == len(e.content) > 0 for e in stored)
    assert all(e.content_sha256 == content_digest(e.tool_name, e.content) for e in stored)
    assert list(RunMessage.objects.filter(run__task=task).values_list("index", flat=True)) == [
        0,
        1,
        2,
        3,
    ]


def test_attempt_for_a_task_not_waiting_gets_refused_and_changes_nothing(
    requester: Any,
) -> None:
    """Issue 14: a submission for a task in needs_review is refused (409), nothing stored."""
    task = external_task(requester)
    external_attempt_submit(task_id=task.pk, attempt=whole_attempt())
    transitions.task_transition(
        transitions.Transition(task_id=task.pk, to_status=S.NEEDS_REVIEW, actor_kind="validator")
    )
    before = (TaskEvent.objects.count(), Run.objects.count(), ToolEvidence.objects.count())
    with pytest.raises(AttemptNotExpected):
        external_attempt_submit(task_id=task.pk, attempt=whole_attempt())
    task.refresh_from_db()
    assert task.status == S.NEEDS_REVIEW and task.attempt_count == 1
    assert (TaskEvent.objects.count(), Run.objects.count(), ToolEvidence.objects.count()) == before


def test_internal_task_refuses_external_attempts(requester: Any) -> None:
    """Issue 14: only tasks created with agent external accept attempts."""
    task = services.task_create(owner=requester, request="Anything?", enqueue=False)
    with pytest.raises(AttemptNotExpected):
        external_attempt_submit(task_id=task.pk, attempt=whole_attempt())
    assert Run.objects.count() == 0


def test_an_error_late_in_the_submission_stores_nothing(requester: Any) -> None:
    """Issue 14: nothing half-stored: a final answer that contradicts the answer run's
    output is refused after the runs were written, and every row is rolled back."""
    task = external_task(requester)
    attempt = whole_attempt()
    attempt.runs[0].output_text = "Something else entirely."
    with pytest.raises(FieldError) as refused:
        external_attempt_submit(task_id=task.pk, attempt=attempt)
    assert refused.value.field == "final_answer"
    task.refresh_from_db()
    assert (task.status, task.attempt_count, task.version) == (S.OPEN, 0, 0)
    assert not Run.objects.exists() and not RunMessage.objects.exists()
    assert not ToolEvidence.objects.exists() and not TaskEvent.objects.exists()


def test_malformed_runs_name_the_field() -> None:
    """Issue 14: every field is validated with errors naming it."""
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as bad:
        AttemptIn.model_validate(
            {"final_answer": "x", "runs": [{"model": "m"}, {"kind": "boss", "model": "m"}]}
        )
    locs = [tuple(e["loc"]) for e in bad.value.errors()]
    assert ("runs", 1, "kind") in locs


def streamed(task: Task) -> int:
    started = external_attempt_submit(
        task_id=task.pk,
        attempt=AttemptIn.model_validate(
            {"stream": True, "runs": [{"key": "main", "model": "acme:agent-1"}]}
        ),
    )
    return started["attempt_index"]


def test_streamed_attempt_stores_each_event_and_finishes_to_validating(
    requester: Any,
) -> None:
    """Issue 14 / E2: events are stored as they arrive; finish hands the answer over."""
    task = external_task(requester)
    n = streamed(task)
    task.refresh_from_db()
    assert task.status == S.RUNNING and task.heartbeat_at is not None
    external_attempt_append(
        task_id=task.pk,
        attempt_index=n,
        events=EventsIn.model_validate(
            {
                "events": [
                    {"type": "message", "run": "main", "role": "user", "content": "Budget?"},
                    {
                        "type": "tool_result",
                        "run": "main",
                        "tool_name": "lookup",
                        "tool_call_id": "c1",
                        "content": FACT,
                    },
                ]
            }
        ),
    )
    assert ToolEvidence.objects.filter(task=task).count() == 1  # stored before finish
    external_attempt_append(
        task_id=task.pk,
        attempt_index=n,
        events=EventsIn.model_validate(
            {
                "events": [
                    {"type": "tool_result", "run": "main", "tool_name": "lookup", "content": "2"}
                ]
            }
        ),
    )
    assert list(
        ToolEvidence.objects.filter(task=task).order_by("sequence").values_list("sequence")
    ) == [(0,), (1,)]
    result = external_attempt_finish(
        task_id=task.pk,
        attempt_index=n,
        finish=FinishIn(final_answer="The annual training budget is 1,750 EUR."),
    )
    assert result["task_status"] == S.VALIDATING
    run = Run.objects.get(task=task)
    assert run.status == "completed" and run.output_text.endswith("1,750 EUR.")
    with pytest.raises(AttemptNotExpected):
        external_attempt_append(task_id=task.pk, attempt_index=n, events=EventsIn())


@pytest.mark.parametrize("action", ["open", "failed"])
def test_stale_streamed_attempt_keeps_its_evidence_and_goes_where_configured(
    requester: Any, settings: Any, action: str
) -> None:
    """Issue 14 / E2 / E3: an external agent that stops heartbeating leaves its evidence
    stored and the run visibly unfinished; the reaper sends the task back to open (no
    job queued) or to failed, per EXTERNAL_ATTEMPT_STALE_ACTION."""
    settings.EXTERNAL_ATTEMPT_STALE_ACTION = action
    task = external_task(requester)
    n = streamed(task)
    external_attempt_append(
        task_id=task.pk,
        attempt_index=n,
        events=EventsIn.model_validate(
            {"events": [{"type": "tool_result", "run": "main", "tool_name": "t", "content": FACT}]}
        ),
    )
    later = timezone.now() + timedelta(seconds=settings.ATTEMPT_LEASE_SECONDS + 5)
    report = attempt_reap(now=later)
    task.refresh_from_db()
    assert task.status == (S.OPEN if action == "open" else S.FAILED)
    assert task.pk in (report.requeued if action == "open" else report.failed)
    run = Run.objects.get(task=task)
    assert run.status == "failed" and run.finish_reason == "lease_expired"
    assert "external agent stopped" in run.error
    assert ToolEvidence.objects.get(run=run).content == FACT
    with pytest.raises(AttemptNotExpected):
        external_attempt_finish(task_id=task.pk, attempt_index=n, finish=FinishIn(final_answer="x"))
    if action == "open":
        # The agent submits again: a new attempt index.
        assert external_attempt_submit(task_id=task.pk, attempt=whole_attempt())[
            "attempt_index"
        ] == (n + 1)


def test_revision_feedback_carries_the_validator_feedback_and_the_persons_comment(
    requester: Any,
) -> None:
    """Issue 14: what the agent learns when asked for a revision."""
    task = external_task(requester)
    external_attempt_submit(task_id=task.pk, attempt=whole_attempt())
    ValidationSnapshot.objects.create(
        task=task,
        attempt_index=1,
        status="accepted",
        result={"issues": [], "reasoning": "supported"},
    )
    transitions.task_transition(
        transitions.Transition(
            task_id=task.pk, to_status=S.AWAITING_FEEDBACK, actor_kind="validator"
        )
    )
    services.task_apply_feedback(
        task_id=task.pk, actor=requester, action="revise", comment="Also give it per month."
    )
    task.refresh_from_db()
    feedback = revision_feedback(task)
    assert feedback is not None
    assert feedback["requested_by"] == "person" and feedback["person"] == "alice"
    assert feedback["comment"] == "Also give it per month."
    assert feedback["validator"]["status"] == "accepted"
    assert feedback["next_attempt_index"] == 2
