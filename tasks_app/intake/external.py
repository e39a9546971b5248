"""Attempts produced by an agent outside Evidentia.

An external task (``Task.agent == "external"``) waits in ``open`` with no job queued.
Its agent submits each attempt through the API, as one body
(``external_attempt_submit``) or streamed (``external_attempt_submit`` with
``stream=True``, then ``external_attempt_append`` for each batch of messages and tool
results, then ``external_attempt_finish``). The rows are the same as an internal
attempt's (``Run``, ``RunMessage``, ``ToolEvidence``), so packets, rendering,
validation, review and replay work unchanged; the task moves ``open``/``needs_revision``
→ ``running`` → ``validating`` through ``task_transition`` and the validation job runs.

These functions take validated pydantic data, not HTTP requests, so other front doors
(an OTLP trace importer, a management command) can feed the same tables. Each is one
transaction: an error stores nothing.

Streamed attempts hold the same lease as internal ones: every append refreshes the
heartbeat; the reaper (``reaper.attempt_reap``) sends an attempt whose agent went
silent for ``ATTEMPT_LEASE_SECONDS`` back to ``open`` or to ``failed``
(``EXTERNAL_ATTEMPT_STALE_ACTION``), its runs kept and marked unfinished.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from project.errors import DomainError
from tasks_app.intake.external_input import (
    MAX_RUNS,
    AttemptIn,
    EventsIn,
    FinishIn,
    MessageEvent,
    MessageIn,
    RunEndIn,
    RunFields,
    RunFinishedEvent,
    RunIn,
    RunStartedEvent,
    ToolResultEvent,
    ToolResultIn,
)
from tasks_app.runtime import runs
from tasks_app.runtime.models import Run, RunKind, RunMessage, RunStatus, ToolEvidence
from tasks_app.workflow import services, transitions
from tasks_app.workflow.models import Feedback, FeedbackAction, Task, TaskAgent
from tasks_app.workflow.states import RUNNABLE_STATUSES, TaskStatus
from tasks_app.workflow.verdicts import validator


class NotTaskOwner(DomainError):
    """Someone other than the task's owner (a reviewer, an operator) sent its attempt."""

    code = "permission_denied"
    http_status = 403


class AttemptNotExpected(DomainError):
    """The task is not waiting for (this) external attempt."""

    code = "attempt_not_expected"
    http_status = 409


# --- Helpers ----------------------------------------------------------------------------


def _locked_external_task(task_id: int, actor: Any = None) -> Task:
    """The task, locked; refused unless it is external and (with an ``actor``, the person
    whose token sent the attempt) the actor owns it: only the owner answers a task, by
    any route (API or OTLP)."""
    task = Task.objects.select_for_update().filter(pk=task_id).first()
    if task is None:
        raise Task.DoesNotExist(f"Task {task_id} not found.")
    if actor is not None and task.owner_id != actor.pk:
        raise NotTaskOwner(f"Task {task_id} is not yours: only its owner submits its attempts.")
    if task.agent != TaskAgent.EXTERNAL:
        raise AttemptNotExpected(
            f"Task {task_id} is run by Evidentia's own agent; only tasks created with "
            '"agent": "external" accept attempts.'
        )
    return task


def _streamed_attempt(task_id: int, attempt_index: int, actor: Any = None) -> Task:
    task = _locked_external_task(task_id, actor)
    if task.status != TaskStatus.RUNNING or task.attempt_count != attempt_index:
        raise AttemptNotExpected(
            f"Task {task_id} has no running attempt {attempt_index} (it is '{task.status}', "
            f"attempt {task.attempt_count}); a stale attempt's lease may have expired."
        )
    return task


# The largest value of an integer column on every database we run on.
_MAX_DURATION_MS = 2**31 - 1


def _duration_ms(started: datetime, finished: datetime | None) -> int | None:
    """The run's duration as the agent's own times give it, within what the column holds
    (an agent may report a start centuries ago: stored as the largest duration)."""
    if finished is None:
        return None
    return min(max(int((finished - started).total_seconds() * 1000), 0), _MAX_DURATION_MS)


def _create_run(task: Task, attempt_index: int, key: str, fields: RunFields, index: int) -> Run:
    return Run.objects.create(
        task=task,
        attempt_index=attempt_index,
        kind=fields.kind,
        node_id=fields.node_id,
        node_role=fields.node_role,
        external_key=key,
        # Team nodes first in the order given, the answer-bearing run last (packets and
        # the UI order runs by graph_index).
        graph_index=index if fields.kind == RunKind.TEAM_NODE.value else MAX_RUNS + index,
        model_name=fields.model,
        status=RunStatus.RUNNING,
        started_at=fields.started_at or timezone.now(),
    )


def _end_run(run: Run, end: RunEndIn | RunIn, *, status: str, now: datetime) -> None:
    finished = end.finished_at or now
    counted: dict[str, Any] = (
        {} if end.tool_iterations is None else {"tool_iterations": end.tool_iterations}
    )
    runs.run_finish(
        run=run,
        status=status,
        **counted,
        finish_reason=end.finish_reason or ("stop" if status == RunStatus.COMPLETED else "error"),
        output_text=end.output_text,
        usage=end.usage.model_dump(),
        input_tokens=end.usage.input_tokens,
        output_tokens=end.usage.output_tokens,
        finished_at=finished,
        duration_ms=_duration_ms(run.started_at, finished),
        error=end.error,
    )


def _message_row(run: Run, index: int, message: MessageIn) -> RunMessage:
    return RunMessage(
        run=run,
        index=index,
        role=message.role,
        content=message.content,
        payload=message.payload,
        created_at=message.created_at or timezone.now(),
    )


def _add_message(run: Run, index: int, message: MessageIn) -> None:
    _message_row(run, index, message).save()


def _tool_result_row(run: Run, sequence: int, result: ToolResultIn) -> ToolEvidence:
    row = ToolEvidence(
        run=run,
        task_id=run.task_id,
        attempt_index=run.attempt_index,
        sequence=sequence,
        tool_name=result.tool_name,
        tool_call_id=result.tool_call_id,
        arguments=result.arguments,
        content=result.content,
        is_error=result.is_error,
        url=result.url,
        title=result.title,
        event_payload=result.payload,
        created_at=result.created_at or timezone.now(),
    )
    row.set_content_fields()
    return row


def _add_tool_result(run: Run, sequence: int, result: ToolResultIn) -> None:
    _tool_result_row(run, sequence, result).save()


def _claim(task: Task, *, stream: bool, actor: Any = None) -> Task:
    """open/needs_revision → running, with a new attempt index and lease."""
    if task.status not in RUNNABLE_STATUSES:
        raise AttemptNotExpected(
            f"Task {task.pk} is '{task.status}'; it takes an attempt only when 'open' or "
            "'needs_revision'."
        )
    return transitions.task_transition(
        transitions.Transition(
            task_id=task.pk,
            to_status=TaskStatus.RUNNING,
            expected_from=RUNNABLE_STATUSES,
            actor=actor,
            actor_kind="agent",
            reason=f"external attempt {task.attempt_count + 1} "
            + ("started (streaming)" if stream else "submitted"),
        )
    )


def _answer_run(task: Task, attempt_index: int) -> Run | None:
    """The run whose output is the attempt's answer: the last main/synthesis run."""
    return (
        Run.objects.filter(task=task, attempt_index=attempt_index)
        .exclude(kind=RunKind.TEAM_NODE)
        .order_by("-graph_index", "-id")
        .first()
    )


def _complete(task: Task, attempt_index: int, final_answer: str, actor: Any = None) -> Task:
    """running → validating (and the validation job after commit), or → failed for an
    empty answer."""
    answer_run = _answer_run(task, attempt_index)
    if answer_run is not None and final_answer.strip():
        if not answer_run.output_text:
            # The packet's final output is the answer-bearing run's output.
            answer_run.output_text = final_answer
            answer_run.save(update_fields=["output_text"])
        elif answer_run.output_text.strip() != final_answer.strip():
            raise _field_error(
                "final_answer",
                f"differs from the output_text of run '{answer_run.external_key}', the "
                "attempt's answer-bearing run; send the same text or leave one empty",
            )
    if not final_answer.strip():
        return transitions.task_transition(
            transitions.Transition(
                task_id=task.pk,
                to_status=TaskStatus.FAILED,
                expected_from=TaskStatus.RUNNING,
                actor=actor,
                actor_kind="agent",
                reason=f"external attempt {attempt_index} ended without an answer",
            )
        )
    updated = transitions.task_transition(
        transitions.Transition(
            task_id=task.pk,
            to_status=TaskStatus.VALIDATING,
            expected_from=TaskStatus.RUNNING,
            actor=actor,
            actor_kind="agent",
            reason=f"external attempt {attempt_index} produced an answer",
            updates={"final_answer": final_answer},
        )
    )
    services.validation_enqueue(task.pk, attempt_index)
    return updated


class FieldError(DomainError):
    """A value that passed the schema but not the attempt's rules (422 naming the field)."""

    code = "validation_error"
    http_status = 422

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.field_message = message


def _field_error(field: str, message: str) -> FieldError:
    return FieldError(field, message)


def attempt_result(task: Task, attempt_index: int) -> dict[str, Any]:
    """What the API answers about an external attempt."""
    runs = list(
        Run.objects.filter(task=task, attempt_index=attempt_index)
        .order_by("graph_index", "id")
        .values("id", "external_key", "kind", "node_id", "status")
    )
    run_ids = [r["id"] for r in runs]
    return {
        "task_id": task.pk,
        "attempt_index": attempt_index,
        "task_status": task.status,
        "runs": [
            {
                "id": r["id"],
                "key": r["external_key"],
                "kind": r["kind"],
                "node_id": r["node_id"],
                "status": r["status"],
            }
            for r in runs
        ],
        "message_count": RunMessage.objects.filter(run_id__in=run_ids).count(),
        "tool_result_count": ToolEvidence.objects.filter(run_id__in=run_ids).count(),
    }


# --- Services ---------------------------------------------------------------------------


@transaction.atomic
def external_attempt_submit(
    *, task_id: int, attempt: AttemptIn, actor: Any = None
) -> dict[str, Any]:
    """Store an external attempt: all of it (then validation runs), or the start of a
    streamed one. 409 (AttemptNotExpected) unless the task is external and waiting for
    an attempt, 403 (NotTaskOwner) unless ``actor`` owns it (``None``: a trusted caller);
    the events record ``actor``; nothing is stored on any error."""
    task = _locked_external_task(task_id, actor)
    task = _claim(task, stream=attempt.stream, actor=actor)
    attempt_index = task.attempt_count
    now = timezone.now()
    for position, run_in in enumerate(attempt.runs):
        run = _create_run(task, attempt_index, run_in.effective_key, run_in, position)
        # A whole run arrives at once: its messages and its tool results are one insert
        # each, not one round trip per row.
        RunMessage.objects.bulk_create(
            [_message_row(run, i, message) for i, message in enumerate(run_in.messages)]
        )
        ToolEvidence.objects.bulk_create(
            [_tool_result_row(run, i, result) for i, result in enumerate(run_in.tool_results)]
        )
        status = run_in.status or (RunStatus.RUNNING if attempt.stream else RunStatus.COMPLETED)
        if status != RunStatus.RUNNING:
            _end_run(run, run_in, status=status, now=now)
        elif run_in.output_text or run_in.error:
            raise _field_error(
                f"runs.{position}.status", "a running run has no output_text or error yet"
            )
    if not attempt.stream:
        still_running = list(
            Run.objects.filter(
                task=task, attempt_index=attempt_index, status=RunStatus.RUNNING
            ).values_list("external_key", flat=True)
        )
        if still_running:
            raise _field_error(
                "runs", f"a whole attempt cannot have running runs ({', '.join(still_running)})"
            )
        task = _complete(task, attempt_index, attempt.final_answer or "", actor)
    return attempt_result(task, attempt_index)


@transaction.atomic
def external_attempt_append(
    *, task_id: int, attempt_index: int, events: EventsIn, actor: Any = None
) -> dict[str, Any]:
    """Append a streamed attempt's events in order and refresh its lease heartbeat. Each
        batch is one transaction; what an earlier batch stored stays whatever happens next
    ."""
    task = _streamed_attempt(task_id, attempt_index, actor)
    runs = {
        run.external_key: run for run in Run.objects.filter(task=task, attempt_index=attempt_index)
    }
    next_message: dict[int, int] = {}
    next_sequence: dict[int, int] = {}

    def known(position: int, key: str) -> Run:
        run = runs.get(key)
        if run is None:
            raise _field_error(
                f"events.{position}.run",
                f"no run '{key}' in attempt {attempt_index}; start it with a run_started event",
            )
        if run.status != RunStatus.RUNNING:
            raise _field_error(f"events.{position}.run", f"run '{key}' has already finished")
        return run

    now = timezone.now()
    for position, event in enumerate(events.events):
        if isinstance(event, RunStartedEvent):
            if event.run in runs:
                raise _field_error(f"events.{position}.run", f"run '{event.run}' already exists")
            runs[event.run] = _create_run(task, attempt_index, event.run, event, len(runs))
        elif isinstance(event, MessageEvent):
            run = known(position, event.run)
            if run.pk not in next_message:
                top = run.messages.aggregate(top=Max("index"))["top"]
                next_message[run.pk] = 0 if top is None else top + 1
            _add_message(run, next_message[run.pk], event)
            next_message[run.pk] += 1
        elif isinstance(event, ToolResultEvent):
            run = known(position, event.run)
            if run.pk not in next_sequence:
                top = ToolEvidence.objects.filter(run=run).aggregate(top=Max("sequence"))["top"]
                next_sequence[run.pk] = 0 if top is None else top + 1
            _add_tool_result(run, next_sequence[run.pk], event)
            next_sequence[run.pk] += 1
        else:
            assert isinstance(event, RunFinishedEvent)
            run = known(position, event.run)
            _end_run(run, event, status=event.status, now=now)
    Task.objects.filter(pk=task.pk).update(heartbeat_at=now)
    return attempt_result(task, attempt_index)


@transaction.atomic
def external_attempt_finish(
    *, task_id: int, attempt_index: int, finish: FinishIn, actor: Any = None
) -> dict[str, Any]:
    """End a streamed attempt with its answer: runs still running are ended (as given in
    ``finish.runs``, else completed), then running → validating."""
    task = _streamed_attempt(task_id, attempt_index, actor)
    runs = {
        run.external_key: run for run in Run.objects.filter(task=task, attempt_index=attempt_index)
    }
    now = timezone.now()
    ends = {}
    for position, end in enumerate(finish.runs):
        if end.run not in runs:
            raise _field_error(f"runs.{position}.run", f"no run '{end.run}' in this attempt")
        ends[end.run] = end
    if not runs:
        raise _field_error("runs", "the attempt has no runs; start one with a run_started event")
    for key, run in runs.items():
        if run.status != RunStatus.RUNNING:
            continue
        run_end: RunEndIn = ends.get(key) or RunEndIn(finish_reason="stop", tool_iterations=None)
        _end_run(run, run_end, status=run_end.status, now=now)
    task = _complete(task, attempt_index, finish.final_answer, actor)
    return attempt_result(task, attempt_index)


# --- What the agent learns about a revision ---------------------------------------------


def validation_summary(task: Task, attempt_index: int) -> dict[str, Any] | None:
    """The latest original verdict on ``attempt_index``: the V1 fields, categorized."""
    verdict = validator().verdict(task.pk, attempt_index)
    if verdict is None:
        return None
    result = verdict.result
    return {
        "id": verdict.id,
        "attempt_index": verdict.attempt_index,
        "status": verdict.status,
        "passed": verdict.passed,
        "score": verdict.score,
        "failure_category": verdict.failure_category or None,
        "issues": result.get("issues") or [],
        "missing_requirements": result.get("missing_requirements") or [],
        "evidence_gaps": result.get("evidence_gaps") or [],
        "recommended_revision_prompt": result.get("recommended_revision_prompt") or None,
        "reasoning": result.get("reasoning") or "",
    }


def revision_feedback(task: Task, *, actor_kind: str | None = None) -> dict[str, Any] | None:
    """Why the task needs a revision: the validator's categorized feedback on the last
    attempt and the person's comment when a person asked for it. None unless the task is
    in needs_revision (or ``actor_kind`` is given: the transition is happening now)."""
    if actor_kind is None and task.status != TaskStatus.NEEDS_REVISION:
        return None
    if actor_kind is None:
        last = task.events.filter(to_status=TaskStatus.NEEDS_REVISION).order_by("-at", "-id")
        actor_kind = last.values_list("actor_kind", flat=True).first() or "system"
    comment = None
    requested_by = None
    if actor_kind == "user":
        feedback = (
            Feedback.objects.in_effect()
            .filter(task=task, action=FeedbackAction.REVISE, attempt_index=task.attempt_count)
            .select_related("author")
            .order_by("-created_at", "-id")
            .first()
        )
        if feedback is not None:
            comment = feedback.comment
            requested_by = feedback.author.get_username() if feedback.author else None
    return {
        "attempt_index": task.attempt_count,
        "next_attempt_index": task.attempt_count + 1,
        "requested_by": "person" if actor_kind == "user" else "validator",
        "person": requested_by,
        "comment": comment,
        "validator": validation_summary(task, task.attempt_count),
        "previous_answer": task.final_answer,
    }
