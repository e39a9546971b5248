"""Request and response schemas of the tasks API (SPEC A1, S2, V3).

Field names are the spec's words in snake_case. Lists are ``{"items": [...], "count": N}``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Schema
from pydantic import ConfigDict, Field, field_validator, model_validator

from tasks_app.states import TaskStatus

# --- Errors -----------------------------------------------------------------------------


class FieldErrorOut(Schema):
    field: str = Field(description="Dotted path of the offending field, e.g. 'plan.nodes.0.role'")
    message: str


class ErrorOut(Schema):
    """The one error shape of the API (A3)."""

    detail: str
    code: str
    errors: list[FieldErrorOut] | None = Field(
        None, description="On 422 only: one entry per invalid field"
    )


def error_responses(*codes: int) -> dict[int, type[ErrorOut]]:
    """The error statuses an endpoint documents; 400/401/413/422 apply to all."""
    return {code: ErrorOut for code in sorted({400, 401, 413, 422, *codes})}


# --- Plans ------------------------------------------------------------------------------
# Used when the runtime's ``tasks_app.agents.plans`` is not available; same shape as
# issue 3's plan: single or team, nodes with id/role/instructions/depends_on, and a
# graph mode sequence | parallel | dag.


class PlanNodeIn(Schema):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_.-]+$")
    role: str = Field(min_length=1, max_length=200)
    instructions: str = Field(min_length=1)
    depends_on: list[str] = Field(default_factory=list)
    model: str | None = Field(None, max_length=200)
    max_tool_iterations: int | None = Field(None, ge=0, le=50)


class PlanIn(Schema):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["single", "team"] = "single"
    mode: Literal["sequence", "parallel", "dag"] = "sequence"
    nodes: list[PlanNodeIn] = Field(default_factory=list, max_length=50)
    model: str | None = Field(None, max_length=200)
    max_tool_iterations: int | None = Field(None, ge=0, le=50)
    synthesis_max_tool_iterations: int = Field(0, ge=0, le=5)

    @model_validator(mode="after")
    def _check_graph(self) -> PlanIn:
        if self.kind == "single":
            if self.nodes:
                raise ValueError("a single plan has no nodes; use kind 'team'")
            return self
        if not self.nodes:
            raise ValueError("a team plan needs at least one node")
        ids = [node.id for node in self.nodes]
        if len(set(ids)) != len(ids):
            raise ValueError("node ids must be unique")
        known = set(ids)
        for node in self.nodes:
            unknown = [dep for dep in node.depends_on if dep not in known]
            if unknown:
                raise ValueError(f"node '{node.id}' depends on unknown node(s) {unknown}")
            if node.id in node.depends_on:
                raise ValueError(f"node '{node.id}' depends on itself")
        if self.mode != "dag" and any(node.depends_on for node in self.nodes):
            raise ValueError(f"depends_on is only meaningful in mode 'dag', not '{self.mode}'")
        if self.mode == "dag":
            _check_acyclic({node.id: node.depends_on for node in self.nodes})
        return self


def _check_acyclic(graph: dict[str, list[str]]) -> None:
    done: set[str] = set()
    for start in graph:
        path: set[str] = set()
        stack: list[tuple[str, bool]] = [(start, False)]
        while stack:
            node, leaving = stack.pop()
            if leaving:
                path.discard(node)
                done.add(node)
                continue
            if node in done:
                continue
            if node in path:
                raise ValueError(f"the dag has a cycle through node '{node}'")
            path.add(node)
            stack.append((node, True))
            stack.extend((dep, False) for dep in graph[node])


# The runtime's plan model is the authority when it is installed (issue 3); PlanIn above
# is the same shape, kept so the API stands on its own.
try:
    from tasks_app.agents.plans import Plan as PlanSchema
except ImportError:  # pragma: no cover - the runtime package is part of the project
    PlanSchema = PlanIn  # type: ignore[misc,assignment]


# --- Tasks ------------------------------------------------------------------------------


class TaskCreateIn(Schema):
    model_config = ConfigDict(extra="forbid")

    request: str = Field(min_length=1, max_length=200_000, description="What the agent should do")
    title: str = Field("", max_length=300)
    rules: str = Field("", max_length=50_000, description="Rules the answer must follow")
    plan: PlanSchema | None = Field(  # type: ignore[valid-type]
        None, description="Omit for a single agent; kind defaults to 'team' when nodes are given"
    )
    validation_policy: Literal["always", "never", "keywords"] = "always"
    validation_keywords: list[str] = Field(default_factory=list, max_length=100)

    @field_validator("request")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @field_validator("plan", mode="before")
    @classmethod
    def _default_kind(cls, value: Any) -> Any:
        # Same defaulting as tasks_app.agents.plans.parse_plan: {} is a single agent.
        if isinstance(value, dict) and "kind" not in value:
            return {**value, "kind": "team" if "nodes" in value else "single"}
        return value


class FeedbackIn(Schema):
    model_config = ConfigDict(extra="forbid")

    action: Literal["satisfied", "revise", "abandon"]
    comment: str = Field("", max_length=20_000, description="Required for 'revise'")
    expected_version: int | None = Field(
        None, ge=0, description="The task version you saw; a changed task answers 409"
    )
    force: bool = Field(False, description="Act even though someone else holds the claim")


class ValidationSummaryOut(Schema):
    """The latest verdict as shown in task lists (no big columns)."""

    id: int
    attempt_index: int
    status: str
    passed: bool
    score: float | None
    failure_category: str | None
    created_at: datetime


class VerdictOut(ValidationSummaryOut):
    """The latest verdict on a task, with what a person needs to decide."""

    issues: list[Any]
    missing_requirements: list[Any]
    evidence_gaps: list[Any]
    recommended_revision_prompt: str | None
    reasoning: str
    model: str
    template_version: str


class ClaimOut(Schema):
    claimed_by: str
    claimed_at: datetime
    expires_at: datetime
    is_live: bool


class AttemptOut(Schema):
    attempt_index: int
    run_ids: list[int]
    validation_id: int | None
    validation_status: str | None


class TaskListItemOut(Schema):
    id: int
    title: str
    owner: str
    status: TaskStatus
    is_open: bool
    is_execution_active: bool
    requires_user_action: bool
    validation_outcome: Literal["accepted", "force_accepted"] | None
    validation_policy: str
    attempt_count: int
    max_attempts: int
    version: int
    claimed_by: str | None
    latest_validation: ValidationSummaryOut | None
    created_at: datetime
    updated_at: datetime


class TaskOut(TaskListItemOut):
    request: str
    rules: str
    plan: dict[str, Any]
    validation_keywords: list[Any]
    final_answer: str
    latest_validation: VerdictOut | None  # type: ignore[assignment]
    attempts: list[AttemptOut]
    claim: ClaimOut | None


class TaskListOut(Schema):
    items: list[TaskListItemOut]
    count: int


TaskOrdering = Literal["created_at", "-created_at", "updated_at", "-updated_at", "id", "-id"]


class PageQuery(Schema):
    limit: int = Field(50, ge=1, le=1000)
    offset: int = Field(0, ge=0, le=10_000_000)


class ActiveTaskQuery(PageQuery):
    ordering: TaskOrdering = "-created_at"


class TaskListQuery(ActiveTaskQuery):
    status: list[TaskStatus] | None = Field(None, description="Repeatable: ?status=a&status=b")
    requires_user_action: bool | None = None
    is_open: bool | None = None
    is_execution_active: bool | None = None
    q: str | None = Field(None, max_length=500, description="Text in title or request")


class MessagePageQuery(PageQuery):
    limit: int = Field(200, ge=1, le=1000)


class DocumentQuery(PageQuery):
    q: str | None = Field(None, max_length=500, description="Text in title or body")


class ForceQuery(Schema):
    force: bool = Field(False, description="Take over or release someone else's live claim")


class EventOut(Schema):
    id: int
    from_status: str
    to_status: str
    actor: str | None
    actor_kind: str
    reason: str
    attempt_index: int
    at: datetime


class EventListOut(Schema):
    items: list[EventOut]
    count: int


# --- Runs -------------------------------------------------------------------------------


class RunOut(Schema):
    id: int
    task_id: int
    attempt_index: int
    kind: str
    node_id: str
    node_role: str
    graph_index: int
    session_id: str
    model: str
    status: str
    finish_reason: str
    output_text: str
    usage: dict[str, Any]
    input_tokens: int
    output_tokens: int
    tool_iterations: int
    evidence_count: int
    started_at: datetime
    finished_at: datetime | None
    duration_ms: int | None
    error: str
    warnings: list[Any]


class RunListOut(Schema):
    items: list[RunOut]
    count: int


class RunMessageOut(Schema):
    id: int
    index: int
    role: str
    content: str
    payload: dict[str, Any]
    created_at: datetime


class RunMessageListOut(Schema):
    items: list[RunMessageOut]
    count: int


# --- Knowledge documents ----------------------------------------------------------------


class DocumentIn(Schema):
    model_config = ConfigDict(extra="forbid")

    title: str = Field(min_length=1, max_length=500)
    body: str = Field(min_length=1)
    source_url: str = Field("", max_length=2000)

    @field_validator("title", "body")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value


class DocumentListItemOut(Schema):
    id: int
    title: str
    source_url: str
    source_key: str | None
    created_at: datetime
    updated_at: datetime


class DocumentOut(DocumentListItemOut):
    body: str


class DocumentListOut(Schema):
    items: list[DocumentListItemOut]
    count: int


class MeOut(Schema):
    username: str
    is_reviewer: bool
    is_operator: bool
