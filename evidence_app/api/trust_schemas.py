"""Schemas of the trust endpoints: the review team's figures, the certified false-accept
and false-reject rates, and audits with their blind judgements."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, Literal

from ninja import Schema
from pydantic import ConfigDict, Field, field_validator

from evidence_app.review.audit_page import audited_claims as audit_claims
from project.schemas import NOT_BLANK, CorrectedCitationIn, JsonBool, Text, json_integer


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


class TrustQuery(Schema):
    period: Literal["day", "week", "month"] = Field(
        "week", description="The rows beside the last 30 days: one per day, week or month"
    )
    target: float | None = Field(
        None,
        gt=0,
        lt=1,
        allow_inf_nan=False,
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
    outstanding: int = Field(
        description="Audits drawn on the period's verdicts and not yet judged (not counted), "
        "both routes together: an open audit's route is not told"
    )


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


class AuditEvidenceOut(Schema):
    """One tool result of the audited attempt, numbered by its place in the audit: its
    own id would lead back to the task."""

    item: int = Field(description="Its place in the audit, from 1")
    tool_name: str
    title: str
    url: str
    arguments: dict[str, Any] = Field(description="The tool call's arguments")
    is_error: bool
    content: str

    @staticmethod
    def resolve_arguments(item: dict[str, Any]) -> dict[str, Any]:
        value = item["arguments"]
        return value if isinstance(value, dict) else {"value": value}


class AuditMaterialOut(Schema):
    """What the audit page shows to judge by: never the verdict, route, score, task id
    or title."""

    request: str
    rules: str
    answer: str = Field(description="The audited attempt's answer")
    evidence: list[AuditEvidenceOut] = Field(
        description="The audited attempt's tool results, in full (at most 1000)"
    )
    evidence_capped: bool = Field(description="More tool results than listed")


class AuditOut(AuditListItemOut):
    claims: list[AuditClaimOut] = Field(
        default_factory=list, description="The answer's claims (text only while open)"
    )
    material: AuditMaterialOut | None = Field(
        None,
        description="GET of one audit: the request, rules, answer and evidence to judge by "
        "(the claims are above); null in a judgement's answer",
    )
    refusal: str | None = Field(
        None,
        description="GET of an open audit: why you may not judge it (your own work), else null",
    )
    not_blind: str | None = Field(
        None,
        description="GET of an open audit: what you read of its task's verdict or status "
        "(the channel) while it was open; your judgement will then be stored, not counted",
    )

    @staticmethod
    def resolve_material(audit: Any) -> dict[str, Any] | None:
        return getattr(audit, "material", None)

    @staticmethod
    def resolve_refusal(audit: Any) -> str | None:
        return getattr(audit, "refusal", None)

    @staticmethod
    def resolve_not_blind(audit: Any) -> str | None:
        return getattr(audit, "not_blind", None)

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
