"""Response schemas for evidence, validation snapshots, replay and agreement."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal

from ninja import Schema
from pydantic import ConfigDict, Field, field_validator

from evidence_app.models import ValidationSnapshot
from evidence_app.validation.selectors import verdict
from evidence_app.validator.schema import stored_result
from evidence_app.validator.templates import list_templates
from project.schemas import (
    MAX_ID,
    MODEL_NAME,
    WHITESPACE,
    ClaimLabelIn,
    ClaimSummaryOut,
    ClaimVerdictOut,
    RequirementOut,
    as_list,
    json_integer,
)
from tasks_app.records import ToolEvidence

# The template names get_template accepts, surrounding blanks allowed, blank = default.
TEMPLATE_NAME = (
    rf"^[{WHITESPACE}]*(?:(?:{'|'.join(re.escape(t.name) for t in list_templates())})"
    rf"(?:@[^\x00]*)?[{WHITESPACE}]*)?$"
)


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

    @staticmethod
    def resolve_arguments(evidence: ToolEvidence) -> dict[str, Any]:
        return _as_object(evidence.arguments)


class EvidenceOut(EvidenceListItemOut):
    content: str
    event_payload: dict[str, Any]

    @staticmethod
    def resolve_event_payload(evidence: ToolEvidence) -> dict[str, Any]:
        return _as_object(evidence.event_payload)


def _as_object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {"value": value}


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
    model_status: str | None = Field(
        description=(
            "The model's own status before citation checks; null for verdicts stored before "
            "it was kept"
        )
    )
    claim_summary: ClaimSummaryOut
    created_at: datetime

    @staticmethod
    def resolve_failure_category(snapshot: ValidationSnapshot) -> str | None:
        return snapshot.failure_category or None

    @staticmethod
    def resolve_model(snapshot: ValidationSnapshot) -> str:
        return snapshot.model_name

    @staticmethod
    def resolve_model_status(snapshot: ValidationSnapshot) -> str | None:
        return snapshot.model_status or None

    @staticmethod
    def resolve_claim_summary(snapshot: ValidationSnapshot) -> dict[str, Any]:
        return snapshot.claim_summary if isinstance(snapshot.claim_summary, dict) else {}


class ValidationListOut(Schema):
    items: list[ValidationListItemOut]
    count: int


class ValidationOut(ValidationListItemOut):
    """Everything about one validator decision."""

    issues: list[Any]
    missing_requirements: list[Any]
    evidence_gaps: list[Any]
    recommended_revision_prompt: str | None
    reasoning: str
    claims: list[ClaimVerdictOut]
    requirements: list[RequirementOut]
    reconciliation: list[str] = Field(
        description="Why the reconciled status is what it is (docs/validator.md)"
    )
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

    @staticmethod
    def resolve_result(snapshot: ValidationSnapshot) -> dict[str, Any]:
        return snapshot.result if isinstance(snapshot.result, dict) else {}

    @staticmethod
    def resolve_issues(snapshot: ValidationSnapshot) -> list[Any]:
        return _verdict(snapshot)["issues"]

    @staticmethod
    def resolve_missing_requirements(snapshot: ValidationSnapshot) -> list[Any]:
        return _verdict(snapshot)["missing_requirements"]

    @staticmethod
    def resolve_evidence_gaps(snapshot: ValidationSnapshot) -> list[Any]:
        return _verdict(snapshot)["evidence_gaps"]

    @staticmethod
    def resolve_recommended_revision_prompt(snapshot: ValidationSnapshot) -> str | None:
        return _verdict(snapshot)["recommended_revision_prompt"]

    @staticmethod
    def resolve_reasoning(snapshot: ValidationSnapshot) -> str:
        return _verdict(snapshot)["reasoning"]

    @staticmethod
    def resolve_claims(snapshot: ValidationSnapshot) -> list[Any]:
        return [c.model_dump() for c in stored_result(snapshot.result).claims]

    @staticmethod
    def resolve_requirements(snapshot: ValidationSnapshot) -> list[Any]:
        return [r.model_dump() for r in stored_result(snapshot.result).requirements]

    @staticmethod
    def resolve_reconciliation(snapshot: ValidationSnapshot) -> list[str]:
        return stored_result(snapshot.result).reconciliation

    @staticmethod
    def resolve_raw_responses(snapshot: ValidationSnapshot) -> list[Any]:
        return as_list(snapshot.raw_responses)

    @staticmethod
    def resolve_evidence_run_ids(snapshot: ValidationSnapshot) -> list[Any]:
        return as_list(snapshot.evidence_run_ids)

    @staticmethod
    def resolve_session_ids(snapshot: ValidationSnapshot) -> list[Any]:
        return as_list(snapshot.session_ids)

    @staticmethod
    def resolve_schema_errors(snapshot: ValidationSnapshot) -> list[Any]:
        return as_list(snapshot.schema_errors)

    @staticmethod
    def resolve_chunk_verdicts(snapshot: ValidationSnapshot) -> list[Any]:
        return as_list(snapshot.chunk_verdicts)

    @staticmethod
    def resolve_requested_by(snapshot: ValidationSnapshot) -> str | None:
        return snapshot.requested_by.get_username() if snapshot.requested_by else None


def _verdict(snapshot: ValidationSnapshot) -> dict[str, Any]:
    return verdict(snapshot) or {}


class ReplayIn(Schema):
    model_config = ConfigDict(extra="forbid")

    template: str | None = Field(
        None,
        max_length=100,
        description="Prompt template name (or name@version); default: the original's",
        json_schema_extra={"pattern": TEMPLATE_NAME},
    )
    model: str | None = Field(
        None,
        max_length=200,
        description="Validator model, provider:name (e.g. openai:gpt-4.1, "
        "anthropic:claude-sonnet-4-5, compat:<model>, offline:judge); default: the "
        "original's. A model this deployment cannot use (unknown provider, no API key) "
        "is refused with 422.",
        json_schema_extra={"pattern": MODEL_NAME},
    )


class ReplayQueuedOut(Schema):
    status: str = Field(description="'queued': the replay runs in the background")
    replay_id: int = Field(description="Follow it at GET /api/v1/replays/{replay_id}")
    validation_id: int
    task_id: int
    template: str | None
    model: str | None


class ReplayRequestOut(Schema):
    id: int
    state: str = Field(description="queued, running, succeeded or failed")
    validation_id: int = Field(description="The original validation replayed")
    task_id: int
    template: str | None
    model: str | None
    tries: int = Field(description="Deliveries of its job so far")
    error: str = Field(description="Why it failed; empty otherwise")
    replay_validation_id: int | None = Field(
        description="The replay's own validation (GET /api/v1/validations/{id}) once succeeded"
    )
    created_at: datetime
    finished_at: datetime | None

    @staticmethod
    def resolve_validation_id(obj: Any) -> int:
        return int(obj.original_id)

    @staticmethod
    def resolve_task_id(obj: Any) -> int:
        return int(obj.original.task_id)

    @staticmethod
    def resolve_template(obj: Any) -> str | None:
        return obj.template or None

    @staticmethod
    def resolve_model(obj: Any) -> str | None:
        return obj.model or None

    @staticmethod
    def resolve_replay_validation_id(obj: Any) -> int | None:
        return obj.result_id


# --- Claim labels given after a decision ----------------------------------------------------


class ClaimLabelsIn(Schema):
    model_config = ConfigDict(extra="forbid")

    feedback_id: int | None = Field(
        default=None,
        ge=1,
        le=MAX_ID,
        description="Your decision; default: the task's pending decision",
    )
    validation_id: int | None = Field(
        default=None,
        ge=1,
        le=MAX_ID,
        description="The validation whose claims you labelled; refused (409) when the "
        "decision was taken on another one",
    )
    claims: list[ClaimLabelIn] = Field(min_length=1, max_length=1000)

    _json_integers = field_validator("feedback_id", "validation_id", mode="before")(json_integer)


class ClaimLabelOut(Schema):
    claim_index: int
    claim_text: str
    label: str
    judge_verdict: str = Field(description="The validator's verdict on that claim")
    corrected_citation: dict[str, Any]


class ClaimLabelsOut(Schema):
    task_id: int
    feedback_id: int
    decision_state: str = Field(description="pending or applied")
    validation_id: int
    items: list[ClaimLabelOut]
    count: int


class AgreementGroupOut(Schema):
    template_version: str
    model_name: str
    count: int = Field(description="Human decisions that followed a validation")
    compared: int = Field(description="Of those, the ones with a validator call (not errors)")
    agreement_rate: float | None
    kappa: float | None
    confusion: dict[str, dict[str, int]]


class JudgePairAgreementOut(Schema):
    first_model: str
    second_model: str
    count: int = Field(description="Verdicts judged by both")
    compared: int = Field(description="Of those, the ones where neither judge failed")
    agreement_rate: float | None = Field(description="Both accept or both do not")
    kappa: float | None
    disagreements: int = Field(description="Pairs sent to a person: one accepted, one not")
    confusion: dict[str, dict[str, int]] = Field(
        description="first judge's status -> second judge's status -> count"
    )


class AgreementOut(Schema):
    items: list[AgreementGroupOut]
    count: int
    judge_pairs: list[JudgePairAgreementOut] = Field(
        default_factory=list, description="Judge-versus-judge agreement (a second judge)"
    )
