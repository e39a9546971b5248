"""What the audit pages read (selectors): the open audits, oldest first, and one audit
with the attempt it audits (request, rules, answer, evidence, the claims as the validator
split them), without anything that says what the validator decided until it is judged."""

from __future__ import annotations

from typing import Any

from django.db.models import F, QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404

from evidence_app.models import Audit, AuditState
from evidence_app.trust.blinding import audits_open_to
from evidence_app.trust.claim_labels import snapshot_claims
from evidence_app.validation.selectors import evidence_labels_for_task
from tasks_app.records import Run, RunKind, Task, ToolEvidence

# The blind page lists at most this many tool results of the audited attempt (without
# their content, which loads on click).
AUDIT_EVIDENCE_ITEMS = 1000


def audits(user: Any) -> QuerySet[Audit]:
    """The open audits ``user`` may judge (none of their own work), oldest first: ids,
    attempt and age only, nothing that names the task (blind)."""
    return (
        audits_open_to(user)
        .only("id", "attempt_index", "state", "created_at")
        .order_by("created_at", "id")
    )


# The audits a person judged, newest first, listed under the open ones with their task.
JUDGED_LISTED = 20


def judged_by(user: Any) -> list[Audit]:
    """The last audits ``user`` judged, newest first, with their task's title: judged,
    they hide nothing (the verdict is revealed to their judge too)."""
    return list(
        Audit.objects.filter(reviewer=user, state=AuditState.DONE)
        .select_related("task")
        .only("id", "attempt_index", "correct", "decided_at", "task__id", "task__title")
        .order_by("-decided_at", "-id")[:JUDGED_LISTED]
    )


def open_audit_count(user: Any) -> int:
    return audits_open_to(user).count()


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


AUDIT_TEXT_SECTIONS = {"request": "request", "rules": "rules"}


def audited_text(found: Audit, section: str) -> str:
    """The audited task's request or rules in full (404 for another section)."""
    field = AUDIT_TEXT_SECTIONS.get(section)
    if field is None:
        raise Http404("No such section")
    return str(Task.objects.filter(pk=found.task_id).values_list(field, flat=True).get())


def audited_evidence_item(found: Audit, evidence_id: int) -> ToolEvidence:
    """One tool result of the audited attempt, with its content (404 for any other)."""
    return get_object_or_404(
        ToolEvidence, pk=evidence_id, task_id=found.task_id, attempt_index=found.attempt_index
    )


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


def audit_material(found: Audit) -> dict[str, Any]:
    """What the audit page shows before the judgement, for the API: the request, the
    rules, the answer and the audited attempt's tool results in full, each numbered by
    its place in the audit (``item``, from 1): never its own id, which would lead back to
    the task. The claims are served beside it (``audited_claims``)."""
    task = Task.objects.filter(pk=found.task_id).values("request", "rules").get()
    items = list(
        ToolEvidence.objects.filter(task_id=found.task_id, attempt_index=found.attempt_index)
        .order_by("run_id", "sequence")
        .values("tool_name", "title", "url", "arguments", "is_error", "content")[
            : AUDIT_EVIDENCE_ITEMS + 1
        ]
    )
    return {
        "request": task["request"],
        "rules": task["rules"],
        "answer": audited_answer(found),
        "evidence": [
            {"item": number, **item}
            for number, item in enumerate(items[:AUDIT_EVIDENCE_ITEMS], start=1)
        ],
        "evidence_capped": len(items) > AUDIT_EVIDENCE_ITEMS,
    }
