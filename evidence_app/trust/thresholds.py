"""The certified auto-accept thresholds as the rest of the app reads them: the
labelled verdicts each judge is certified on, the approved threshold the routing
follows, and what a proposed threshold would have done in shadow. Database reads only:
the statistics (numpy and scipy) live in ``evidence_app.autoaccept`` and run in the
background job, so routing, pages and /metrics never load them.

A judge is a template version × model: the one that gives the accepted verdict. A
second judge a task asks for only adds caution (a disagreement goes to a person), so it
neither makes a judge of its own nor changes whose threshold applies. Its labelled
verdicts are the original verdicts it *accepted* with a score:

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

from django.conf import settings
from django.db.models import Q, QuerySet

from evidence_app.models import (
    Audit,
    AutoAcceptThreshold,
    ClaimLabel,
    ClaimStance,
    ValidationSnapshot,
    ValidationStatus,
)
from evidence_app.trust.agreement import HUMAN_DECISIONS
from tasks_app.records import Feedback, FeedbackAction

__all__ = [
    "UNCERTIFIED_AUTO_ACCEPT",
    "UNCERTIFIED_TO_A_PERSON",
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

# AUTOACCEPT_UNCERTIFIED: what a judge without an approved, unstopped threshold may do.
UNCERTIFIED_AUTO_ACCEPT = "auto-accept"
UNCERTIFIED_TO_A_PERSON = "certified-only"


@dataclass(frozen=True, order=True)
class JudgeKey:
    template_version: str
    model_name: str

    @classmethod
    def of(cls, row: AutoAcceptThreshold) -> JudgeKey:
        return cls(row.template_version, row.model_name)

    @property
    def label(self) -> str:
        return f"{self.template_version} on {self.model_name}"


@dataclass(frozen=True)
class Label:
    snapshot_id: int
    score: float
    wrong: bool
    weight: float
    source: str  # "audit" or "decision"


@dataclass(frozen=True)
class AutoAcceptGate:
    """What the routing lets one judge accept alone: an accepted verdict scoring at or
    above ``threshold`` goes to the requester, one below to a person; ``stopped``: the
    drift rule fired and every accepted verdict goes to a person. ``threshold`` None:
    the judge has no approved threshold and the deployment auto-accepts certified
    judges only (``AUTOACCEPT_UNCERTIFIED=certified-only``): every accept goes to a
    person."""

    threshold_id: int | None
    threshold: float | None
    stopped: bool

    @property
    def certified(self) -> bool:
        return self.threshold is not None


def judge_verdicts(key: JudgeKey | None = None) -> QuerySet[ValidationSnapshot]:
    """Original verdicts that accepted with a score; only ``key``'s when given."""
    verdicts = (
        ValidationSnapshot.objects.originals()
        .without_bodies()
        .filter(status=ValidationStatus.ACCEPTED, score__isnull=False)
    )
    if key is not None:
        verdicts = verdicts.filter(template_version=key.template_version, model_name=key.model_name)
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
    rows = list(
        judge_verdicts().values_list(
            "pk", "task_id", "created_at", "score", "template_version", "model_name"
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
    for pk, _task, _at, score, template_version, model_name in rows:
        key = JudgeKey(template_version, model_name)
        if score is None:  # judge_verdicts keeps scored verdicts only
            continue
        if pk in audits and audits[pk][1] > 0:
            correct, probability = audits[pk]
            labels[key].append(Label(pk, score, not correct, 1 / probability, "audit"))
        elif pk in decided or pk in refuted:
            wrong = decided.get(pk, False) or pk in refuted
            labels[key].append(Label(pk, score, wrong, 1.0, "decision"))
    return dict(labels)


def approved_gate(key: JudgeKey) -> AutoAcceptGate | None:
    """What the judge may accept alone: its approved threshold; without one, None when
    the deployment lets an uncertified judge keep its word (``AUTOACCEPT_UNCERTIFIED=
    auto-accept``: its accepted verdicts go to the requester, not certified), else a
    gate that sends every accept to a person."""
    row = (
        AutoAcceptThreshold.objects.approved()
        .for_judge(key.template_version, key.model_name)
        .filter(threshold__isnull=False)
        .only("pk", "threshold", "stopped_at")
        .first()
    )
    if row is not None and row.threshold is not None:
        return AutoAcceptGate(threshold_id=row.pk, threshold=row.threshold, stopped=row.stopped)
    if settings.AUTOACCEPT_UNCERTIFIED == UNCERTIFIED_TO_A_PERSON:
        return AutoAcceptGate(threshold_id=None, threshold=None, stopped=False)
    return None


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
