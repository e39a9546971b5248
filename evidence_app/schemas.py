"""Response schemas for evidence, validation snapshots, replay and agreement (A1, V7, V9, V10)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Schema
from pydantic import ConfigDict, Field


class EvidencePageQuery(Schema):
    limit: int = Field(100, ge=1, le=1000)
    offset: int = Field(0, ge=0, le=10_000_000)


class EvidenceFormatQuery(Schema):
    format: Literal["json", "text"] = Field("json", description="'text' for a text/plain download")


class EvidenceListItemOut(Schema):
    """A tool result without its content (lists never load bodies)."""

    id: int
    run_id: int
    task_id: int
    attempt_index: int
    sequence: int
    tool_name: str
    tool_call_id: str
    arguments: dict[str, Any]
    content_chars: int
    content_sha256: str
    is_error: bool
    url: str
    title: str
    created_at: datetime


class EvidenceOut(EvidenceListItemOut):
    content: str
    event_payload: dict[str, Any]


class EvidenceListOut(Schema):
    items: list[EvidenceListItemOut]
    count: int


class ValidationListItemOut(Schema):
    """A validation snapshot without the rendered input, prompt and raw responses."""

    id: int
    task_id: int
    attempt_index: int
    kind: str
    replay_of_id: int | None
    status: str
    passed: bool
    score: float | None
    failure_category: str | None
    template_name: str
    template_version: str
    model: str
    latency_ms: int
    input_tokens: int
    output_tokens: int
    schema_retry_count: int
    tool_result_count: int
    evidence_chars: int
    rendered_input_chars: int
    error: str
    created_at: datetime


class ValidationListOut(Schema):
    items: list[ValidationListItemOut]
    count: int


class ValidationOut(ValidationListItemOut):
    """Everything about one validator decision (V7)."""

    issues: list[Any]
    missing_requirements: list[Any]
    evidence_gaps: list[Any]
    recommended_revision_prompt: str | None
    reasoning: str
    result: dict[str, Any]
    system_prompt: str
    rendered_input: str
    prompt_stored: bool
    raw_responses: list[Any]
    evidence_run_ids: list[Any]
    session_ids: list[Any]
    request_count: int
    schema_errors: list[Any]
    chunk_verdicts: list[Any]
    requested_by: str | None


class ReplayIn(Schema):
    model_config = ConfigDict(extra="forbid")

    template: str | None = Field(
        None, max_length=100, description="Prompt template name; default: the original's"
    )
    model: str | None = Field(
        None, max_length=200, description="Validator model name; default: the original's"
    )


class ReplayQueuedOut(Schema):
    status: str = Field(description="'queued': the replay runs in the background")
    validation_id: int
    task_id: int
    template: str | None
    model: str | None


class AgreementGroupOut(Schema):
    template_version: str
    model_name: str
    count: int = Field(description="Human decisions that followed a validation")
    compared: int = Field(description="Of those, the ones with a validator call (not errors)")
    agreement_rate: float | None
    kappa: float | None
    confusion: dict[str, dict[str, int]]


class AgreementOut(Schema):
    items: list[AgreementGroupOut]
    count: int
