"""What the audit pages read (selectors): the open audits, oldest first, and one audit
with the attempt it audits (request, rules, answer, evidence, the claims as the validator
split them), without anything that says what the validator decided until it is judged."""

from __future__ import annotations

from typing import Any

from django.db.models import F, QuerySet
from django.shortcuts import get_object_or_404

from evidence_app.models import Audit, AuditState
from evidence_app.trust.claim_labels import snapshot_claims
from evidence_app.validation.selectors import evidence_labels_for_task
from tasks_app.records import Run, RunKind, ToolEvidence

# The blind page lists at most this many tool results of the audited attempt (without
# their content, which loads on click).
AUDIT_EVIDENCE_ITEMS = 1000


def audits(state: str = AuditState.OPEN) -> QuerySet[Audit]:
    """Audits in ``state``, oldest first, with their task's title (no big columns)."""
    return (
        Audit.objects.filter(state=state)
        .select_related("task", "reviewer")
        .only(
            "id",
            "task_id",
            "task__title",
            "attempt_index",
            "state",
            "created_at",
            "decided_at",
            "reviewer__username",
        )
        .order_by("created_at", "id")
    )


def open_audit_count() -> int:
    return Audit.objects.open().count()


def audit(audit_id: int) -> Audit:
    """One audit with its verdict and task (404 when there is none)."""
    return get_object_or_404(
        Audit.objects.select_related("snapshot", "task", "reviewer"), pk=audit_id
    )


def audited_answer(found: Audit) -> str:
    """The answer of the audited attempt: its final run's output (the main run, or the
    synthesis of a team), else the task's answer when that attempt is the latest."""
    outputs = (
        Run.objects.filter(
            task_id=found.task_id,
            attempt_index=found.attempt_index,
            kind__in=[RunKind.MAIN, RunKind.SYNTHESIS],
        )
        .exclude(output_text="")
        .order_by("-graph_index", "-id")
        .values_list("output_text", flat=True)
    )
    text = outputs.first()
    if text:
        return text
    return found.task.final_answer if found.task.attempt_count == found.attempt_index else ""


def audited_evidence(found: Audit) -> dict[str, Any]:
    """The audited attempt's tool results without their content, and their labels."""
    items = list(
        ToolEvidence.objects.filter(task_id=found.task_id, attempt_index=found.attempt_index)
        .without_content()
        .annotate(size=F("content_chars"))
        .order_by("run_id", "sequence")[: AUDIT_EVIDENCE_ITEMS + 1]
    )
    return {
        "evidence_head": items[:AUDIT_EVIDENCE_ITEMS],
        "evidence_capped": len(items) > AUDIT_EVIDENCE_ITEMS,
        "evidence_labels": evidence_labels_for_task(found.task_id),
    }


def audited_claims(found: Audit) -> list[dict[str, Any]]:
    """The answer's claims as the validator split them, text only (index = position);
    after the judgement, with the validator's verdict and the person's label."""
    labels = {}
    if found.state == AuditState.DONE:
        labels = {c.claim_index: c.label for c in found.claim_labels.all()}
    return [
        {
            "index": i,
            "text": str(c.get("text", "")),
            "verdict": str(c.get("verdict", "")) if found.state == AuditState.DONE else "",
            "label": labels.get(i, ""),
        }
        for i, c in enumerate(snapshot_claims(found.snapshot))
    ]
