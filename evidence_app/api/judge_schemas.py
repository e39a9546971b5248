"""Schemas of the judge endpoints: the judges with their certified thresholds, the
threshold operations (shadow, approve, stop), the judge gate (comparisons, the default
judge, shadow mode) and the export of labelled cases."""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Any, Literal

from ninja import Schema
from pydantic import ConfigDict, Field, field_validator

from evidence_app.validator.templates import list_templates
from project.schemas import (
    NO_NUL,
    NOT_BLANK,
    REQUIRED_MODEL_NAME,
    WHITESPACE,
    JsonBool,
    Text,
    not_blank,
)

# A template file's name (or name@version), required: a candidate names its template.
REQUIRED_TEMPLATE_NAME = (
    rf"^[{WHITESPACE}]*(?:{'|'.join(re.escape(t.name) for t in list_templates())})"
    rf"(?:@[^\x00]*)?[{WHITESPACE}]*$"
)
ISO_DATE = r"^\d{4}-\d{2}-\d{2}$"


def iso_date(value: Any) -> Any:
    """A ``mode="before"`` validator: a day as ``YYYY-MM-DD`` only (pydantic alone would
    also read a number of seconds, such as ``0``, as a date)."""
    if value is not None and not (isinstance(value, str) and re.match(ISO_DATE, value)):
        raise ValueError("must be a date, YYYY-MM-DD")
    return value


# --- Judges and their thresholds ---------------------------------------------------------------


class CurvePointOut(Schema):
    """One candidate threshold of the coverage–risk curve (downsampled, strictest first)."""

    threshold: float = Field(description="Scores at or above it are auto-accepted")
    accepted: int = Field(description="Labelled accepts scoring at or above it")
    coverage: float = Field(description="The weighted share of labelled accepts it automates")
    risk: float = Field(description="Their weighted false-accept rate")
    upper: float = Field(description="Its one-sided 95 % upper bound")


class ShadowFiguresOut(Schema):
    """What a threshold in shadow would have done to the judge's accepted verdicts since
    its shadow started."""

    since: datetime
    would_accept: int
    would_send: int = Field(description="Would have gone to a person")
    audited: int = Field(description="Of the would-be auto-accepts, judged on an audit")
    audited_wrong: int


class DriftOut(Schema):
    """The drift rule on the judged audits of an approved threshold's auto-accepts."""

    audits: int
    wrong: int
    statistic: float = Field(description="The CUSUM; auto-accept stops when it reaches 5")
    stopped: bool = Field(description="Auto-accept is stopped: every accept goes to a person")
    stopped_at: datetime | None
    stopped_by: str | None = Field(
        description="The operator who stopped it; null when the drift rule did (or running)"
    )
    reason: str = Field(description="Why it stopped, as recorded; empty while running")


class ThresholdOut(Schema):
    """One certification of a judge: proposed, in shadow, approved or retired."""

    id: int
    state: str = Field(description="proposed, shadow, approved or retired")
    template_version: str
    model: str
    threshold: float | None = Field(description="τ; null: nothing certified on these labels")
    target: float = Field(description="The false-accept rate it is certified at")
    delta: float = Field(description="The certification's error: 0.05 is 95 % confidence")
    labelled: int = Field(description="Labelled accepts it was certified on")
    automated: float = Field(description="The weighted share of labelled accepts at or above τ")
    risk: float | None = Field(description="Their false-accept rate")
    upper: float | None = Field(description="Its one-sided upper bound at 1 - delta")
    guarantee: str = Field(description="The guarantee in one sentence, or why there is none")
    curve: list[CurvePointOut]
    computed_at: datetime
    shadow_started_at: datetime | None
    shadow_started_by: str | None
    shadow_ready_at: datetime | None = Field(
        description="When it may be approved (AUTOACCEPT_SHADOW_HOURS after its shadow started)"
    )
    shadow: ShadowFiguresOut | None = Field(description="Its shadow figures while in shadow")
    approved_at: datetime | None
    approved_by: str | None
    retired_at: datetime | None
    drift: DriftOut | None = Field(description="Once approved: the drift rule's state")


class JudgeOut(Schema):
    """A judge: template version × model (a task's second judge only adds caution)."""

    template_version: str
    model: str
    role: Literal["default", "shadow", "other"] = Field(
        description="default: judges every new verdict; shadow: the candidate judging "
        "beside it; other: a judge of earlier verdicts"
    )
    auto_accept: Literal["certified", "stopped", "not_certified"] = Field(
        description="certified: an approved threshold routes its accepts; stopped: every "
        "accept goes to a person until a new approval; not_certified: no approved threshold"
    )
    approved: ThresholdOut | None = Field(description="The approved threshold, if any")
    certification: ThresholdOut | None = Field(
        description="The latest certification waiting for approval (proposed or in shadow)"
    )
    accepted_30d: int = Field(description="Its accepted verdicts of the last 30 days")
    auto_accepted_30d: int = Field(description="Of them, sent without a person")


class JudgesOut(Schema):
    items: list[JudgeOut]
    count: int
    target: float = Field(description="TRUST_TARGET_FALSE_ACCEPT: the certification's target")
    shadow_hours: float = Field(description="AUTOACCEPT_SHADOW_HOURS before an approval")


class CertifyQueuedOut(Schema):
    status: Literal["queued"]
    job_id: str
    requested_at: datetime = Field(
        description="Certifications computed from now on have a later `computed_at`"
    )


class ThresholdStopIn(Schema):
    model_config = ConfigDict(extra="forbid")

    reason: str = Field(
        min_length=10,
        max_length=2000,
        description="Why auto-accept stops (recorded; at least 10 characters, not blank)",
        json_schema_extra={"pattern": NOT_BLANK},
    )

    _not_blank = field_validator("reason")(not_blank)


# --- The judge gate ------------------------------------------------------------------------------


class ComparisonIn(Schema):
    model_config = ConfigDict(extra="forbid")

    template: str = Field(
        max_length=100,
        description="The candidate's prompt template (a template file's name)",
        json_schema_extra={"pattern": REQUIRED_TEMPLATE_NAME},
    )
    model: str = Field(
        max_length=200,
        description="The candidate's validator model, provider:name (e.g. offline:judge); a "
        "model this deployment cannot use is refused with 422",
        json_schema_extra={"pattern": REQUIRED_MODEL_NAME},
    )
    cases: list[Text] = Field(
        default_factory=list,
        max_length=200,
        description="Only these held-out case ids or categories (empty: every held-out case)",
    )


class ComparisonOut(Schema):
    """A comparison of a candidate with the judge of its day on the labelled cases."""

    id: int
    template: str
    model: str
    baseline_template: str
    baseline_model: str
    case_filter: list[str]
    state: str = Field(description="queued, running, succeeded or failed")
    done: int
    total: int
    error: str
    requested_by: str | None
    created_at: datetime
    finished_at: datetime | None
    stale: bool = Field(
        description="Made against a judge that is no longer the default: compare again"
    )
    can_default: bool = Field(
        description="Finished on enough cases against the current judge: its candidate may "
        "become the default"
    )
    needs_reason: bool = Field(
        description="The comparison did not find the candidate better: making it the "
        "default needs a reason and acknowledge_not_better"
    )
    figures: dict[str, Any] = Field(
        description="Once succeeded: both judges' accuracy, false-accept and false-reject "
        "rates and share sent to a person (each k of n with its 95 % interval), the "
        "discordant cases, McNemar's p_value and the verdict (better, worse, no "
        "significant difference), and both judges at a certified risk (at_target)"
    )


class ComparisonListOut(Schema):
    items: list[ComparisonOut]
    count: int
    current_template: str
    current_model: str
    min_cases: int = Field(description="The fewest compared cases a new default needs")


class DefaultIn(Schema):
    model_config = ConfigDict(extra="forbid")

    reason: Text = Field(
        "",
        max_length=2000,
        description="Why (recorded); at least 20 characters when the comparison did not "
        "find the candidate better",
    )
    acknowledge_not_better: JsonBool = Field(
        False,
        description="The second confirmation: make a candidate the comparison did not find "
        "better the default anyway",
    )


class ShadowJudgeOut(Schema):
    id: int
    template: str
    model: str
    active: bool
    started_at: datetime
    started_by: str | None
    stopped_at: datetime | None
    stopped_by: str | None


class DefaultJudgeOut(Schema):
    template: str
    model: str
    chosen_at: datetime
    chosen_by: str | None
    comparison_id: int | None
    note: str
    shadow_stopped: ShadowJudgeOut | None = Field(
        description="The candidate in shadow, stopped: it is now the judge"
    )
    shadow_restarted: ShadowJudgeOut | None = Field(
        description="The candidate in shadow, restarted against the new judge"
    )


class ShadowIn(Schema):
    model_config = ConfigDict(extra="forbid")

    template: str = Field(
        max_length=100,
        description="The candidate's prompt template",
        json_schema_extra={"pattern": REQUIRED_TEMPLATE_NAME},
    )
    model: str = Field(
        max_length=200,
        description="The candidate's validator model, provider:name",
        json_schema_extra={"pattern": REQUIRED_MODEL_NAME},
    )


class ShadowStateOut(Schema):
    shadow: ShadowJudgeOut | None = Field(
        description="The candidate in shadow, else the last one stopped; null for none yet"
    )
    figures: dict[str, Any] | None = Field(
        description="What it judged so far: counts by state, agreement with the current "
        "judge and with people beside the current judge's"
    )


# --- Labelled cases --------------------------------------------------------------------------


class LabelledCasesQuery(Schema):
    queue: Literal["audit", "review", "all"] = Field(
        "audit",
        description="audit: the blind audit judgements (default); review: decisions on "
        "tasks with their claim labels; all: both",
    )
    template_version: str | None = Field(
        None,
        max_length=100,
        description="Only verdicts of this template version (e.g. default@1359c919)",
        json_schema_extra={"pattern": NO_NUL},
    )
    model: str | None = Field(
        None,
        max_length=200,
        description="Only verdicts of this validator model",
        json_schema_extra={"pattern": NO_NUL},
    )
    since: date | None = Field(
        None,
        description="Judged or decided on or after this day (YYYY-MM-DD)",
        json_schema_extra={"pattern": ISO_DATE},
    )
    until: date | None = Field(
        None,
        description="Judged or decided on or before this day (YYYY-MM-DD)",
        json_schema_extra={"pattern": ISO_DATE},
    )

    _iso_dates = field_validator("since", "until", mode="before")(iso_date)
