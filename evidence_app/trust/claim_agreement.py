"""Per-claim agreement between the validator and people.

A person's claim label (``ClaimLabel``: supported, unsupported or contradicted) is
compared with the validator's verdict on that claim in the same validation, grouped by
that validation's template version and model. Only labels that count are read: those
of an applied decision (never a pending, undone or void one) and those of an audit
judged blind (one judged after its judge read the verdict is counted nowhere, as in the
certified figures).

- ``confusion``: validator verdict → person's label → count (3×3).
- ``agreement_rate`` and ``kappa``: over the three classes.
- ``binary_agreement_rate`` and ``binary_kappa``: *supported* versus *not supported*
  (unsupported or contradicted), the call that decides whether an answer stands.

Rates and kappas are None when nothing was compared; a kappa is None when chance
agreement is 1 (everyone always said the same thing).
"""

from __future__ import annotations

from collections import defaultdict

from django.db.models import Q, QuerySet
from pydantic import BaseModel, Field

from evidence_app.models import AuditState, ClaimLabel, ClaimStance
from evidence_app.trust import stats
from tasks_app.records import DecisionState

__all__ = ["ClaimAgreementGroup", "claim_agreement_stats", "counted_claim_labels"]

STANCES: tuple[str, ...] = tuple(ClaimStance.values)


class ClaimAgreementGroup(BaseModel):
    template_version: str
    model_name: str
    count: int
    agreement_rate: float | None = None
    kappa: float | None = None
    binary_agreement_rate: float | None = None
    binary_kappa: float | None = None
    confusion: dict[str, dict[str, int]] = Field(default_factory=dict)


def counted_claim_labels() -> QuerySet[ClaimLabel]:
    """Labels that count: from an applied decision or an audit judged blind."""
    return ClaimLabel.objects.filter(
        Q(feedback__state=DecisionState.APPLIED)
        | Q(audit__state=AuditState.DONE, audit__blind=True)
    )


def claim_agreement_stats() -> list[ClaimAgreementGroup]:
    """One group per (template version, model) of the labelled validations, largest first.
    A validator verdict outside the three stances (an old or malformed result) is left
    out: it made no comparable call."""
    rows = counted_claim_labels().values_list(
        "snapshot__template_version", "snapshot__model_name", "judge_verdict", "label"
    )
    grouped: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for template_version, model_name, judge_verdict, label in rows:
        if judge_verdict in STANCES:
            grouped[(template_version, model_name)].append((judge_verdict, label))
    groups = []
    for (template_version, model_name), pairs in grouped.items():
        confusion = {judge: dict.fromkeys(STANCES, 0) for judge in STANCES}
        for judge, label in pairs:
            confusion[judge][label] += 1
        binary = [(a == ClaimStance.SUPPORTED, b == ClaimStance.SUPPORTED) for a, b in pairs]
        groups.append(
            ClaimAgreementGroup(
                template_version=template_version,
                model_name=model_name,
                count=len(pairs),
                agreement_rate=stats.agreement_rate(list(pairs)),
                kappa=stats.cohen_kappa(pairs),
                binary_agreement_rate=stats.agreement_rate(list(binary)),
                binary_kappa=stats.cohen_kappa(binary),
                confusion=confusion,
            )
        )
    groups.sort(key=lambda g: (-g.count, g.template_version, g.model_name))
    return groups
