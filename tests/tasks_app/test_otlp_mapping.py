"""The span-to-attempt mapping (issue 15, docs/otlp.md) on forms the pydantic-ai client
of test_otlp.py does not emit: the older event-based messages, nested agents, spans that
map to nothing, a trace without an agent span."""

from __future__ import annotations

import json

import pytest

from tasks_app.intake.otlp.mapping import (
    StoredSpan,
    UnusableTrace,
    find_root,
    map_trace,
    other_spans,
)


def span(span_id: str, parent: str, name: str, start: int, **attributes: object) -> StoredSpan:
    return StoredSpan(
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        start_ns=start,
        end_ns=start + 10,
        attributes=dict(attributes),
    )


def test_older_event_based_messages_and_a_root_without_agent_span() -> None:
    """OpenLLMetry-style: an application span at the top, a chat span carrying
    gen_ai.*.message events and a gen_ai.choice event, a tool span."""
    app = span("a" * 16, "", "POST /ask", 0)
    chat = span(
        "b" * 16,
        "a" * 16,
        "chat gpt-4o",
        1,
        **{
            "gen_ai.operation.name": "chat",
            "gen_ai.system": "openai",
            "gen_ai.request.model": "gpt-4o",
        },
    )
    chat.events = [
        {"name": "gen_ai.system.message", "attributes": {"content": "Be brief."}},
        {"name": "gen_ai.user.message", "attributes": {"content": "How many vacation days?"}},
        {
            "name": "gen_ai.choice",
            "attributes": {
                "message": json.dumps(
                    {"role": "assistant", "content": "Employees get 28 vacation days."}
                )
            },
        },
    ]
    tool = span(
        "c" * 16,
        "a" * 16,
        "execute_tool lookup",
        2,
        **{
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "lookup",
            "gen_ai.tool.call.id": "t1",
            "gen_ai.tool.call.arguments": '{"q": "vacation"}',
            "gen_ai.tool.call.result": {"days": 28},
        },
    )
    mapped = map_trace([tool, chat, app])
    assert find_root([tool, chat, app]) is app
    assert mapped.request == "How many vacation days?"
    assert mapped.final_answer == "Employees get 28 vacation days."
    (run,) = mapped.attempt.runs
    assert run.model == "openai:gpt-4o"
    assert [m.role for m in run.messages] == ["system", "user", "assistant"]
    (result,) = run.tool_results
    assert result.arguments == {"q": "vacation"}
    assert json.loads(result.content) == {"days": 28}


def test_nested_agents_become_team_node_runs_and_other_spans_are_kept() -> None:
    root = span(
        "1" * 16,
        "",
        "invoke_agent planner",
        0,
        **{
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "planner",
            "gen_ai.input.messages": json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": "Plan the trip"}]}]
            ),
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": "Fly on Monday."}]}]
            ),
        },
    )
    child = span(
        "2" * 16,
        "1" * 16,
        "invoke_agent flights",
        1,
        **{
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "flights",
            "final_result": "Monday is cheapest.",
        },
    )
    child_tool = span(
        "3" * 16,
        "2" * 16,
        "execute_tool fares",
        2,
        **{
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "fares",
            "gen_ai.tool.call.result": "Monday 120 EUR, Tuesday 180 EUR",
        },
    )
    db = span("4" * 16, "2" * 16, "SELECT fares", 3, **{"db.system": "postgresql"})
    mapped = map_trace([db, child_tool, child, root])
    main, node = mapped.attempt.runs
    assert (main.kind, node.kind, node.node_id) == ("main", "team_node", "flights")
    assert mapped.final_answer == "Fly on Monday."
    assert node.output_text == "Monday is cheapest."
    assert node.tool_results[0].content == "Monday 120 EUR, Tuesday 180 EUR"
    assert main.tool_results == []
    assert [s["name"] for s in other_spans([db, child_tool, child, root])] == ["SELECT fares"]


def test_a_trace_without_genai_spans_or_answer_is_unusable() -> None:
    with pytest.raises(UnusableTrace, match="no GenAI span"):
        map_trace([span("5" * 16, "", "GET /health", 0)])
    with pytest.raises(UnusableTrace, match="no final answer"):
        map_trace(
            [span("6" * 16, "", "invoke_agent x", 0, **{"gen_ai.operation.name": "invoke_agent"})]
        )


def test_a_failed_agent_with_usage_on_its_own_span_and_the_task_fields() -> None:
    """An agent span that failed, with usage only in its aggregated counters, the task
    fields on the resource, a chat span that repeats the conversation so far, and a span
    that maps to nothing."""
    root = span(
        "7" * 16,
        "",
        "invoke_agent helper",
        0,
        **{
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.aggregated_usage.input_tokens": "12",
            "gen_ai.aggregated_usage.output_tokens": 3,
        },
    )
    root.status_code = 2
    root.status_message = "quota exceeded"
    root.resource = {
        "evidentia.task_id": "42",
        "evidentia.task.rules": {"cite": True},
        "evidentia.validation_policy": "always",
        "evidentia.final": "yes",
    }
    question = {"role": "user", "content": "Is it open?"}
    answer = {"role": "assistant", "content": "Yes, until 6."}
    first = span(
        "8" * 16,
        "7" * 16,
        "chat m",
        1,
        **{
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps([question]),
            "gen_ai.output.messages": json.dumps([answer]),
        },
    )
    again = span(
        "9" * 16,
        "7" * 16,
        "chat m",
        2,
        **{
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps([question, answer, question]),
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "content": "Yes."}]),
        },
    )
    other = span("a" * 16, "7" * 16, "GET /hours", 3)
    mapped = map_trace([other, again, first, root])
    (run,) = mapped.attempt.runs
    assert [m.content for m in run.messages] == [
        "Is it open?",
        "Yes, until 6.",
        "Is it open?",
        "Yes.",
    ]
    assert (run.status, run.finish_reason, run.error) == ("failed", "error", "quota exceeded")
    assert (run.usage.input_tokens, run.usage.output_tokens) == (12, 3)
    assert run.usage.details == {"otlp_other_spans": 1}
    assert run.model == "otlp:unknown" and run.output_text == "Yes."
    assert (mapped.request, mapped.final_answer) == ("Is it open?", "Yes.")
    assert (mapped.task_id, mapped.rules, mapped.validation_policy, mapped.final) == (
        42,
        '{"cite": true}',
        "always",
        True,
    )
    with pytest.raises(UnusableTrace, match="no spans"):
        map_trace([])
