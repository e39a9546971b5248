"""Validator–human agreement.

Every decision a person made after a validation counts once: ``satisfied`` (closed),
``revise`` or ``abandon`` (sent back). It is compared with the validator's last
original verdict on that task before the decision, and grouped by that verdict's
template version and model.

- ``confusion``: validator status → human decision → count (every status, including
  ``validator_error``).
- ``agreement_rate`` and Cohen's ``kappa`` treat it as a binary call: the validator
  says *accept* (``accepted``) or *not* (``rejected`` / ``insufficient_evidence``); the
  person says *accept* (``satisfied``) or *not* (``revise`` / ``abandon``).
  ``validator_error`` made no call, so it is left out of rate and kappa (it is in
  ``count`` and ``confusion``). Both are None when nothing is left to compare; kappa is
  None when chance agreement is 1 (everyone always said the same thing).
"""

from __future__ import annotations

from collections import defaultdict

from pydantic import BaseModel, Field

from evidence_app.models import ValidationSnapshot, ValidationStatus
from evidence_app.trust import stats
from tasks_app.records import Feedback, FeedbackAction

HUMAN_DECISIONS = (FeedbackAction.SATISFIED, FeedbackAction.REVISE, FeedbackAction.ABANDON)


class AgreementGroup(BaseModel):
    template_version: str
    model_name: str
    count: int
    compared: int = 0
    agreement_rate: float | None = None
    kappa: float | None = None
    confusion: dict[str, dict[str, int]] = Field(default_factory=dict)


def cohen_kappa(pairs: list[tuple[bool, bool]]) -> float | None:
    """Cohen's kappa of two binary raters; None if undefined."""
    return stats.cohen_kappa(pairs)


def agreement_stats() -> list[AgreementGroup]:
    """One group per (template version, model), largest first."""
    decisions = list(
        Feedback.objects.in_effect()
        .filter(action__in=HUMAN_DECISIONS)
        .order_by("task_id", "created_at", "id")
        .values("task_id", "action", "created_at")
    )
    task_ids = {d["task_id"] for d in decisions}
    snapshots_by_task: dict[int, list[ValidationSnapshot]] = defaultdict(list)
    for snapshot in (
        ValidationSnapshot.objects.originals()
        .filter(task_id__in=task_ids)
        .order_by("created_at", "id")
        .only("task_id", "status", "template_version", "model_name", "created_at")
    ):
        snapshots_by_task[snapshot.task_id].append(snapshot)

    grouped: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for decision in decisions:
        before = [
            s
            for s in snapshots_by_task[decision["task_id"]]
            if s.created_at <= decision["created_at"]
        ]
        if not before:
            continue  # no validation preceded this decision
        last = before[-1]
        grouped[(last.template_version, last.model_name)].append((last.status, decision["action"]))

    groups = []
    for (template_version, model_name), pairs in grouped.items():
        confusion: dict[str, dict[str, int]] = {}
        for status, action in pairs:
            row = confusion.setdefault(status, {a.value: 0 for a in HUMAN_DECISIONS})
            row[action] += 1
        binary = [
            (status == ValidationStatus.ACCEPTED, action == FeedbackAction.SATISFIED)
            for status, action in pairs
            if status != ValidationStatus.VALIDATOR_ERROR
        ]
        groups.append(
            AgreementGroup(
                template_version=template_version,
                model_name=model_name,
                count=len(pairs),
                compared=len(binary),
                agreement_rate=stats.agreement_rate(binary),
                kappa=cohen_kappa(binary),
                confusion=confusion,
            )
        )
    groups.sort(key=lambda g: (-g.count, g.template_version, g.model_name))
    return groups
