"""What an external agent sends: an attempt in one body (``AttemptIn``), or
streamed as events (``EventsIn``) and finished (``FinishIn``). Validated before anything
is stored; ``tasks_app.intake.external`` stores it, the API and the OTLP importer build it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from project.schemas import NO_NUL, NO_NUL_KEYS, Text

KEY_PATTERN = r"^[A-Za-z0-9_.:-]+$"
MAX_RUNS = 200
MAX_ITEMS = 100_000


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class UsageIn(_In):
    input_tokens: int = Field(0, ge=0, le=2**31 - 1)
    output_tokens: int = Field(0, ge=0, le=2**31 - 1)
    details: dict[str, int | float] = Field(
        default_factory=dict,
        description="Any other counters (cache reads, reasoning, ...)",
        json_schema_extra=NO_NUL_KEYS,
    )


class MessageIn(_In):
    role: Literal["system", "user", "assistant", "tool"]
    content: Text = ""
    payload: dict[str, Any] = Field(
        default_factory=dict,
        description="The message as your framework serialised it (tool calls, ids, ...)",
        json_schema_extra=NO_NUL_KEYS,
    )
    created_at: datetime | None = None


class ToolResultIn(_In):
    tool_name: str = Field(min_length=1, max_length=100, pattern=NO_NUL)
    tool_call_id: str = Field("", max_length=200, pattern=NO_NUL)
    arguments: dict[str, Any] = Field(default_factory=dict, json_schema_extra=NO_NUL_KEYS)
    content: str = Field(
        "", description="The full result the agent saw; never truncated", pattern=NO_NUL
    )
    url: str = Field("", max_length=2000, pattern=NO_NUL)
    title: str = Field("", max_length=500, pattern=NO_NUL)
    created_at: datetime | None = None
    is_error: bool = False
    payload: dict[str, Any] = Field(
        default_factory=dict, description="Extra event data", json_schema_extra=NO_NUL_KEYS
    )


class RunFields(_In):
    kind: Literal["main", "team_node", "synthesis"] = "main"
    node_id: str = Field("", max_length=100, pattern=NO_NUL)
    node_role: str = Field("", max_length=200, pattern=NO_NUL)
    model: str = Field(
        min_length=1, max_length=200, description="e.g. openai:gpt-4.1", pattern=NO_NUL
    )
    started_at: datetime | None = None


class RunIn(RunFields):
    key: str | None = Field(
        None,
        max_length=100,
        pattern=KEY_PATTERN,
        description="Your name for the run within the attempt (default: node_id or kind); "
        "streamed events refer to it",
    )
    status: Literal["running", "completed", "failed"] | None = Field(
        None,
        description="Default: completed for a whole attempt, running when streaming. A "
        "whole attempt has no running run, and a running run has no output_text or error "
        "yet (422 otherwise)",
    )
    finish_reason: str = Field("", max_length=64, pattern=NO_NUL)
    output_text: Text = ""
    usage: UsageIn = Field(default_factory=lambda: UsageIn(input_tokens=0, output_tokens=0))
    tool_iterations: int = Field(0, ge=0, le=100_000)
    finished_at: datetime | None = None
    error: Text = ""
    messages: list[MessageIn] = Field(default_factory=list, max_length=MAX_ITEMS)
    tool_results: list[ToolResultIn] = Field(default_factory=list, max_length=MAX_ITEMS)

    @property
    def effective_key(self) -> str:
        return self.key or self.node_id or self.kind


def _check_unique_keys(runs: list[RunIn]) -> None:
    seen: set[str] = set()
    for run in runs:
        if run.effective_key in seen:
            raise ValueError(
                f"two runs are named '{run.effective_key}'; give each run its own 'key'"
            )
        seen.add(run.effective_key)


class AttemptIn(_In):
    """A whole attempt in one body, or the start of a streamed one (``stream: true``)."""

    # The stream/final_answer rule below, stated in the schema: a streamed attempt has no
    # final_answer yet, a whole one has one.
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "if": {"properties": {"stream": {"const": True}}, "required": ["stream"]},
            "then": {"properties": {"final_answer": {"type": "null"}}},
            "else": {
                "required": ["final_answer"],
                "properties": {"final_answer": {"type": "string"}},
            },
        },
    )

    runs: list[RunIn] = Field(
        min_length=1,
        max_length=MAX_RUNS,
        description="The attempt's runs; each needs a distinct name (its key, else its "
        "node_id, else its kind), 422 otherwise",
    )
    final_answer: str | None = Field(
        None,
        pattern=NO_NUL,
        description="The answer under validation (required unless streaming). An empty "
        "answer fails the attempt.",
    )
    stream: bool = Field(
        False,
        description="Start the attempt and stream its events to .../attempts/{n}/events, "
        "then .../finish",
    )

    @model_validator(mode="after")
    def _check(self) -> AttemptIn:
        _check_unique_keys(self.runs)
        if self.stream and self.final_answer is not None:
            raise ValueError("a streamed attempt gives its final_answer to .../finish")
        if not self.stream and self.final_answer is None:
            raise ValueError("final_answer is required (or set stream: true)")
        return self


class RunStartedEvent(RunFields):
    type: Literal["run_started"]
    run: str = Field(min_length=1, max_length=100, pattern=KEY_PATTERN)


class MessageEvent(MessageIn):
    type: Literal["message"]
    run: str = Field(min_length=1, max_length=100, pattern=KEY_PATTERN)


class ToolResultEvent(ToolResultIn):
    type: Literal["tool_result"]
    run: str = Field(min_length=1, max_length=100, pattern=KEY_PATTERN)


class RunEndIn(_In):
    status: Literal["completed", "failed"] = "completed"
    finish_reason: str = Field("stop", max_length=64, pattern=NO_NUL)
    output_text: Text = ""
    usage: UsageIn = Field(default_factory=lambda: UsageIn(input_tokens=0, output_tokens=0))
    tool_iterations: int | None = Field(None, ge=0, le=100_000)
    finished_at: datetime | None = None
    error: Text = ""


class RunFinishedEvent(RunEndIn):
    type: Literal["run_finished"]
    run: str = Field(min_length=1, max_length=100, pattern=KEY_PATTERN)


AttemptEvent = Annotated[
    RunStartedEvent | MessageEvent | ToolResultEvent | RunFinishedEvent,
    Field(discriminator="type"),
]


class EventsIn(_In):
    """Events of a streamed attempt, stored in order; an empty list is a heartbeat."""

    events: list[AttemptEvent] = Field(default_factory=list, max_length=MAX_ITEMS)


class RunEndByKeyIn(RunEndIn):
    run: str = Field(min_length=1, max_length=100, pattern=KEY_PATTERN)


class FinishIn(_In):
    final_answer: str = Field(
        description="The answer under validation; empty fails the attempt", pattern=NO_NUL
    )
    runs: list[RunEndByKeyIn] = Field(
        default_factory=list,
        max_length=MAX_RUNS,
        description="How runs still running ended (default: completed, finish_reason stop)",
    )
