"""Who may judge an audit, and whether their judgement is blind.

No one audits their own work: the task's requester (whose token is the only one that
submits an external task's attempts), and anyone who decided the task, are refused and
never offered its audits. A judgement is blind when its author had not, while the audit
was open, read anything of the task that tells what the validator decided or where the
task went (the task's page and fragments, a list row with its status, the API, its
events): every such read is recorded (``AuditExposure``) through the ``task_seen``
signal, and a judgement after one is stored and shown but left out of the certified
figures and counted apart."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import QuerySet

from evidence_app.models import Audit, AuditExposure
from project.roles import is_reviewer
from tasks_app.records import Feedback, FeedbackAction

__all__ = [
    "audit_exposure",
    "audit_exposures_record",
    "audit_refusal",
    "audits_open_to",
    "exposure_receiver",
    "open_audit_task_ids",
    "withheld_for_audit",
]


def _decided_task_ids(user: Any) -> QuerySet[Feedback, Any]:
    """Tasks ``user`` decided (any decision but a note, undone ones too: they saw it)."""
    return (
        Feedback.objects.filter(author=user)
        .exclude(action=FeedbackAction.NOTE)
        .values("task_id")
        .order_by()
    )


def audit_refusal(audit: Audit, user: Any) -> str | None:
    """Why ``user`` may not judge ``audit`` (their own work), or None when they may."""
    if audit.task.owner_id == user.pk:
        return (
            "You requested this task (its attempts are submitted with your token): "
            "no one audits their own work. The audit stays open for another reviewer."
        )
    if _decided_task_ids(user).filter(task_id=audit.task_id).exists():
        return (
            "You decided this task: no one audits their own work. The audit stays open "
            "for another reviewer."
        )
    return None


def audits_open_to(user: Any) -> QuerySet[Audit]:
    """The open audits ``user`` may judge: none of their own tasks nor tasks they decided."""
    return (
        Audit.objects.open().exclude(task__owner=user).exclude(task_id__in=_decided_task_ids(user))
    )


def open_audit_task_ids(user: Any, task_ids: Iterable[int]) -> set[int]:
    """Which of ``task_ids`` have an open audit ``user`` could judge: the tasks whose
    status and verdict a list withholds from them."""
    ids = list(task_ids)
    if not ids or not is_reviewer(user):
        return set()
    return set(audits_open_to(user).filter(task_id__in=ids).values_list("task_id", flat=True))


def withheld_for_audit(user: Any, task_id: int) -> bool:
    """Whether the task's page is withheld from ``user``: it has an open audit they
    could judge and have not yet seen the verdict of."""
    if not is_reviewer(user):
        return False
    return audits_open_to(user).filter(task_id=task_id).exclude(exposures__user=user).exists()


def audit_exposures_record(
    *, user: Any, task_ids: Iterable[int] | QuerySet[Any], channel: str
) -> int:
    """Record that ``user`` read the verdict, route or status of ``task_ids`` (ids, or a
    queryset of task ids joined as it is) via ``channel`` while their audits are open;
    the first read per (audit, person) is kept. Only reviewers judge audits, so only
    their reads are recorded. Returns how many audits this read newly exposed."""
    if not is_reviewer(user):
        return 0
    ids = task_ids if isinstance(task_ids, QuerySet) else list(task_ids)
    if not isinstance(ids, QuerySet) and not ids:
        return 0
    audits = list(Audit.objects.open().filter(task_id__in=ids).values_list("pk", flat=True))
    if not audits:
        return 0
    known = set(
        AuditExposure.objects.filter(audit_id__in=audits, user=user).values_list(
            "audit_id", flat=True
        )
    )
    new = [
        AuditExposure(audit_id=pk, user=user, channel=channel[:200])
        for pk in audits
        if pk not in known
    ]
    # A concurrent read by the same person may insert the same row: the first one stays.
    AuditExposure.objects.bulk_create(new, ignore_conflicts=True)
    return len(new)


def audit_exposure(audit: Audit, user: Any) -> AuditExposure | None:
    """The read that made ``user``'s judgement of ``audit`` not blind, if any."""
    return AuditExposure.objects.filter(audit=audit, user=user).order_by("at", "id").first()


def exposure_receiver(*, user: Any, task_ids: Iterable[int], channel: str, **_: Any) -> None:
    """The ``task_seen`` receiver (connected in ``evidence_app.registrations``)."""
    audit_exposures_record(user=user, task_ids=task_ids, channel=channel)
