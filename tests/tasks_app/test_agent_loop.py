"""AgentLoop: tool budget, finalization, evidence as it happens, transcript, snapshots
(X2, X3, E1, E2, E3, X8)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo

from tasks_app.models import LLMRequestSnapshot, Run, RunMessage, ToolEvidence
from tasks_app.runtime.agents.loop import (
    FINISH_BUDGET,
    FINISH_FINALIZED,
    NO_USABLE_ANSWER,
    AgentLoop,
)
from tasks_app.runtime.agents.tools import DEFAULT_TOOLS
from tests.factories import KnowledgeDocumentFactory, TaskFactory

pytestmark = pytest.mark.django_db


def always_tools(final: Any = "final answer") -> tuple[Any, list[list[str]]]:
    """A model that asks for a search whenever tools are offered; ``final`` is the
    no-tools reply (a string, or an exception to raise)."""
    seen: list[list[str]] = []

    def fn(messages: list[Any], info: AgentInfo) -> ModelResponse:
        seen.append([t.name for t in info.function_tools])
        if info.function_tools:
            n = len(seen)
            return ModelResponse(
                parts=[
                    ToolCallPart("search_knowledge", {"query": f"budget {n}"}, tool_call_id=f"c{n}")
                ]
            )
        if isinstance(final, Exception):
            raise final
        return ModelResponse(parts=[TextPart(final)])

    return fn, seen


def make_loop(name: str, budget: int) -> AgentLoop:
    return AgentLoop(
        model_name=name,
        system_prompt="You research.",
        tools=DEFAULT_TOOLS,
        max_tool_iterations=budget,
    )


def test_tool_budget_then_one_no_tools_finalization(scripted_model: Any) -> None:
    """X3: exactly max_tool_iterations tool rounds, then one no-tools call whose text is
    the answer; finish_reason max_tool_iterations_finalized."""
    fn, seen = always_tools("final answer from evidence")
    task = TaskFactory()
    result = make_loop(scripted_model(fn), 3).run(task_id=task.pk, attempt_index=1, user_prompt="q")

    assert [bool(tools) for tools in seen] == [True, True, True, False]
    assert result.finish_reason == FINISH_FINALIZED
    assert result.output_text == "final answer from evidence"
    assert result.success and result.usable
    run = Run.objects.get(pk=result.run_id)
    assert run.finish_reason == FINISH_FINALIZED and run.tool_iterations == 3
    assert ToolEvidence.objects.filter(run=run).count() == 3
    snapshots = list(LLMRequestSnapshot.objects.filter(run=run).order_by("iteration"))
    assert [s.iteration for s in snapshots] == [0, 1, 2, 3]
    assert snapshots[0].tool_names == list(DEFAULT_TOOLS)
    assert snapshots[-1].tool_names == []


@pytest.mark.parametrize("final", [ModelHTTPError(400, "scripted"), ""])
def test_failed_or_empty_finalization_uses_the_fallback_message(
    scripted_model: Any, settings: Any, final: Any
) -> None:
    """X3: only when the finalization call fails or is empty, the clear fallback."""
    settings.MODEL_MAX_RETRIES = 0
    fn, seen = always_tools(final)
    task = TaskFactory()
    result = make_loop(scripted_model(fn), 2).run(task_id=task.pk, attempt_index=1, user_prompt="q")

    assert len(seen) == 3
    assert result.output_text == NO_USABLE_ANSWER
    assert result.finish_reason == FINISH_BUDGET
    assert not result.usable
    run = Run.objects.get(pk=result.run_id)
    assert run.status == "failed" and run.warnings
    # E3: the partial run keeps its evidence.
    assert ToolEvidence.objects.filter(run=run).count() == 2


def test_evidence_survives_a_run_that_raises_after_two_tool_calls(
    scripted_model: Any, settings: Any
) -> None:
    """E2: each tool result is stored when the tool returns; a later crash loses nothing."""
    settings.MODEL_MAX_RETRIES = 0
    KnowledgeDocumentFactory(title="Training Budget", body="The training budget is 1,750 EUR.")
    calls = {"n": 0}

    def fn(messages: list[Any], info: AgentInfo) -> ModelResponse:
        calls["n"] += 1
        if calls["n"] <= 2:
            return ModelResponse(
                parts=[
                    ToolCallPart(
                        "search_knowledge", {"query": "training"}, tool_call_id=f"t{calls['n']}"
                    )
                ]
            )
        raise ModelHTTPError(401, "scripted", body="invalid key")

    task = TaskFactory()
    result = make_loop(scripted_model(fn), 5).run(task_id=task.pk, attempt_index=1, user_prompt="q")

    assert not result.success and "401" in result.error
    rows = list(ToolEvidence.objects.filter(task=task).order_by("sequence"))
    assert [r.tool_call_id for r in rows] == ["t1", "t2"]
    assert all("Training Budget" in r.content for r in rows)
    run = Run.objects.get(pk=result.run_id)
    assert run.status == "failed" and "401" in run.error and run.finished_at is not None


def test_transcript_has_every_message_with_tool_call_ids(scripted_model: Any) -> None:
    """E1: system, user, assistant (tool call), tool (with tool_call_id), assistant."""
    doc = KnowledgeDocumentFactory(title="Leave", body="Employees get 28 days of leave.")

    def fn(messages: list[Any], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(
                parts=[ToolCallPart("read_document", {"document_id": doc.pk}, tool_call_id="r1")]
            )
        return ModelResponse(parts=[TextPart("28 days (source: Leave)")])

    task = TaskFactory()
    result = make_loop(scripted_model(fn), 4).run(
        task_id=task.pk, attempt_index=1, user_prompt="How much leave?"
    )

    assert result.finish_reason == "stop" and result.output_text == "28 days (source: Leave)"
    messages = list(RunMessage.objects.filter(run_id=result.run_id).order_by("index"))
    assert [m.role for m in messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert messages[3].payload["tool_call_id"] == "r1"
    assert "28 days of leave" in messages[3].content
    assert messages[2].payload["tool_calls"][0]["tool_name"] == "read_document"
    evidence = ToolEvidence.objects.get(run_id=result.run_id)
    assert evidence.title == "Leave" and evidence.arguments == {"document_id": doc.pk}


def test_tool_errors_become_tool_results(scripted_model: Any) -> None:
    """X8: an unknown document or an unknown tool is a result the model sees, not a crash."""
    seen_results: list[str] = []

    def fn(messages: list[Any], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(
                parts=[
                    ToolCallPart("read_document", {"document_id": 999999}, tool_call_id="a"),
                    ToolCallPart("no_such_tool", {}, tool_call_id="b"),
                ]
            )
        seen_results.extend(p.content for p in messages[-1].parts)
        return ModelResponse(parts=[TextPart("I could not read it.")])

    task = TaskFactory()
    result = make_loop(scripted_model(fn), 2).run(task_id=task.pk, attempt_index=1, user_prompt="q")

    assert result.success
    rows = list(ToolEvidence.objects.filter(run_id=result.run_id).order_by("sequence"))
    assert [r.is_error for r in rows] == [True, True]
    assert "no document with id 999999" in seen_results[0]
    assert "no tool named 'no_such_tool'" in seen_results[1]


def test_snapshots_are_compact_unless_full_snapshots_enabled(
    scripted_model: Any, settings: Any
) -> None:
    """X2: compact snapshot fields always; the full request only in debug mode."""
    fn, _ = always_tools("done")
    task = TaskFactory()
    name = scripted_model(fn)
    run_id = make_loop(name, 1).run(task_id=task.pk, attempt_index=1, user_prompt="q").run_id
    compact = LLMRequestSnapshot.objects.filter(run_id=run_id).first()
    assert compact is not None
    assert compact.full_request is None
    assert compact.message_count == 1 and compact.message_chars > 0
    assert compact.tool_schema_chars > 0 and compact.provider == "function"
    assert compact.model_name == name

    settings.LLM_FULL_REQUEST_SNAPSHOTS = True
    run_id = make_loop(name, 1).run(task_id=task.pk, attempt_index=1, user_prompt="q").run_id
    full = LLMRequestSnapshot.objects.filter(run_id=run_id).first()
    assert full is not None and full.full_request is not None
    assert full.full_request["tools"][0]["name"] == "search_knowledge"
    assert full.full_request["messages"][0]["parts"][1]["content"] == "q"


def test_zero_budget_offers_no_tools(scripted_model: Any) -> None:
    """X5: max_tool_iterations=0 means a single no-tools call."""
    fn, seen = always_tools("direct answer")
    task = TaskFactory()
    result = make_loop(scripted_model(fn), 0).run(task_id=task.pk, attempt_index=1, user_prompt="q")
    assert seen == [[]]
    assert result.finish_reason == "stop" and result.output_text == "direct answer"


def test_expected_run_failure_is_one_warning_line_without_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 11 (clean make run output): a model that cannot be configured (the demo's
    openai:gpt-4.1 without a key) fails the run with the reason stored and logs one
    WARNING naming the task, and no traceback."""
    task = TaskFactory()
    with caplog.at_level("WARNING", logger="tasks_app.runtime.agents.loop"):
        result = make_loop("nosuchprovider", 2).run(
            task_id=task.pk, attempt_index=1, user_prompt="q"
        )

    assert not result.success and "no provider prefix" in result.error
    assert "no provider prefix" in Run.objects.get(pk=result.run_id).error
    records = [r for r in caplog.records if r.name == "tasks_app.runtime.agents.loop"]
    assert len(records) == 1
    assert records[0].levelname == "WARNING" and records[0].exc_info is None
    assert f"task {task.pk} attempt 1" in records[0].getMessage()


def test_unexpected_run_failure_keeps_its_traceback(
    scripted_model: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 11: an exception that is not an expected provider or configuration failure
    is a bug, so it is logged at ERROR with its traceback (the run still fails cleanly)."""

    def fn(messages: list[Any], info: AgentInfo) -> ModelResponse:
        raise ZeroDivisionError("scripted bug")

    task = TaskFactory()
    with caplog.at_level("WARNING", logger="tasks_app.runtime.agents.loop"):
        result = make_loop(scripted_model(fn), 2).run(
            task_id=task.pk, attempt_index=1, user_prompt="q"
        )

    assert not result.success and "ZeroDivisionError" in result.error
    records = [r for r in caplog.records if r.name == "tasks_app.runtime.agents.loop"]
    assert len(records) == 1
    assert records[0].levelname == "ERROR" and records[0].exc_info is not None
    assert f"task {task.pk} attempt 1" in records[0].getMessage()
