"""The certified auto-accept thresholds as the rest of the app reads them: the
labelled verdicts each judge is certified on, the approved threshold the routing
follows, and what a proposed threshold would have done in shadow. Database reads only:
the statistics (numpy and scipy) live in ``evidence_app.autoaccept`` and run in the
background job, so routing, pages and /metrics never load them.

A judge is a template version × model × second-judge model ("" without one). Its
labelled verdicts are the original verdicts it *accepted* with a score:

- judged audits (the person's call; weight 1 / the probability the verdict was drawn
  with, so a stratum of audits stands for every auto-accept it was drawn from);
- otherwise a person's decision on the verdict they saw (the first in-effect satisfied,
  revise or abandon after it, before any later verdict on the task): satisfied is right,
  revise or abandon wrong; a claim a person labelled unsupported or contradicted makes
  it wrong whatever the decision. Weight 1.

A judgement given after its author read the verdict (an audit that is not blind) labels
nothing, nor do the claim labels given with it; the drift sequence and the shadow figures
count blind judgements only too."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from django.db.models import OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from evidence_app.models import (
    Audit,
    AutoAcceptThreshold,
    ClaimLabel,
    ClaimStance,
    SnapshotKind,
    ValidationSnapshot,
    ValidationStatus,
)
from evidence_app.trust.agreement import HUMAN_DECISIONS
from tasks_app.records import Feedback, FeedbackAction

__all__ = [
    "AutoAcceptGate",
    "JudgeKey",
    "Label",
    "ShadowReport",
    "approved_gate",
    "judge_audits_since",
    "judge_verdicts",
    "labelled_verdicts",
    "shadow_report",
]


@dataclass(frozen=True, order=True)
class JudgeKey:
    template_version: str
    model_name: str
    second_model: str = ""

    @classmethod
    def of(cls, row: AutoAcceptThreshold) -> JudgeKey:
        return cls(row.template_version, row.model_name, row.second_model)

    @property
    def label(self) -> str:
        pair = f" + second judge {self.second_model}" if self.second_model else ""
        return f"{self.template_version} on {self.model_name}{pair}"


@dataclass(frozen=True)
class Label:
    snapshot_id: int
    score: float
    wrong: bool
    weight: float
    source: str  # "audit" or "decision"


@dataclass(frozen=True)
class AutoAcceptGate:
    """The approved threshold of one judge, as the routing reads it: an accepted verdict
    scoring at or above ``threshold`` goes to the requester, one below to a person;
    ``stopped``: the drift rule fired, or an operator stopped it, and every accepted
    verdict goes to a person."""

    threshold_id: int
    threshold: float
    stopped: bool
    # Stopped by an operator's switch rather than by the drift rule.
    stopped_by_operator: bool = False


def _second_model() -> Coalesce:
    second = ValidationSnapshot.objects.filter(
        companion_of=OuterRef("pk"), kind=SnapshotKind.SECOND
    ).values("model_name")[:1]
    return Coalesce(Subquery(second), Value(""))


def judge_verdicts(key: JudgeKey | None = None) -> QuerySet[ValidationSnapshot]:
    """Original verdicts that accepted with a score, annotated ``second`` (the second
    judge's model, "" for none); only ``key``'s when given."""
    verdicts = (
        ValidationSnapshot.objects.originals()
        .without_bodies()
        .filter(status=ValidationStatus.ACCEPTED, score__isnull=False)
        .annotate(second=_second_model())
    )
    if key is not None:
        verdicts = verdicts.filter(
            template_version=key.template_version,
            model_name=key.model_name,
            second=key.second_model,
        )
    return verdicts


def _decision_labels(snapshots: dict[int, tuple[int, datetime]]) -> dict[int, bool]:
    """snapshot id -> wrong, from the first decision a person made on each verdict."""
    by_task: dict[int, list[tuple[datetime, int]]] = defaultdict(list)
    for pk, task_id, created_at in (
        ValidationSnapshot.objects.originals()
        .filter(task_id__in={task for task, _ in snapshots.values()})
        .order_by("created_at", "id")
        .values_list("pk", "task_id", "created_at")
    ):
        by_task[task_id].append((created_at, pk))
    wrong: dict[int, bool] = {}
    decisions = (
        Feedback.objects.in_effect()
        .filter(action__in=HUMAN_DECISIONS, task_id__in=by_task)
        .order_by("created_at", "id")
        .values_list("task_id", "action", "created_at")
    )
    for task_id, action, decided_at in decisions:
        before = [pk for created_at, pk in by_task[task_id] if created_at <= decided_at]
        if before and before[-1] in snapshots and before[-1] not in wrong:
            wrong[before[-1]] = action != FeedbackAction.SATISFIED
    return wrong


def labelled_verdicts() -> dict[JudgeKey, list[Label]]:
    """Every judge's labelled accepted verdicts (see the module docstring)."""
    # ``second`` is judge_verdicts' annotation (the stubs do not follow it through).
    rows = list(
        judge_verdicts().values_list(  # type: ignore[misc]
            "pk", "task_id", "created_at", "score", "template_version", "model_name", "second"
        )
    )
    snapshots = {pk: (task_id, created_at) for pk, task_id, created_at, *_ in rows}
    audits = {
        snapshot_id: (correct, probability)
        for snapshot_id, correct, probability in Audit.objects.done()
        .filter(correct__isnull=False, blind=True, snapshot_id__in=snapshots)
        .values_list("snapshot_id", "correct", "probability")
    }
    # A claim label given with a judgement that was not blind is part of that judgement:
    # left out like it (a label given while deciding the task is a decision's).
    refuted = set(
        ClaimLabel.objects.filter(
            Q(audit__isnull=True) | Q(audit__blind=True),
            snapshot_id__in=snapshots,
            label__in=(ClaimStance.UNSUPPORTED, ClaimStance.CONTRADICTED),
        ).values_list("snapshot_id", flat=True)
    )
    decided = _decision_labels(snapshots)
    labels: dict[JudgeKey, list[Label]] = defaultdict(list)
    for pk, _task, _at, score, template_version, model_name, second in rows:
        key = JudgeKey(template_version, model_name, second or "")
        if pk in audits and audits[pk][1] > 0:
            correct, probability = audits[pk]
            labels[key].append(Label(pk, score, not correct, 1 / probability, "audit"))
        elif pk in decided or pk in refuted:
            wrong = decided.get(pk, False) or pk in refuted
            labels[key].append(Label(pk, score, wrong, 1.0, "decision"))
    return dict(labels)


def approved_gate(key: JudgeKey) -> AutoAcceptGate | None:
    """The judge's approved threshold, None when it has none (its accepted verdicts then
    go to the requester as the judge says: they are not certified)."""
    row = (
        AutoAcceptThreshold.objects.approved()
        .for_judge(key.template_version, key.model_name, key.second_model)
        .filter(threshold__isnull=False)
        .only("pk", "threshold", "stopped_at", "stopped_by")
        .first()
    )
    if row is None or row.threshold is None:
        return None
    return AutoAcceptGate(
        threshold_id=row.pk,
        threshold=row.threshold,
        stopped=row.stopped,
        stopped_by_operator=row.stopped and row.stopped_by_id is not None,
    )


def judge_audits_since(key: JudgeKey, since: datetime) -> list[tuple[bool, int]]:
    """The judged audits of the judge's auto-accepts made since ``since``, in the order
    they were judged: (wrong, task id)."""
    verdicts = judge_verdicts(key).filter(created_at__gte=since).values("pk")
    return [
        (not correct, task_id)
        for correct, task_id in Audit.objects.done()
        .filter(correct__isnull=False, blind=True, snapshot_id__in=verdicts, route="auto_accepted")
        .order_by("decided_at", "id")
        .values_list("correct", "task_id")
    ]


@dataclass(frozen=True)
class ShadowReport:
    """What a proposed threshold would have done to the judge's accepted verdicts since
    its shadow started: auto-accepted ``would_accept`` (of them ``audited`` were judged on
    an audit and ``audited_wrong`` found wrong) and sent ``would_send`` to a person."""

    since: datetime
    would_accept: int
    would_send: int
    audited: int
    audited_wrong: int


def shadow_report(row: AutoAcceptThreshold) -> ShadowReport | None:
    """The shadow figures of a proposal in shadow (None for any other, or without τ)."""
    if row.shadow_started_at is None or row.threshold is None:
        return None
    verdicts = judge_verdicts(JudgeKey.of(row)).filter(created_at__gte=row.shadow_started_at)
    above = verdicts.filter(score__gte=row.threshold)
    audits = Audit.objects.done().filter(
        correct__isnull=False, blind=True, snapshot_id__in=above.values("pk")
    )
    return ShadowReport(
        since=row.shadow_started_at,
        would_accept=above.count(),
        would_send=verdicts.filter(score__lt=row.threshold).count(),
        audited=audits.count(),
        audited_wrong=audits.filter(correct=False).count(),
    )
