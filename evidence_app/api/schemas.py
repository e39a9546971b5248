"""Response schemas for evidence, validation snapshots, replay and agreement (A1, V7, V9, V10)."""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Any, Literal

from ninja import Schema
from pydantic import ConfigDict, Field, field_validator

from evidence_app.models import ValidationSnapshot
from evidence_app.review.audit_page import audited_claims as audit_claims
from evidence_app.validation.selectors import verdict
from evidence_app.validator.schema import stored_result
from evidence_app.validator.templates import list_templates
from project.schemas import (
    MODEL_NAME,
    NOT_BLANK,
    WHITESPACE,
    ClaimSummaryOut,
    ClaimVerdictOut,
    JsonBool,
    RequirementOut,
    Text,
    as_list,
    json_integer,
    not_blank,
)
from tasks_app.models import ToolEvidence

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
        description="The model's own status before citation checks; null before issue 12"
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
    """Everything about one validator decision (V7)."""

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


# --- Claim labels given with a decision ------------------------------------------------------


# Ids are database keys (64-bit); anything larger can name no row.
MAX_ID = 2**63 - 1


class CorrectedCitationIn(Schema):
    model_config = ConfigDict(extra="forbid")

    evidence_id: int = Field(
        ge=1, le=MAX_ID, description="A tool result of this task (GET /runs/{id}/evidence)"
    )
    quote: str = Field(
        min_length=1,
        max_length=2000,
        description="The words it says",
        json_schema_extra={"pattern": NOT_BLANK},
    )

    _json_integers = field_validator("evidence_id", mode="before")(json_integer)
    _not_blank = field_validator("quote")(not_blank)


class ClaimLabelIn(Schema):
    model_config = ConfigDict(extra="forbid")

    claim_index: int = Field(
        ge=0, le=100_000, description="The claim's 0-based position in the validation"
    )
    label: Literal["supported", "unsupported", "contradicted"]
    corrected_citation: CorrectedCitationIn | None = None

    _json_integers = field_validator("claim_index", mode="before")(json_integer)


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


# --- The review team's figures -------------------------------------------------------------


class TeamQuery(Schema):
    period: Literal["day", "week", "month"] = Field(
        "week", description="The period ending now: the last 24 hours, 7 days or 30 days"
    )


class TeamDurationsOut(Schema):
    """Seconds from a reviewer's first view to their decision (percentiles are values
    someone actually took: numpy's inverted_cdf)."""

    count: int = Field(description="Items with a first view recorded before the decision")
    no_first_view: int = Field(description="Items decided without a recorded first view")
    p50_seconds: float | None
    p95_seconds: float | None


class TeamReviewerOut(Schema):
    reviewer_id: int
    username: str
    role: str = Field(description="reviewer or operator")
    decisions: int = Field(description="Applied decisions (satisfied + revise + abandon)")
    satisfied: int
    revise: int
    abandon: int
    audits: int = Field(description="Audits judged")
    time: TeamDurationsOut = Field(description="Time per item over decisions and audits")


class TeamQueueOut(Schema):
    count: int = Field(description="Tasks in needs_review now")
    p50_seconds: float | None
    p95_seconds: float | None
    oldest_seconds: float | None
    oldest_task_id: int | None


class TeamAuditsOut(Schema):
    open: int = Field(description="Audits waiting for a person")
    oldest_seconds: float | None
    oldest_audit_id: int | None


class TeamOut(Schema):
    period: str
    since: datetime
    until: datetime
    decisions: int = Field(description="Applied decisions by everyone in the period")
    other_decisions: int = Field(description="Of those, by requesters or removed accounts")
    audits_judged: int
    decision_time: TeamDurationsOut
    audit_time: TeamDurationsOut
    item_time: TeamDurationsOut
    capped: bool = Field(description="Time per item read only the period's newest rows")
    reviewers: list[TeamReviewerOut]
    queue: TeamQueueOut
    audits: TeamAuditsOut


# --- Measuring trust: the certified false-accept and false-reject rates ----------------------


class TrustQuery(Schema):
    period: Literal["day", "week", "month"] = Field(
        "week", description="The rows beside the last 30 days: one per day, week or month"
    )
    target: float | None = Field(
        None,
        gt=0,
        lt=1,
        description="The rate the 95 % upper bound is held against "
        "(default: TRUST_TARGET_FALSE_ACCEPT)",
    )


class IntervalOut(Schema):
    estimate: float | None
    low: float | None
    high: float | None


class TrustRateOut(Schema):
    route: str = Field(description="auto_accepted (false accepts) or auto_rejected (false rejects)")
    eligible: int = Field(
        description="Verdicts on this route drawn with an audit probability above 0 (covered)"
    )
    judged: int = Field(description="Audits a person has judged blind (counted)")
    wrong: int = Field(description="Judged audits that contradict the verdict")
    outstanding: int = Field(description="Audits drawn and not yet judged (not counted)")
    not_blind: int = Field(
        description="Audits judged by someone who had seen the task's verdict or status "
        "first: stored, not counted"
    )
    method: str = Field(description="exact (one audit rate) or stratified (rates changed)")
    interval: IntervalOut = Field(description="The estimate with its 95 % interval")
    ppi: IntervalOut | None = Field(
        description="The prediction-powered estimate (every verdict has a second judge's score)"
    )
    target: float
    certified: bool = Field(description="The 95 % upper bound is under the target")
    audit_rate: float = Field(description="The audit probability of the newest verdict")
    audits_needed: int | None = Field(
        description="More judged audits to bring the upper bound under the target at the "
        "observed rate; null: not reachable"
    )
    verdicts_needed: int | None = Field(description="Verdicts to wait for at the audit rate")


class TrustPeriodOut(Schema):
    start: date | None = Field(description="The period's first day; null for the last 30 days")
    false_accepts: TrustRateOut | None
    false_rejects: TrustRateOut | None


class TrustGroupOut(Schema):
    template_version: str
    model_name: str
    window: TrustPeriodOut = Field(description="The last 30 days as one period")
    periods: list[TrustPeriodOut]


class UncoveredOut(Schema):
    route: str
    count: int = Field(description="Verdicts of the window drawn at audit probability 0")
    requester: str = Field(description="Whose tasks they are")
    set_by: str = Field(description="The operator who set the rate below the floor")
    reason: str = Field(description="Why, as recorded")


class TrustOut(Schema):
    period: str
    target: float
    window_days: int
    since: datetime
    items: list[TrustGroupOut]
    count: int
    uncovered: list[UncoveredOut] = Field(
        description="Automatic verdicts no certificate covers (audit rate 0), left out of "
        "the figures above"
    )


# --- Audits -------------------------------------------------------------------------------


class AuditStateQuery(Schema):
    state: Literal["open", "done"] = Field("open", description="open (oldest first) or done")


class AuditClaimOut(Schema):
    """One claim of the audited answer as the validator split it; ``verdict`` (the
    validator's) and ``label`` (the person's) only once the audit is judged."""

    claim_index: int
    text: str
    verdict: str | None = None
    label: str | None = None


class AuditListItemOut(Schema):
    """An audit; while it is open, nothing says what the validator decided nor which task
    it audits (blind: the task's page and API would tell)."""

    id: int
    task_id: int | None = Field(None, description="The audited task, revealed once judged")
    task_title: str | None = Field(None, description="Its title, revealed once judged")
    attempt_index: int
    state: str
    created_at: datetime
    first_viewed_at: datetime | None
    decided_at: datetime | None
    reviewer: str | None = Field(None, description="Who judged it")
    correct: bool | None = Field(None, description="The person's call; null while open")
    comment: str = ""
    verdict: str | None = Field(
        None, description="The validator's verdict, revealed once judged (null while open)"
    )
    route: str | None = Field(
        None, description="auto_accepted or auto_rejected, revealed once judged"
    )
    false_verdict: bool | None = Field(
        None, description="The person contradicts the validator (false accept or reject)"
    )
    probability: float | None = Field(
        None, description="The probability it was drawn with, revealed once judged"
    )

    blind: bool | None = Field(
        None,
        description="Once judged: false when the judge had seen the task's verdict or "
        "status first (stored, not counted in the certified figures)",
    )

    @staticmethod
    def resolve_task_id(audit: Any) -> int | None:
        return audit.task_id if audit.state == "done" else None

    @staticmethod
    def resolve_task_title(audit: Any) -> str | None:
        return audit.task.title if audit.state == "done" else None

    @staticmethod
    def resolve_blind(audit: Any) -> bool | None:
        return audit.blind if audit.state == "done" else None

    @staticmethod
    def resolve_reviewer(audit: Any) -> str | None:
        return audit.reviewer.get_username() if audit.reviewer_id else None

    @staticmethod
    def resolve_verdict(audit: Any) -> str | None:
        return audit.snapshot.status if audit.state == "done" else None

    @staticmethod
    def resolve_route(audit: Any) -> str | None:
        return audit.route if audit.state == "done" else None

    @staticmethod
    def resolve_false_verdict(audit: Any) -> bool | None:
        return audit.false_verdict if audit.state == "done" else None

    @staticmethod
    def resolve_probability(audit: Any) -> float | None:
        return audit.probability if audit.state == "done" else None


class AuditOut(AuditListItemOut):
    claims: list[AuditClaimOut] = Field(
        default_factory=list, description="The answer's claims (text only while open)"
    )

    @staticmethod
    def resolve_claims(audit: Any) -> list[dict[str, Any]]:
        return [
            {
                "claim_index": c["index"],
                "text": c["text"],
                "verdict": c["verdict"] or None,
                "label": c["label"] or None,
            }
            for c in audit_claims(audit)
        ]


class AuditListOut(Schema):
    items: list[AuditListItemOut]
    count: int
    next: str | None = Field(None, description="URL of the next page by cursor; null on the last")


class AuditClaimLabelIn(Schema):
    model_config = ConfigDict(extra="forbid")

    claim_index: int = Field(ge=0, le=100_000)
    label: Literal["supported", "unsupported", "contradicted"]
    corrected_citation: CorrectedCitationIn | None = Field(
        None, description="The citation as it should be: a tool result's id and its quote"
    )

    _json_integers = field_validator("claim_index", mode="before")(json_integer)


class AuditJudgementIn(Schema):
    model_config = ConfigDict(
        extra="forbid",
        # The rule the service enforces, stated in the schema: "not correct" needs a
        # comment that is not blank.
        json_schema_extra={
            "if": {"properties": {"correct": {"const": False}}, "required": ["correct"]},
            "then": {"properties": {"comment": {"pattern": NOT_BLANK}}, "required": ["comment"]},
        },
    )

    correct: JsonBool = Field(
        description="Is the answer correct (supported and doing what was asked)?"
    )
    comment: Text = Field(
        "", max_length=20_000, description="Required (not blank) when not correct"
    )
    claims: list[AuditClaimLabelIn] = Field(default_factory=list, max_length=1000)
