"""Every write of the certified auto-accept thresholds: the background job
proposes and records drift, an operator starts a proposal's shadow and approves it.

A new threshold takes effect only when an operator approves it, and only after it ran
in shadow for ``AUTOACCEPT_SHADOW_HOURS`` (the Trust page shows what it would have
done meanwhile). Approving retires the judge's previous threshold and starts a new drift
sum and writes the ``auto_accept.approved`` webhook event. When the drift rule fires on
the audits of an approved threshold's auto-accepts, or an operator stops it with a
reason (``threshold_stop``), auto-accept stops for that judge until a new threshold is
approved: ``stopped_at`` is set with the reason, one WARNING is logged and an
``auto_accept.stopped`` webhook event is written (the drift rule's to the owner of the
task whose audit stopped it, an operator's to the operators' endpoints). The Trust page
and the API call these same functions."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from evidence_app.autoaccept.selectors import JudgeKey
from evidence_app.models import AutoAcceptThreshold, ThresholdState
from evidence_app.trust.webhook_events import EvidenceEvent
from project.errors import Forbidden, InvalidInput, StaleAction
from project.roles import is_operator
from tasks_app.actions import job_enqueue, webhook_events_for_operators, webhook_events_for_task
from tasks_app.records import Task

log = logging.getLogger(__name__)

__all__ = [
    "CERTIFY_JOB",
    "DriftFigures",
    "Proposal",
    "threshold_approve",
    "threshold_certify_request",
    "threshold_drift_record",
    "threshold_propose",
    "threshold_shadow_start",
    "threshold_stop",
]

# An operator's stop of auto-accept is recorded with a reason of at least this length.
MIN_STOP_REASON_CHARS = 10
# The certification job's name (evidence_app.jobs registers it under this name; Celery
# beat sends it every AUTOACCEPT_RECOMPUTE_SECONDS).
CERTIFY_JOB = "evidence_app.certify_thresholds"


@dataclass(frozen=True)
class Proposal:
    """A certification as plain values (``evidence_app.autoaccept.Certification``)."""

    threshold: float | None
    target: float
    delta: float
    labelled: int
    automated: float
    risk: float | None
    upper: float | None
    guarantee: str
    curve: list[dict[str, Any]] = field(default_factory=list)

    def figures(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "target": self.target,
            "delta": self.delta,
            "labelled": self.labelled,
            "automated": self.automated,
            "risk": self.risk,
            "upper": self.upper,
            "guarantee": self.guarantee,
            "curve": self.curve,
        }


@transaction.atomic
def threshold_propose(*, key: JudgeKey, proposal: Proposal) -> AutoAcceptThreshold | None:
    """Record the judge's latest certification. A pending proposal with the same τ is
    brought up to date (its shadow goes on); one with another τ is retired and a new
    proposal written (a new τ needs its own shadow); nothing new when τ is the approved
    one. Returns the pending row, None when there is none."""
    judge = AutoAcceptThreshold.objects.select_for_update().for_judge(
        key.template_version, key.model_name
    )
    now = timezone.now()
    pending = judge.pending().first()
    approved = judge.approved().first()
    if pending is not None and pending.threshold == proposal.threshold:
        for name, value in proposal.figures().items():
            setattr(pending, name, value)
        pending.computed_at = now
        pending.save(update_fields=[*proposal.figures(), "computed_at"])
        return pending
    if pending is not None:
        judge.pending().update(state=ThresholdState.RETIRED, retired_at=now)
    # A stopped judge needs a new approval even of the same τ: propose it again.
    if approved is not None and approved.threshold == proposal.threshold and not approved.stopped:
        return None
    return AutoAcceptThreshold.objects.create(
        template_version=key.template_version,
        model_name=key.model_name,
        computed_at=now,
        **proposal.figures(),
    )


def _operator_only(user: Any) -> None:
    if not is_operator(user):
        raise Forbidden("Only operators try and approve auto-accept thresholds.")


@transaction.atomic
def threshold_certify_request(*, user: Any) -> str:
    """Queue the certification job now, as Celery beat does, through the outbox: every
    judge with labels is certified (``threshold_propose``) and the drift rule runs on each
    approved threshold. Raises Forbidden (not an operator). Returns the job id."""
    _operator_only(user)
    job_id = job_enqueue(CERTIFY_JOB, ())
    log.info("certification of every judge's threshold requested by %s", user.get_username())
    return job_id


@transaction.atomic
def threshold_shadow_start(*, threshold_id: int, user: Any) -> AutoAcceptThreshold:
    """Start the shadow of a proposed threshold: from now the Trust page counts what it
    would have auto-accepted. Raises Forbidden (not an operator), InvalidInput (nothing
    certified) and StaleAction (no longer a proposal)."""
    _operator_only(user)
    row = AutoAcceptThreshold.objects.select_for_update().get(pk=threshold_id)
    if row.threshold is None:
        raise InvalidInput("No threshold is certified for this judge: there is nothing to try.")
    # Conditional on the state: a second click (or a job that retired it meanwhile)
    # changes nothing.
    started = AutoAcceptThreshold.objects.filter(
        pk=threshold_id, state=ThresholdState.PROPOSED
    ).update(state=ThresholdState.SHADOW, shadow_started_at=timezone.now(), shadow_started_by=user)
    if not started:
        raise StaleAction(f"Threshold {threshold_id} is no longer a proposal.")
    row.refresh_from_db()
    return row


@transaction.atomic
def threshold_approve(*, threshold_id: int, user: Any, now: Any = None) -> AutoAcceptThreshold:
    """Approve a threshold that ran in shadow for AUTOACCEPT_SHADOW_HOURS: it becomes the
    judge's threshold, the previous one is retired. Raises Forbidden, InvalidInput (its
    shadow is too short) and StaleAction (not in shadow any more)."""
    _operator_only(user)
    now = now or timezone.now()
    row = AutoAcceptThreshold.objects.select_for_update().get(pk=threshold_id)
    if row.state != ThresholdState.SHADOW or row.shadow_started_at is None:
        raise StaleAction(f"Threshold {threshold_id} is not in shadow: start its shadow first.")
    ready = row.shadow_started_at + timedelta(hours=settings.AUTOACCEPT_SHADOW_HOURS)
    if now < ready:
        raise InvalidInput(
            f"The shadow runs until {ready:%Y-%m-%d %H:%M} UTC "
            f"(AUTOACCEPT_SHADOW_HOURS={settings.AUTOACCEPT_SHADOW_HOURS:g})."
        )
    previous = AutoAcceptThreshold.objects.approved().for_judge(
        row.template_version, row.model_name
    )
    previous.update(state=ThresholdState.RETIRED, retired_at=now)
    row.state = ThresholdState.APPROVED
    row.approved_at = now
    row.approved_by = user
    row.save(update_fields=["state", "approved_at", "approved_by"])
    log.info("auto-accept threshold %s approved: %s", row.pk, row)
    webhook_events_for_operators(
        event_type=EvidenceEvent.AUTO_ACCEPT_APPROVED, data={"judge": _approval_description(row)}
    )
    return row


def _threshold_fields(row: AutoAcceptThreshold) -> dict[str, Any]:
    """What every auto-accept event says of its threshold: which, whose judge, where."""
    return {
        "threshold_id": row.pk,
        "template_version": row.template_version,
        "model": row.model_name,
        "threshold": row.threshold,
        "target": row.target,
    }


def _approval_description(row: AutoAcceptThreshold) -> dict[str, Any]:
    return {
        **_threshold_fields(row),
        "labelled": row.labelled,
        "guarantee": row.guarantee,
        "approved_at": row.approved_at,
        "approved_by": row.approved_by.get_username() if row.approved_by else None,
        "url": "/api/v1/judges",
    }


@transaction.atomic
def threshold_stop(*, threshold_id: int, user: Any, reason: str) -> AutoAcceptThreshold:
    """An operator's switch: every accepted verdict of the approved threshold's judge goes
    to a person from now, recorded with who and why, until a new threshold is approved.
    Raises Forbidden (not an operator), InvalidInput (no reason of at least
    MIN_STOP_REASON_CHARS characters) and StaleAction (not the approved threshold, or
    already stopped)."""
    _operator_only(user)
    reason = (reason or "").strip()
    if len(reason) < MIN_STOP_REASON_CHARS:
        raise InvalidInput(
            f"Say why auto-accept stops (at least {MIN_STOP_REASON_CHARS} characters): "
            "the reason is recorded."
        )
    row = AutoAcceptThreshold.objects.select_for_update().get(pk=threshold_id)
    if row.state != ThresholdState.APPROVED:
        raise StaleAction(
            f"Threshold {threshold_id} is {row.get_state_display().lower()}, not the judge's "
            "approved threshold: only an approved threshold auto-accepts."
        )
    if row.stopped_at is not None:
        raise StaleAction(
            f"Auto-accept of this judge has been stopped since {row.stopped_at:%Y-%m-%d %H:%M} "
            "UTC: approve a new threshold to start it again."
        )
    row.stopped_at = timezone.now()
    row.stopped_by = user
    row.stop_reason = reason
    row.save(update_fields=["stopped_at", "stopped_by", "stop_reason"])
    log.warning(
        "auto-accept stopped for %s by %s: %s; every accepted verdict of this judge goes to "
        "a person",
        JudgeKey.of(row).label,
        user.get_username(),
        reason,
    )
    webhook_events_for_operators(
        event_type=EvidenceEvent.AUTO_ACCEPT_STOPPED,
        data={"judge": {**_stop_description(row), "stopped_by": user.get_username()}},
    )
    return row


@dataclass(frozen=True)
class DriftFigures:
    """The drift rule on an approved threshold's audits (``autoaccept.DriftStatus``),
    and the task of the audit at which it stopped (None while it has not)."""

    audits: int
    wrong: int
    statistic: float
    stopped_task_id: int | None


@transaction.atomic
def threshold_drift_record(*, threshold_id: int, drift: DriftFigures) -> AutoAcceptThreshold:
    """Store the drift figures of an approved threshold; when the rule fired, stop its
    auto-accept (once), log it and write the ``auto_accept.stopped`` event."""
    row = AutoAcceptThreshold.objects.select_for_update().get(pk=threshold_id)
    row.drift_audits, row.drift_wrong = drift.audits, drift.wrong
    row.drift_statistic = drift.statistic
    fields = ["drift_audits", "drift_wrong", "drift_statistic"]
    stopped_task = drift.stopped_task_id if row.stopped_at is None else None
    if stopped_task is not None:
        row.stopped_at = timezone.now()
        row.stop_reason = (
            f"The drift rule: {drift.wrong} of {drift.audits} audits of its auto-accepts since "
            "the threshold was set were wrong, more than a judge at the target would give."
        )
        fields += ["stopped_at", "stop_reason"]
    row.save(update_fields=fields)
    if stopped_task is not None:
        log.warning(
            "auto-accept stopped for %s: %d of %d audits since its threshold was set were "
            "wrong; every accepted verdict of this judge goes to a person",
            JudgeKey.of(row).label,
            drift.wrong,
            drift.audits,
        )
        task = Task.objects.filter(pk=stopped_task).first()
        if task is not None:
            webhook_events_for_task(
                task=task,
                event_type=EvidenceEvent.AUTO_ACCEPT_STOPPED,
                data={"audit": _stop_description(row)},
            )
    return row


def _stop_description(row: AutoAcceptThreshold) -> dict[str, Any]:
    return {
        **_threshold_fields(row),
        "audits": row.drift_audits,
        "wrong": row.drift_wrong,
        "stopped_at": row.stopped_at,
        "reason": row.stop_reason,
        "url": "/ops/trust",
    }
