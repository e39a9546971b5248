"""Issue 16, E2, X1: a fenced write is one statement that checks the lease, beats the
heartbeat and inserts, durable when it returns; after a takeover it writes nothing."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from pydantic_ai.messages import ModelRequest, SystemPromptPart, ToolCallPart, UserPromptPart

from tasks_app.models import Run, RunMessage, Task, ToolEvidence, content_digest
from tasks_app.runtime.agents.recorder import RunRecorder
from tasks_app.runtime.agents.tools import ToolOutput
from tasks_app.workflow.fence import Fence, LeaseLost
from tasks_app.workflow.states import TaskStatus as S
from tests.factories import TaskFactory


def _running_task() -> Any:
    return TaskFactory(status=S.RUNNING, lease_token="held", heartbeat_at=None, attempt_count=1)


def _recorder(task: Any) -> RunRecorder:
    return RunRecorder(
        task_id=task.pk,
        attempt_index=1,
        kind="main",
        model_name="test:model",
        fence=Fence(task_id=task.pk, lease_token="held"),
    )


@pytest.mark.django_db
def test_a_tool_result_writes_the_columns_save_would_fill() -> None:
    """Issue 16, E2: the evidence and its transcript row are written together, with the
    computed columns (characters, digest for de-duplication) ToolEvidence.save() sets,
    by PostgreSQL's one fenced statement or SQLite's fenced transaction."""
    task = _running_task()
    recorder = _recorder(task)
    call = ToolCallPart("search_knowledge", {"query": "budget"}, tool_call_id="c1")
    recorder.add_tool_result(call, ToolOutput(content="Result text ünïcode"))
    evidence = ToolEvidence.objects.get(task=task)
    assert evidence.content_chars == len("Result text ünïcode")
    assert evidence.content_sha256 == content_digest("search_knowledge", "Result text ünïcode")
    assert evidence.arguments == {"query": "budget"} and evidence.sequence == 0
    message = RunMessage.objects.get(run=recorder.run, role="tool")
    assert message.payload["tool_call_id"] == "c1" and message.index == 0


@pytest.mark.postgres(
    reason="one fenced statement (UPDATE ... RETURNING in a WITH); SQLite uses a transaction"
)
@pytest.mark.django_db
def test_a_tool_result_is_one_statement_that_beats_the_heartbeat() -> None:
    """Issue 16: on PostgreSQL the evidence, the transcript row and the heartbeat are
    one statement."""
    task = _running_task()
    recorder = _recorder(task)
    call = ToolCallPart("search_knowledge", {"query": "budget"}, tool_call_id="c1")
    with CaptureQueriesContext(connection) as captured:
        recorder.add_tool_result(call, ToolOutput(content="Result text ünïcode"))
    assert len(captured) == 1
    assert ToolEvidence.objects.filter(task=task).count() == 1
    assert RunMessage.objects.filter(run=recorder.run, role="tool").count() == 1
    task.refresh_from_db()
    assert task.heartbeat_at is not None


@pytest.mark.django_db
def test_a_fenced_write_after_a_takeover_writes_nothing() -> None:
    """X1: once the lease token changed, the statement inserts no row, refreshes no
    heartbeat, and the recorder raises LeaseLost; its counters stay where they were."""
    task = _running_task()
    recorder = _recorder(task)
    Task.objects.filter(pk=task.pk).update(lease_token="new-owner", heartbeat_at=None)
    with pytest.raises(LeaseLost):
        recorder.add_tool_result(ToolCallPart("search_knowledge", {}), ToolOutput(content="x"))
    with pytest.raises(LeaseLost):
        recorder.add_message("assistant", "late", {})
    assert ToolEvidence.objects.filter(task=task).count() == 0
    assert RunMessage.objects.filter(run__task=task).count() == 0
    assert recorder.message_index == 0
    task.refresh_from_db()
    assert task.heartbeat_at is None and task.lease_token == "new-owner"


def _first_request() -> ModelRequest:
    return ModelRequest(parts=[SystemPromptPart("Be brief."), UserPromptPart("What is 2+2?")])


@pytest.mark.django_db
def test_a_run_is_written_with_its_first_request_messages() -> None:
    """Issue 48: the run and its first request's system and user rows are written
    together (on PostgreSQL in one fenced statement that beats the heartbeat); the next
    message follows their indexes."""
    task = _running_task()
    with CaptureQueriesContext(connection) as captured:
        recorder = RunRecorder(
            task_id=task.pk,
            attempt_index=1,
            kind="main",
            model_name="test:model",
            fence=Fence(task_id=task.pk, lease_token="held"),
            first_request=_first_request(),
        )
    if connection.vendor == "postgresql":
        assert len(captured) == 1
        task.refresh_from_db()
        assert task.heartbeat_at is not None
    rows = list(
        RunMessage.objects.filter(run=recorder.run)
        .order_by("index")
        .values_list("index", "role", "content", "payload")
    )
    assert rows == [
        (0, "system", "Be brief.", {"part_kind": "system-prompt"}),
        (1, "user", "What is 2+2?", {"part_kind": "user-prompt"}),
    ]
    recorder.add_message("assistant", "4", {})
    assert RunMessage.objects.get(run=recorder.run, role="assistant").index == 2


@pytest.mark.django_db
def test_a_run_with_its_first_messages_after_a_takeover_writes_nothing() -> None:
    """Issue 48, X1: once the lease token changed, neither the run nor its first
    messages are written."""
    task = _running_task()
    Task.objects.filter(pk=task.pk).update(lease_token="new-owner", heartbeat_at=None)
    with pytest.raises(LeaseLost):
        RunRecorder(
            task_id=task.pk,
            attempt_index=1,
            kind="main",
            model_name="test:model",
            fence=Fence(task_id=task.pk, lease_token="held"),
            first_request=_first_request(),
        )
    assert not Run.objects.filter(task=task).exists()
    assert RunMessage.objects.filter(run__task=task).count() == 0
