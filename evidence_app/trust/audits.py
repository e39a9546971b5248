"""The audit stream: a random share of the verdicts that moved a task without
a person is drawn, when the verdict is stored, for a blind audit.

Every eligible verdict records its route and the probability it was drawn with, drawn
or not: the certified rates (``evidence_app.trust.rates``) weigh each audit by it, so the
estimate over all automatic verdicts stays unbiased when the rates change."""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from evidence_app.models import (
    Audit,
    AuditState,
    AuditView,
    TaskAuditSettings,
    ValidationSnapshot,
    VerdictRoute,
)
from evidence_app.trust.blinding import audit_exposure, audit_refusal
from evidence_app.trust.claim_labels import claim_labels_record, corrected_citations_check
from evidence_app.trust.webhook_events import EvidenceEvent
from project.errors import Forbidden, InvalidInput, StaleAction
from project.roles import is_operator, is_reviewer
from tasks_app.actions import webhook_events_for_task

__all__ = [
    "AUDIT_COMMENT_MAX",
    "audit_draw",
    "audit_judge",
    "audit_mark_viewed",
    "audit_probability",
    "audit_rates_checked",
    "audit_reveal",
]

AUDIT_COMMENT_MAX = 20_000

_draw = random.SystemRandom()


def audit_probability(own: TaskAuditSettings, route: str) -> float | None:
    """The share of this route's verdicts drawn for an audit: the task's own rate
    (``own``: its settings, ``task_settings.settings_of``), else the setting; None for a
    verdict a person sees anyway."""
    if route == VerdictRoute.AUTO_ACCEPTED:
        rate = own.audit_rate if own.audit_rate is not None else settings.AUDIT_RATE
    elif route == VerdictRoute.AUTO_REJECTED:
        rate = (
            own.audit_reject_rate
            if own.audit_reject_rate is not None
            else settings.AUDIT_REJECT_RATE
        )
    else:
        return None
    return min(1.0, max(0.0, float(rate)))


def audit_rates_checked(owner: Any, fields: Mapping[str, Any]) -> dict[str, Any]:
    """A new task's audit rates (``audit_rate``, ``audit_reject_rate``; None: the
    settings) checked against the floor (``AUDIT_RATE``, ``AUDIT_REJECT_RATE``): the
    values recording an operator's exception (who, when, why), {} when there is none.
    Raises InvalidInput naming the field: out of 0..1, below the floor for anyone but an
    operator, or an operator's exception without ``audit_rate_reason``. Part of the check
    of ``task_create`` that stores the task's ``TaskAuditSettings``
    (``task_settings.task_settings_checked``)."""
    below = []
    for name, rate, floor in (
        ("audit_rate", fields.get("audit_rate"), settings.AUDIT_RATE),
        ("audit_reject_rate", fields.get("audit_reject_rate"), settings.AUDIT_REJECT_RATE),
    ):
        if rate is None:
            continue
        if not 0 <= rate <= 1:
            raise InvalidInput(f"{name} must be between 0 and 1")
        if rate < floor:
            below.append((name, rate, floor))
    if not below:
        return {}
    name, rate, floor = below[0]
    if not is_operator(owner):
        raise InvalidInput(
            f"{name}: {rate:g} is below this deployment's floor of {floor:g}; you may raise a "
            "task's audit rate, not lower it (only an operator may, saying why)"
        )
    reason = (fields.get("audit_rate_reason") or "").strip()
    if not reason:
        raise InvalidInput(
            f"audit_rate_reason: say why {name} is below the floor of {floor:g} (it is recorded)"
        )
    return {
        "audit_rate_set_by": owner,
        "audit_rate_set_at": timezone.now(),
        "audit_rate_reason": reason[:2000],
    }


def audit_draw(snapshot: ValidationSnapshot) -> Audit | None:
    """Draw ``snapshot`` (stored, with its route and probability) for an audit, in the
    caller's transaction: the audit exists exactly when the verdict does."""
    probability = snapshot.audit_probability
    if not probability or _draw.random() >= probability:
        return None
    audit = Audit.objects.create(
        snapshot=snapshot,
        task_id=snapshot.task_id,
        attempt_index=snapshot.attempt_index,
        route=snapshot.route,
        probability=probability,
        template_version=snapshot.template_version,
        model_name=snapshot.model_name,
    )
    # Blind: the event says an audit is waiting, not which verdict it audits (no
    # validation id: /validations/{id} would tell).
    webhook_events_for_task(
        task=snapshot.task,
        event_type=EvidenceEvent.AUDIT_OPENED,
        data={
            "audit": {
                "id": audit.pk,
                "state": audit.state,
                "attempt_index": audit.attempt_index,
                "created_at": audit.created_at,
                "url": f"/api/v1/audits/{audit.pk}",
            }
        },
    )
    return audit


def audit_mark_viewed(*, audit_id: int, user: Any) -> None:
    """Record when the audit was first opened, and when ``user`` first opened it (their
    time per item counts from their own first view); later views keep both."""
    now = timezone.now()
    Audit.objects.filter(pk=audit_id, first_viewed_at__isnull=True).update(first_viewed_at=now)
    AuditView.objects.bulk_create(
        [AuditView(audit_id=audit_id, user=user, first_viewed_at=now)], ignore_conflicts=True
    )


def _judgement_input(correct: Any, comment: str) -> str:
    if not isinstance(correct, bool):
        raise InvalidInput("correct: say whether the answer is correct (true or false)")
    comment = (comment or "").strip()
    if not correct and not comment:
        raise InvalidInput("comment: say what is wrong with the answer")
    if len(comment) > AUDIT_COMMENT_MAX:
        raise InvalidInput(f"comment: at most {AUDIT_COMMENT_MAX} characters")
    return comment


@transaction.atomic
def audit_judge(
    audit_id: int,
    *,
    user: Any,
    correct: bool,
    comment: str = "",
    claim_labels: Iterable[Mapping[str, Any]] = (),
) -> Audit:
    """A person's blind judgement of an audit: correct or not (a comment is required when
    not), and optional per-claim verdicts, stored together or not at all. Raises
    ``Audit.DoesNotExist``, Forbidden (403: not a reviewer, or their own work: the audit
    stays open), InvalidInput (422: a bad call, comment or claim label) and StaleAction
    (409: already judged). A judge who had read the task's verdict or status while the
    audit was open gives a judgement that is not blind: stored, left out of the
    certified figures."""
    if not is_reviewer(user):
        raise Forbidden("Only reviewers judge audits.")
    comment = _judgement_input(correct, comment)
    audit = Audit.objects.select_related("snapshot", "task").get(pk=audit_id)
    refusal = audit_refusal(audit, user)
    if refusal:
        raise Forbidden(refusal)
    labels = list(claim_labels)
    corrected_citations_check(labels, task_id=audit.task_id)
    now = timezone.now()
    own_view = (
        AuditView.objects.filter(audit_id=audit_id, user=user)
        .values_list("first_viewed_at", flat=True)
        .first()
    )
    blind = audit_exposure(audit, user) is None
    # Conditional update on the state: of two people judging the same audit at once (or a
    # second submit of the same form), exactly one moves it out of open; the other
    # finds nothing to update and is refused with nothing written.
    claimed = Audit.objects.filter(pk=audit_id, state=AuditState.OPEN).update(
        state=AuditState.DONE,
        reviewer=user,
        correct=correct,
        comment=comment,
        decided_at=now,
        blind=blind,
        # Null when they judged without opening the audit: "no first view", not 0 s.
        judge_first_viewed_at=own_view,
    )
    if not claimed:
        raise StaleAction(f"Audit {audit_id} is already judged.")
    audit.refresh_from_db()
    # A bad label raises here and the whole transaction, the judgement too, rolls back.
    claim_labels_record(snapshot=audit.snapshot, labels=labels, author=user, audit=audit)
    webhook_events_for_task(
        task=audit.task, event_type=EvidenceEvent.AUDIT_JUDGED, data={"audit": audit_reveal(audit)}
    )
    return audit


def audit_reveal(audit: Audit) -> dict[str, Any]:
    """What a judged audit says: the person's call beside the validator's verdict."""
    snapshot = audit.snapshot
    return {
        "id": audit.pk,
        "state": audit.state,
        "attempt_index": audit.attempt_index,
        "validation_id": snapshot.pk,
        "correct": audit.correct,
        "comment": audit.comment,
        "verdict": snapshot.status,
        "route": audit.route,
        "false_verdict": audit.false_verdict,
        "blind": audit.blind,
        "reviewer": audit.reviewer.get_username() if audit.reviewer else None,
        "decided_at": audit.decided_at,
        "url": f"/api/v1/audits/{audit.pk}",
    }
