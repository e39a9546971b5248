"""Execution plans: a single agent or a team (SPEC X4, X5), validated by pydantic.

A stored ``Task.plan`` of ``{}`` means a single agent with the defaults. A team plan::

    {"kind": "team", "mode": "dag",
     "nodes": [{"id": "policy", "role": "Policy reader", "instructions": "..."},
               {"id": "costs", "role": "Cost checker", "depends_on": ["policy"]}],
     "synthesis_max_tool_iterations": 0}
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from tasks_app.errors import InvalidInput

MAX_TEAM_NODES = 12
MAX_SYNTHESIS_TOOL_ITERATIONS = 3


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PlanNode(_Strict):
    id: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,100}$")
    role: str = Field(min_length=1, max_length=200)
    instructions: str = ""
    depends_on: list[str] = Field(default_factory=list)
    # Per-node model override (e.g. a cheaper model for a reader node).
    model: str | None = None
    max_tool_iterations: int | None = Field(default=None, ge=0, le=50)


class SinglePlan(_Strict):
    kind: Literal["single"] = "single"
    model: str | None = None
    max_tool_iterations: int | None = Field(default=None, ge=0, le=50)


class TeamPlan(_Strict):
    kind: Literal["team"] = "team"
    mode: Literal["sequence", "parallel", "dag"] = "sequence"
    nodes: list[PlanNode] = Field(min_length=1, max_length=MAX_TEAM_NODES)
    # X5: synthesis runs with no tools unless the plan grants a small budget.
    synthesis_max_tool_iterations: int = Field(default=0, ge=0, le=MAX_SYNTHESIS_TOOL_ITERATIONS)
    model: str | None = None
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
        done: set[str] = set()
        remaining = list(self.nodes)
        layers: list[list[PlanNode]] = []
        while remaining:
            layer = [n for n in remaining if all(d in done for d in n.depends_on)]
            if not layer:
                cycle = ", ".join(n.id for n in remaining)
                raise ValueError(f"the dependency graph has a cycle among: {cycle}")
            layers.append(layer)
            done.update(n.id for n in layer)
            remaining = [n for n in remaining if n.id not in done]
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
