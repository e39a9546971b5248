"""The audit stream (issue 27): a random share of the verdicts that moved a task without
a person is drawn, when the verdict is stored, for a blind audit.

Every eligible verdict records its route and the probability it was drawn with, drawn
or not: the certified rates (``evidence_app.trust``) weigh each audit by it, so the
estimate over all automatic verdicts stays unbiased when the rates change."""

from __future__ import annotations

import random

from django.conf import settings

from evidence_app.models import Audit, ValidationSnapshot, ValidationStatus, VerdictRoute
from tasks_app.models import Task
from tasks_app.workflow.states import TaskStatus

__all__ = ["audit_draw", "audit_probability", "verdict_route"]

_draw = random.SystemRandom()


def verdict_route(status: str, to_status: str) -> str:
    """Where a verdict sent the task: accepted straight to the requester, rejected back
    for another attempt (or to failed with no usable answer), or to a person."""
    if status == ValidationStatus.ACCEPTED and to_status == TaskStatus.AWAITING_FEEDBACK:
        return VerdictRoute.AUTO_ACCEPTED
    if status == ValidationStatus.REJECTED and to_status in (
        TaskStatus.NEEDS_REVISION,
        TaskStatus.FAILED,
    ):
        return VerdictRoute.AUTO_REJECTED
    return VerdictRoute.TO_PERSON


def audit_probability(task: Task, route: str) -> float | None:
    """The share of this route's verdicts drawn for an audit: the task's own rate, else
    the setting; None for a verdict a person sees anyway."""
    if route == VerdictRoute.AUTO_ACCEPTED:
        rate = task.audit_rate if task.audit_rate is not None else settings.AUDIT_RATE
    elif route == VerdictRoute.AUTO_REJECTED:
        rate = (
            task.audit_reject_rate
            if task.audit_reject_rate is not None
            else settings.AUDIT_REJECT_RATE
        )
    else:
        return None
    return min(1.0, max(0.0, float(rate)))


def audit_draw(snapshot: ValidationSnapshot) -> Audit | None:
    """Draw ``snapshot`` (stored, with its route and probability) for an audit, in the
    caller's transaction: the audit exists exactly when the verdict does."""
    probability = snapshot.audit_probability
    if not probability or _draw.random() >= probability:
        return None
    return Audit.objects.create(
        snapshot=snapshot,
        task_id=snapshot.task_id,
        attempt_index=snapshot.attempt_index,
        route=snapshot.route,
        probability=probability,
        template_version=snapshot.template_version,
        model_name=snapshot.model_name,
    )
