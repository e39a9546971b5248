"""Execution plans: a single agent or a team, validated by pydantic.

A stored ``Task.plan`` of ``{}`` means a single agent with the defaults. A team plan::

    {"kind": "team", "mode": "dag",
     "nodes": [{"id": "policy", "role": "Policy reader", "instructions": "..."},
               {"id": "costs", "role": "Cost checker", "depends_on": ["policy"]}],
     "synthesis_max_tool_iterations": 0}
"""

from __future__ import annotations

import graphlib
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from project.errors import InvalidInput
from project.schemas import Text, json_integer

MAX_TEAM_NODES = 12
MAX_SYNTHESIS_TOOL_ITERATIONS = 3


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    _json_integers = field_validator(
        "max_tool_iterations", "synthesis_max_tool_iterations", mode="before", check_fields=False
    )(json_integer)


class PlanNode(_Strict):
    id: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,100}$")
    role: Text = Field(min_length=1, max_length=200)
    instructions: Text = ""
    depends_on: list[Text] = Field(
        default_factory=list,
        description="Ids of other nodes of this plan (dag mode); unknown ids, a node "
        "depending on itself and cycles are refused with 422",
    )
    # Per-node model override (e.g. a cheaper model for a reader node).
    model: Text | None = None
    max_tool_iterations: int | None = Field(default=None, ge=0, le=50)


class SinglePlan(_Strict):
    kind: Literal["single"] = "single"
    model: Text | None = None
    max_tool_iterations: int | None = Field(default=None, ge=0, le=50)


class TeamPlan(_Strict):
    kind: Literal["team"] = "team"
    mode: Literal["sequence", "parallel", "dag"] = "sequence"
    nodes: list[PlanNode] = Field(
        min_length=1,
        max_length=MAX_TEAM_NODES,
        description="Node ids must be unique (a duplicate is refused with 422)",
    )
    # X5: synthesis runs with no tools unless the plan grants a small budget.
    synthesis_max_tool_iterations: int = Field(default=0, ge=0, le=MAX_SYNTHESIS_TOOL_ITERATIONS)
    model: Text | None = None
    max_tool_iterations: int | None = Field(default=None, ge=0, le=50)

    @model_validator(mode="after")
    def _check_graph(self) -> TeamPlan:
        ids = [node.id for node in self.nodes]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"duplicate node ids: {', '.join(duplicates)}")
        known = set(ids)
        for node in self.nodes:
            unknown = [d for d in node.depends_on if d not in known]
            if unknown:
                raise ValueError(
                    f"node '{node.id}' depends on unknown node(s): {', '.join(unknown)}"
                )
            if node.id in node.depends_on:
                raise ValueError(f"node '{node.id}' depends on itself")
        if self.mode == "dag":
            self.batches()  # raises on a cycle
        return self

    def dependencies(self, node: PlanNode) -> list[str]:
        """Nodes whose output this node receives: all earlier ones in a sequence, its
        declared ones in a DAG, none in a parallel team."""
        if self.mode == "sequence":
            position = self.nodes.index(node)
            return [n.id for n in self.nodes[:position]]
        if self.mode == "parallel":
            return []
        return list(node.depends_on)

    def batches(self) -> list[list[PlanNode]]:
        """Groups of nodes that may run together, in graph order (declared order within a
        batch). Sequence: one node per batch; parallel: one batch; dag: topological layers."""
        if self.mode == "sequence":
            return [[node] for node in self.nodes]
        if self.mode == "parallel":
            return [list(self.nodes)]
        sorter = graphlib.TopologicalSorter({n.id: n.depends_on for n in self.nodes})
        try:
            sorter.prepare()
        except graphlib.CycleError as exc:
            cycle = ", ".join(dict.fromkeys(exc.args[1]))
            raise ValueError(f"the dependency graph has a cycle among: {cycle}") from None
        position = {node.id: index for index, node in enumerate(self.nodes)}
        layers: list[list[PlanNode]] = []
        while sorter.is_active():
            ready = sorted(sorter.get_ready(), key=position.__getitem__)
            layers.append([self.nodes[position[node_id]] for node_id in ready])
            sorter.done(*ready)
        return layers


Plan = Annotated[SinglePlan | TeamPlan, Field(discriminator="kind")]


class _PlanEnvelope(BaseModel):
    plan: Plan


def parse_plan(data: dict[str, Any] | None) -> SinglePlan | TeamPlan:
    """Validate a stored or submitted plan; ``{}``/``None`` is a single agent. Bad plans
    raise ``InvalidInput`` with pydantic's message."""
    raw = dict(data or {})
    if not raw:
        return SinglePlan()
    raw.setdefault("kind", "team" if "nodes" in raw else "single")
    try:
        return _PlanEnvelope.model_validate({"plan": raw}).plan
    except ValidationError as exc:
        details = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'][1:]) or 'plan'}: {err['msg']}"
            for err in exc.errors()
        )
        raise InvalidInput(f"invalid plan: {details}") from None
