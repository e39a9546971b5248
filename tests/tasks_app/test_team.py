"""Team plans: validation, parallel batches under a bound, graph order, synthesis with no
tools from every node's evidence (X4, X5, E3)."""

from __future__ import annotations

import re
import threading
import time
from typing import Any

import pytest
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo

from evidence_app.packets.task_packet import build_packet
from project.errors import InvalidInput
from tasks_app.models import Run, ToolEvidence
from tasks_app.runtime.agents.plans import TeamPlan, parse_plan
from tasks_app.runtime.agents.team import run_team
from tests.factories import KnowledgeDocumentFactory, TaskFactory


def prompt_of(messages: list[Any]) -> str:
    first = messages[0]
    assert isinstance(first, ModelRequest)
    return next(p.content for p in first.parts if isinstance(p, UserPromptPart))


def role_of(messages: list[Any]) -> str | None:
    match = re.search(r"^Role: (.+)$", prompt_of(messages), re.MULTILINE)
    return match.group(1) if match else None


class SleepyTeamModel:
    """Nodes sleep ``delays[role]`` then answer; the synthesis call is recorded."""

    def __init__(self, delays: dict[str, float]) -> None:
        self.delays = delays
        self.lock = threading.Lock()
        self.active = 0
        self.peak = 0
        self.synthesis_calls: list[tuple[list[str], str]] = []

    def __call__(self, messages: list[Any], info: AgentInfo) -> ModelResponse:
        role = role_of(messages)
        if role is None:
            self.synthesis_calls.append(
                ([t.name for t in info.function_tools], prompt_of(messages))
            )
            return ModelResponse(parts=[TextPart("synthesised answer")])
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
        try:
            time.sleep(self.delays.get(role, 0))
        finally:
            with self.lock:
                self.active -= 1
        return ModelResponse(parts=[TextPart(f"output of {role}")])


def team(mode: str, *nodes: dict[str, Any], **extra: Any) -> TeamPlan:
    plan = parse_plan({"kind": "team", "mode": mode, "nodes": list(nodes), **extra})
    assert isinstance(plan, TeamPlan)
    return plan


def run(task: Any, plan: TeamPlan, model_name: str) -> Any:
    return run_team(
        task=task,
        attempt_index=1,
        plan=plan,
        base_prompt="## Request\n\nWhat do we know?\n",
        fence=None,
        default_model=model_name,
    )


def test_plan_validation_refuses_bad_graphs() -> None:
    """X4: plans are validated by pydantic; bad graphs give a clear 422 domain error."""
    assert parse_plan({}).kind == "single"
    with pytest.raises(InvalidInput, match="cycle"):
        team(
            "dag",
            {"id": "a", "role": "A", "depends_on": ["b"]},
            {"id": "b", "role": "B", "depends_on": ["a"]},
        )
    with pytest.raises(InvalidInput, match="unknown node"):
        team("dag", {"id": "a", "role": "A", "depends_on": ["zzz"]})
    with pytest.raises(InvalidInput, match="duplicate"):
        team("parallel", {"id": "a", "role": "A"}, {"id": "a", "role": "B"})
    with pytest.raises(InvalidInput):
        parse_plan(
            {
                "kind": "team",
                "nodes": [{"id": "a", "role": "A"}],
                "synthesis_max_tool_iterations": 9,
            }
        )
    with pytest.raises(InvalidInput):
        parse_plan({"kind": "team", "mode": "circle", "nodes": [{"id": "a", "role": "A"}]})


def test_dag_batches_follow_dependencies_in_declared_order() -> None:
    """X4: a DAG runs in topological layers, declared order inside a layer."""
    plan = team(
        "dag",
        {"id": "a", "role": "A"},
        {"id": "b", "role": "B", "depends_on": ["a"]},
        {"id": "c", "role": "C"},
        {"id": "d", "role": "D", "depends_on": ["b", "c"]},
    )
    assert [[n.id for n in batch] for batch in plan.batches()] == [["a", "c"], ["b"], ["d"]]


PARALLEL_NODES = (
    {"id": "n1", "role": "first"},
    {"id": "n2", "role": "second"},
    {"id": "n3", "role": "third"},
)


@pytest.mark.django_db(transaction=True)
def test_parallel_nodes_overlap(scripted_model: Any) -> None:
    """X4: three nodes on a model that sleeps 0.5 s run concurrently: their recorded
    intervals overlap and the team takes well under 1.5 s."""
    model = SleepyTeamModel({"first": 0.5, "second": 0.5, "third": 0.5})
    task = TaskFactory()
    started = time.monotonic()
    outcome = run(task, team("parallel", *PARALLEL_NODES), scripted_model(model))
    elapsed = time.monotonic() - started

    runs = list(Run.objects.filter(task=task, kind="team_node").order_by("graph_index"))
    assert len(runs) == 3
    latest_start = max(r.started_at for r in runs)
    earliest_end = min(r.finished_at for r in runs)
    assert latest_start < earliest_end, "all three node runs were running at the same moment"
    overlap = (earliest_end - latest_start).total_seconds()
    print(f"\nparallel team: 3 x 0.5 s nodes in {elapsed:.2f} s, all 3 overlapping {overlap:.2f} s")
    assert model.peak == 3
    assert elapsed < 1.4, f"team took {elapsed:.2f}s"
    assert outcome.synthesis.output_text == "synthesised answer"


@pytest.mark.django_db(transaction=True)
def test_parallel_limit_bounds_concurrency(scripted_model: Any, settings: Any) -> None:
    """X4: with MAX_PARALLEL_TEAM_NODES=2, never more than two nodes run at once."""
    settings.MAX_PARALLEL_TEAM_NODES = 2
    model = SleepyTeamModel({"first": 0.4, "second": 0.4, "third": 0.4})
    task = TaskFactory()
    run(task, team("parallel", *PARALLEL_NODES), scripted_model(model))

    assert model.peak == 2
    runs = list(Run.objects.filter(task=task, kind="team_node"))
    for r in runs:
        at_once = sum(1 for o in runs if o.started_at <= r.started_at < o.finished_at)
        assert at_once <= 2


@pytest.mark.django_db(transaction=True)
def test_results_come_back_in_graph_order_not_completion_order(scripted_model: Any) -> None:
    """X4: the slowest node is first in the graph and first in the results."""
    model = SleepyTeamModel({"first": 0.6, "second": 0.0, "third": 0.3})
    task = TaskFactory()
    outcome = run(task, team("parallel", *PARALLEL_NODES), scripted_model(model))

    finished = sorted(Run.objects.filter(task=task, kind="team_node"), key=lambda r: r.finished_at)
    assert [r.node_id for r in finished] == ["n2", "n3", "n1"]
    assert [o.node.id for o in outcome.nodes] == ["n1", "n2", "n3"]
    assert [r.node_id for r in build_packet(task, 1).team_runs] == ["n1", "n2", "n3"]
    synthesis_prompt = model.synthesis_calls[0][1]
    positions = [
        synthesis_prompt.index(f"output of {role}") for role in ("first", "second", "third")
    ]
    assert positions == sorted(positions)


@pytest.mark.django_db(transaction=True)
def test_synthesis_gets_no_tools_and_sees_every_nodes_evidence(scripted_model: Any) -> None:
    """X5: synthesis is a no-tools request whose prompt holds every node's tool results,
    including a failed node's (E3); the team goes on after a node fails."""
    docs = {
        "alpha": KnowledgeDocumentFactory(
            title="Alpha", body="Alpha fact: the ferry leaves at 09:15."
        ),
        "beta": KnowledgeDocumentFactory(
            title="Beta", body="Beta fact: the crane lifts 40 tonnes."
        ),
        "gamma": KnowledgeDocumentFactory(title="Gamma", body="Gamma fact: the dock has 7 berths."),
    }
    synthesis_calls: list[tuple[list[str], str]] = []

    def fn(messages: list[Any], info: AgentInfo) -> ModelResponse:
        role = role_of(messages)
        if role is None:
            synthesis_calls.append(([t.name for t in info.function_tools], prompt_of(messages)))
            return ModelResponse(parts=[TextPart("all three facts")])
        if len(messages) == 1:
            return ModelResponse(
                parts=[
                    ToolCallPart(
                        "read_document", {"document_id": docs[role].pk}, tool_call_id=f"r-{role}"
                    )
                ]
            )
        if role == "beta":
            raise ModelHTTPError(400, "scripted", body="node broke after its tool call")
        return ModelResponse(parts=[TextPart(f"{role} done")])

    task = TaskFactory()
    plan = team("parallel", *({"id": r, "role": r} for r in ("alpha", "beta", "gamma")))
    outcome = run(task, plan, scripted_model(fn))

    assert [o.result.success for o in outcome.nodes] == [True, False, True]
    assert ToolEvidence.objects.filter(task=task).count() == 3
    assert len(synthesis_calls) == 1
    tools_offered, prompt = synthesis_calls[0]
    assert tools_offered == []
    for fact in ("ferry leaves at 09:15", "crane lifts 40 tonnes", "dock has 7 berths"):
        assert fact in prompt
    assert "do not repeat" in prompt.lower()
    synthesis = Run.objects.get(task=task, kind="synthesis")
    assert synthesis.output_text == "all three facts" and synthesis.tool_iterations == 0


@pytest.mark.django_db
def test_sequence_passes_earlier_outputs_and_synthesis_budget_can_be_granted(
    scripted_model: Any,
) -> None:
    """X4/X5: in a sequence each node sees earlier outputs; a plan may grant synthesis a
    small tool budget."""
    seen: dict[str, str] = {}
    synthesis_tools: list[list[str]] = []

    def fn(messages: list[Any], info: AgentInfo) -> ModelResponse:
        role = role_of(messages)
        if role is None:
            synthesis_tools.append([t.name for t in info.function_tools])
            return ModelResponse(parts=[TextPart("final")])
        seen[role] = prompt_of(messages)
        return ModelResponse(parts=[TextPart(f"notes from {role}")])

    task = TaskFactory()
    plan = team(
        "sequence",
        {"id": "one", "role": "reader"},
        {"id": "two", "role": "checker"},
        synthesis_max_tool_iterations=1,
    )
    run(task, plan, scripted_model(fn))
    assert "notes from reader" in seen["checker"]
    assert "notes from" not in seen["reader"]
    assert synthesis_tools[0] == ["search_knowledge", "read_document", "fetch_url"]
