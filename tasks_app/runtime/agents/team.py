"""Team execution: nodes in graph batches, parallel batches on threads
bounded by ``MAX_PARALLEL_TEAM_NODES``, results in graph order, then a synthesis run
with no tools (unless the plan grants a small budget) from the rendered team evidence.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from django.conf import settings
from django.db import connection

from tasks_app.runtime.agents import prompts
from tasks_app.runtime.agents.loop import AgentLoop, AgentResult
from tasks_app.runtime.agents.plans import PlanNode, TeamPlan
from tasks_app.runtime.agents.tools import DEFAULT_TOOLS
from tasks_app.runtime.models import RunKind
from tasks_app.workflow.fence import Fence, LeaseLost
from tasks_app.workflow.models import Task
from tasks_app.workflow.verdicts import validator

log = logging.getLogger(__name__)


@dataclass
class NodeOutcome:
    node: PlanNode
    graph_index: int
    result: AgentResult


@dataclass
class TeamOutcome:
    nodes: list[NodeOutcome]
    synthesis: AgentResult


@dataclass(frozen=True)
class _Team:
    """One attempt's team run: what every node and the synthesis share."""

    task: Task
    attempt_index: int
    plan: TeamPlan
    base_prompt: str
    fence: Fence | None
    default_model: str


def _run_node(
    team: _Team, node: PlanNode, graph_index: int, done: dict[str, NodeOutcome]
) -> NodeOutcome:
    plan = team.plan
    upstream = [
        (dep, done[dep].node.role, done[dep].result.output_text) for dep in plan.dependencies(node)
    ]
    loop = AgentLoop(
        model_name=node.model or plan.model or team.default_model,
        system_prompt=prompts.TEAM_NODE_SYSTEM,
        tools=DEFAULT_TOOLS,
        max_tool_iterations=(
            node.max_tool_iterations
            if node.max_tool_iterations is not None
            else plan.max_tool_iterations
            if plan.max_tool_iterations is not None
            else settings.MAX_TOOL_ITERATIONS
        ),
        fence=team.fence,
    )
    result = loop.run(
        task_id=team.task.pk,
        attempt_index=team.attempt_index,
        user_prompt=prompts.node_prompt(
            base=team.base_prompt,
            role=node.role,
            instructions=node.instructions,
            upstream=upstream,
        ),
        kind=RunKind.TEAM_NODE,
        node_id=node.id,
        node_role=node.role,
        graph_index=graph_index,
    )
    return NodeOutcome(node=node, graph_index=graph_index, result=result)


def _in_thread(
    team: _Team, node: PlanNode, graph_index: int, done: dict[str, NodeOutcome]
) -> NodeOutcome:
    try:
        return _run_node(team, node, graph_index, done)
    finally:
        # Each worker thread has its own DB connection: close it.
        connection.close()


def run_team(
    *,
    task: Task,
    attempt_index: int,
    plan: TeamPlan,
    base_prompt: str,
    fence: Fence | None,
    default_model: str,
) -> TeamOutcome:
    """Run every node (failed nodes keep their evidence; the team goes on), then the
    synthesis. ``LeaseLost`` from any node stops the team."""
    team = _Team(task, attempt_index, plan, base_prompt, fence, default_model)
    graph_index = {node.id: i for i, node in enumerate(plan.nodes)}
    done: dict[str, NodeOutcome] = {}
    limit = max(1, int(settings.MAX_PARALLEL_TEAM_NODES))
    for batch in plan.batches():
        upstream = dict(done)
        if len(batch) == 1:
            node = batch[0]
            done[node.id] = _run_node(team, node, graph_index[node.id], upstream)
            continue
        with ThreadPoolExecutor(
            max_workers=min(limit, len(batch)), thread_name_prefix="team"
        ) as pool:
            futures = [
                pool.submit(_in_thread, team, node, graph_index[node.id], upstream)
                for node in batch
            ]
            lease_lost: LeaseLost | None = None
            for node, future in zip(batch, futures, strict=True):
                try:
                    done[node.id] = future.result()
                except LeaseLost as exc:
                    lease_lost = exc
        if lease_lost is not None:
            raise lease_lost
    ordered = sorted(done.values(), key=lambda o: o.graph_index)
    return TeamOutcome(nodes=ordered, synthesis=_run_synthesis(team))


def _run_synthesis(team: _Team) -> AgentResult:
    plan = team.plan
    # The packet so far holds only the team runs (graph order), every tool result in full.
    rendered = validator().rendered_evidence(team.task, team.attempt_index)
    budget = plan.synthesis_max_tool_iterations
    loop = AgentLoop(
        model_name=plan.model or team.default_model,
        system_prompt=prompts.SYNTHESIS_SYSTEM,
        tools=DEFAULT_TOOLS if budget > 0 else (),
        max_tool_iterations=budget,
        fence=team.fence,
    )
    return loop.run(
        task_id=team.task.pk,
        attempt_index=team.attempt_index,
        user_prompt=prompts.synthesis_prompt(
            base=team.base_prompt, rendered_team_evidence=rendered
        ),
        kind=RunKind.SYNTHESIS,
        node_id="synthesis",
        graph_index=len(plan.nodes),
    )
