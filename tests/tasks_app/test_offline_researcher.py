"""The offline researcher really searches, reads and answers extractively (X7, X8)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from tasks_app.knowledge.importer import import_folder
from tasks_app.models import LLMRequestSnapshot, RunMessage, ToolEvidence
from tasks_app.runtime.agents import prompts
from tasks_app.runtime.agents.loop import AgentLoop
from tasks_app.runtime.agents.offline_researcher import NOTHING_FOUND
from tasks_app.runtime.agents.tools import DEFAULT_TOOLS
from tests.factories import KnowledgeDocumentFactory, TaskFactory

pytestmark = pytest.mark.django_db

DEMO = Path(settings.BASE_DIR) / "demo"
DEMO_TASKS = json.loads((DEMO / "tasks.json").read_text()) if (DEMO / "tasks.json").exists() else []


def research(request: str, budget: int = 6) -> Any:
    task = TaskFactory(request=request)
    loop = AgentLoop(
        model_name="offline:researcher",
        system_prompt=prompts.RESEARCHER_SYSTEM,
        tools=DEFAULT_TOOLS,
        max_tool_iterations=budget,
    )
    return loop.run(
        task_id=task.pk, attempt_index=1, user_prompt=prompts.request_block(request, "")
    )


def long_document_with_fact(fact: str, title: str) -> None:
    filler = " ".join(
        f"Paragraph {i} covers routine escalation steps, paging rotations and checklists."
        for i in range(800)
    )
    KnowledgeDocumentFactory(title=title, body=f"{filler}\n\n{fact}\n\nMore routine text follows.")


def test_searches_then_reads_then_quotes_with_titles() -> None:
    """X7: search with the request's key words, read the best hits, quote and cite."""
    KnowledgeDocumentFactory(
        title="Training Budget",
        body="We value learning. The annual training budget per employee is 1,750 EUR. "
        "Unused budget does not carry over.",
    )
    KnowledgeDocumentFactory(title="Canteen", body="The canteen opens at noon every weekday.")
    result = research("What is the annual training budget per employee?")

    assert result.success
    assert '"The annual training budget per employee is 1,750 EUR."' in result.output_text
    assert "Training Budget" in result.output_text
    calls = [
        (m.payload["tool_name"], m.index)
        for m in RunMessage.objects.filter(run_id=result.run_id, role="tool")
    ]
    assert [name for name, _ in calls][:2] == ["search_knowledge", "read_document"]
    read = ToolEvidence.objects.filter(run_id=result.run_id, tool_name="read_document").first()
    assert read is not None and read.title == "Training Budget"


def test_answers_a_fact_deep_in_a_long_document() -> None:
    """X7/E5: a fact at ~95 % of a 60,000-character document reaches the answer."""
    fact = (
        "The on-call engineer receives a standby allowance of 212 EUR "
        "for each full week of on-call duty."
    )
    long_document_with_fact(fact, "On-Call Runbook")
    KnowledgeDocumentFactory(
        title="Travel Policy", body="The maximum hotel rate is 150 EUR per night."
    )
    result = research(
        "What standby allowance does the on-call engineer receive "
        "for each full week of on-call duty?"
    )
    assert fact in result.output_text
    assert "On-Call Runbook" in result.output_text


def test_says_so_when_nothing_matches() -> None:
    """X7: no matching document gives an honest 'not found' answer, not an invention."""
    KnowledgeDocumentFactory(title="Canteen", body="The canteen opens at noon.")
    result = research("Which submarine cable lands in Reykjavik?")
    assert result.output_text == NOTHING_FOUND


def test_without_tools_answers_from_the_evidence_in_the_prompt() -> None:
    """X7: offered no tools (synthesis), it quotes the evidence given in its prompt."""
    task = TaskFactory()
    prompt = prompts.synthesis_prompt(
        base=prompts.request_block("How many days of annual leave do full-time employees get?", ""),
        rendered_team_evidence=(
            '[R1] read_document({"document_id": 3}) — title: Leave and Holidays; 90 chars\n'
            "Full-time employees are entitled to 28 days of paid annual leave per calendar year."
        ),
    )
    loop = AgentLoop(
        model_name="offline:researcher", system_prompt="s", tools=(), max_tool_iterations=0
    )
    result = loop.run(task_id=task.pk, attempt_index=1, user_prompt=prompt)
    assert "28 days of paid annual leave" in result.output_text
    assert "Leave and Holidays" in result.output_text
    assert LLMRequestSnapshot.objects.get(run_id=result.run_id).tool_names == []


@pytest.mark.skipif(not DEMO_TASKS, reason="demo/tasks.json is not present")
def test_answers_the_demo_deep_fact_questions_from_the_handbook() -> None:
    """X7 on the shipped demo: every deep-fact demo task is answered with its planted
    sentence and the document title."""
    import_folder(DEMO / "handbook")
    deep = [t for t in DEMO_TASKS if t.get("expect") == "deep_fact"]
    assert deep
    for spec in deep:
        result = research(spec["request"])
        assert spec["answer_fact"] in result.output_text, (spec["title"], result.output_text)
        for title in spec["source_titles"]:
            assert title in result.output_text


def test_flags_a_missing_figure_instead_of_passing_off_related_sentences() -> None:
    """X7: asked for a quantity the documents never state, the answer says so."""
    KnowledgeDocumentFactory(
        title="Pensions",
        body="The company pension scheme is offered to employees in Germany. "
        "The People team explains the pension scheme during onboarding.",
    )
    result = research("What percentage does the employer contribute to the company pension scheme?")
    assert "Pensions" in result.output_text
    assert "none of the passages I read states the figure" in result.output_text


# Team nodes run in threads with their own connections: they must see committed rows.
@pytest.mark.django_db(transaction=True)
def test_team_synthesis_quotes_node_evidence_not_packet_structure() -> None:
    """X5, X7: with no tools, the offline researcher answers from the evidence inside
    the rendered team packet (each node researching its own instructions), never from
    packet headers such as "[R1] search_knowledge(...) — 1526 chars"."""
    from tasks_app.runtime.attempts import attempt_run

    KnowledgeDocumentFactory(
        title="Password Policy",
        body="Accounts are personal.\n\n"
        "The minimum password length for company accounts is 14 characters.",
    )
    KnowledgeDocumentFactory(
        title="Training Budget",
        body="Learning matters.\n\nThe annual training budget per employee is 1,750 EUR.",
    )
    plan = {
        "kind": "team",
        "mode": "parallel",
        "nodes": [
            {
                "id": "security",
                "role": "Security reader",
                "instructions": "Find the minimum password length for company accounts.",
            },
            {
                "id": "training",
                "role": "HR reader",
                "instructions": "Find the annual training budget per employee.",
            },
        ],
    }
    task = TaskFactory(
        request="What is the minimum password length for company accounts, and what is the "
        "annual training budget per employee?",
        plan=plan,
    )
    attempt_run(task_id=task.pk)
    task.refresh_from_db()
    assert task.status == "validating"
    assert "14 characters" in task.final_answer
    assert "1,750 EUR" in task.final_answer
    assert "search_knowledge(" not in task.final_answer
    assert " chars" not in task.final_answer


def _step(prompt: str, offered: list[str], *rounds: tuple[list[Any], list[Any]]) -> Any:
    """``respond`` called directly: the prompt, then per round the model's tool calls and
    the tool results sent back."""
    from types import SimpleNamespace

    from pydantic_ai.messages import ModelRequest, ModelResponse, UserPromptPart

    from tasks_app.runtime.agents.offline_researcher import respond

    messages: list[Any] = [ModelRequest(parts=[UserPromptPart(prompt)])]
    for calls, returns in rounds:
        messages += [ModelResponse(parts=calls), ModelRequest(parts=returns)]
    info = SimpleNamespace(function_tools=[SimpleNamespace(name=n) for n in offered])
    return respond(messages, info)  # type: ignore[arg-type]


def test_respond_on_a_revision_searches_and_reads_for_the_comment_too() -> None:
    """A revise comment adds a search with its own terms and widens the reads; a tool
    set without read_document answers from the search results; without any read it
    says nothing was found; with no tools and no evidence blocks it answers from the
    prompt without the request."""
    from pydantic_ai.messages import ToolCallPart, ToolReturnPart

    from tasks_app.runtime.agents.offline_researcher import NOT_STATED

    request = "What is the annual training budget per employee?"
    prompt = prompts.request_block(request, "") + prompts.revision_block(
        previous_answer="",
        validator_result=None,
        revise_comments=["Also state the carry-over rule for unused budget."],
    )
    tools = ["search_knowledge", "read_document"]
    first = _step(prompt, tools)
    assert [(p.tool_name, p.args, p.tool_call_id) for p in first.parts] == [
        ("search_knowledge", {"query": "annual training budget employee"}, "call_search_1"),
        ("search_knowledge", {"query": "state carry-over rule unused budget"}, "call_search_2"),
    ]
    hits = ToolReturnPart(
        "search_knowledge", "1. [doc 4] Budget\n2. [doc 5] Leave\n3. [doc 4] again\n", "s1"
    )
    more = ToolReturnPart("search_knowledge", "- [doc 6] Carry-over\n- [doc 5] Leave\n", "s2")
    second = _step(prompt, tools, (first.parts, [hits, more]))
    assert [p.args for p in second.parts] == [
        {"document_id": 4},
        {"document_id": 5},
        {"document_id": 4},
        {"document_id": 6},
    ]
    assert [p.tool_call_id for p in second.parts][-1] == "call_read_6"
    read = ToolReturnPart(
        "read_document",
        "Title: Training Budget\nThe annual training budget per employee is 1,750 EUR. "
        "Unused training budget does not carry over to the next year.",
        "r1",
    )
    answer = _step(prompt, tools, (first.parts, [hits, more]), (second.parts, [read]))
    assert '"The annual training budget per employee is 1,750 EUR."' in answer.parts[0].content
    assert "Sources: Training Budget." in answer.parts[0].content

    # Only search offered: the answer quotes the search results themselves.
    snippet = ToolReturnPart(
        "search_knowledge", "1. [doc 4] The annual training budget per employee is 1,750 EUR.", "s"
    )
    search_call = [ToolCallPart("search_knowledge", {"query": "x"}, tool_call_id="c")]
    only_search = _step(
        prompts.request_block(request, ""), ["search_knowledge"], (search_call, [snippet])
    )
    assert "1,750 EUR" in only_search.parts[0].content
    # Searched, nothing to read: nothing found.
    empty = ToolReturnPart("search_knowledge", "No documents matched.", "s")
    nothing = _step(prompts.request_block(request, ""), tools, (search_call, [empty]))
    assert nothing.parts[0].content == NOTHING_FOUND
    # No tools, no evidence blocks: the prompt minus its request section is the evidence.
    bare = _step(prompts.request_block(request, "") + "\n## Notes\n\nNothing here.\n", [])
    assert bare.parts[0].content == NOT_STATED.format(what=f"the answer to: {request[:-1]}")
