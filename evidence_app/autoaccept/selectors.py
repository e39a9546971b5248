"""The certified auto-accept thresholds as the rest of the app reads them: the
labelled verdicts each judge is certified on and what a proposed threshold would have
done in shadow (the approved threshold the routing follows: ``gate``). Database reads
only: the statistics (numpy and scipy) live in ``certify`` and ``drift`` and run in the
background job, so routing, pages and /metrics never load them.

A judge is a template version × model: the one that gives the accepted verdict. A
second judge a task asks for only adds caution (a disagreement goes to a person), so it
neither makes a judge of its own nor changes whose threshold applies.

Only blind, independent labels certify. A judge's labelled verdicts are the original
verdicts it *accepted* with a score that a person judged on an audit (``certifying_audits``):

- blind: its author had read nothing of the task that tells the verdict, route or status
  while the audit was open (``blinding``);
- independent: its author is not the task's requester, whose token submits the task's
  attempts (nobody labels their own agent's work);

weighed 1 / the probability the verdict was drawn with, so a stratum of audits stands
for every auto-accept it was drawn from; a claim labelled unsupported or contradicted in
the same judgement makes it wrong. The certification, its curve, the drift sequence and
the shadow figures count these only.

People's decisions on a verdict they saw (a reviewer's satisfied, revise or abandon, a
requester's own feedback) and judgements given after reading the verdict are kept and
shown apart (``seen_verdict_labels``: the Trust page counts them beside each judge) but
never certify: the person saw what the judge said, and a requester would certify their
own agent by marking its answers satisfied."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from django.db.models import F, Q, QuerySet

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
    "JudgeKey",
    "Label",
    "ShadowReport",
    "SeenVerdictLabels",
    "certifying_audits",
    "judge_audits_since",
    "judge_verdicts",
    "labelled_verdicts",
    "seen_verdict_labels",
    "shadow_report",
]


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
    source: str  # "audit": only blind, independent audits label


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


def certifying_audits() -> QuerySet[Audit]:
    """The judged audits that may certify: blind, and judged by someone other than the
    task's requester (who submits its attempts)."""
    return (
        Audit.objects.done()
        .filter(correct__isnull=False, blind=True)
        .filter(Q(reviewer__isnull=True) | ~Q(reviewer=F("task__owner")))
    )


def labelled_verdicts() -> dict[JudgeKey, list[Label]]:
    """Every judge's labelled accepted verdicts: blind, independent audits only (see the
    module docstring)."""
    rows = {
        pk: (score, JudgeKey(template_version, model_name))
        for pk, score, template_version, model_name in judge_verdicts().values_list(
            "pk", "score", "template_version", "model_name"
        )
    }
    audits = list(
        certifying_audits()
        .filter(snapshot_id__in=rows, probability__gt=0)
        .values_list("pk", "snapshot_id", "correct", "probability")
    )
    # A claim labelled unsupported or contradicted in the same judgement makes it wrong.
    refuted = set(
        ClaimLabel.objects.filter(
            audit_id__in=[pk for pk, *_ in audits],
            label__in=(ClaimStance.UNSUPPORTED, ClaimStance.CONTRADICTED),
        ).values_list("snapshot_id", flat=True)
    )
    labels: dict[JudgeKey, list[Label]] = defaultdict(list)
    for _pk, snapshot_id, correct, probability in audits:
        score, key = rows[snapshot_id]
        if score is None:  # judge_verdicts keeps scored verdicts only
            continue
        wrong = not correct or snapshot_id in refuted
        labels[key].append(Label(snapshot_id, score, wrong, 1 / probability, "audit"))
    return dict(labels)


@dataclass(frozen=True)
class SeenVerdictLabels:
    """What people said of a judge's accepts after seeing its verdict: kept and shown,
    never certifying. ``decisions``: first decisions on an accepted verdict (``wrong`` of
    them revise or abandon), ``by_requester`` of them the task's own requester's
    feedback; ``not_blind``: audits judged after reading the verdict."""

    decisions: int = 0
    wrong: int = 0
    by_requester: int = 0
    not_blind: int = 0


def _first_decisions(snapshots: dict[int, int]) -> dict[int, tuple[bool, bool]]:
    """snapshot id -> (wrong, by the requester), from the first decision a person made
    on each verdict of ``snapshots`` (snapshot id -> task id), before a later verdict."""
    by_task: dict[int, list[tuple[datetime, int]]] = defaultdict(list)
    for pk, task_id, created_at in (
        ValidationSnapshot.objects.originals()
        .filter(task_id__in=set(snapshots.values()))
        .order_by("created_at", "id")
        .values_list("pk", "task_id", "created_at")
    ):
        by_task[task_id].append((created_at, pk))
    first: dict[int, tuple[bool, bool]] = {}
    decisions = (
        Feedback.objects.in_effect()
        .filter(action__in=HUMAN_DECISIONS, task_id__in=by_task)
        .annotate(by_owner=Q(author_id=F("task__owner_id")))
        .order_by("created_at", "id")
        .values_list("task_id", "action", "created_at", "by_owner")
    )
    for task_id, action, decided_at, by_owner in decisions:
        before = [pk for created_at, pk in by_task[task_id] if created_at <= decided_at]
        if before and before[-1] in snapshots and before[-1] not in first:
            first[before[-1]] = (action != FeedbackAction.SATISFIED, bool(by_owner))
    return first


def seen_verdict_labels() -> dict[JudgeKey, SeenVerdictLabels]:
    """Per judge, the people's calls on its accepts that do not certify (see
    ``SeenVerdictLabels``)."""
    rows = {
        pk: (task_id, JudgeKey(template_version, model_name))
        for pk, task_id, template_version, model_name in judge_verdicts().values_list(
            "pk", "task_id", "template_version", "model_name"
        )
    }
    counts: dict[JudgeKey, SeenVerdictLabels] = defaultdict(SeenVerdictLabels)
    for pk, (wrong, by_owner) in _first_decisions(
        {pk: task for pk, (task, _key) in rows.items()}
    ).items():
        key = rows[pk][1]
        c = counts[key]
        counts[key] = SeenVerdictLabels(
            c.decisions + 1, c.wrong + wrong, c.by_requester + by_owner, c.not_blind
        )
    not_blind = (
        Audit.objects.done()
        .filter(correct__isnull=False, snapshot_id__in=rows)
        .exclude(pk__in=certifying_audits().values("pk"))
        .values_list("snapshot_id", flat=True)
    )
    for snapshot_id in not_blind:
        key = rows[snapshot_id][1]
        c = counts[key]
        counts[key] = SeenVerdictLabels(c.decisions, c.wrong, c.by_requester, c.not_blind + 1)
    return dict(counts)


def judge_audits_since(key: JudgeKey, since: datetime) -> list[tuple[bool, int]]:
    """The judged audits of the judge's auto-accepts made since ``since``, in the order
    they were judged: (wrong, task id)."""
    verdicts = judge_verdicts(key).filter(created_at__gte=since).values("pk")
    return [
        (not correct, task_id)
        for correct, task_id in certifying_audits()
        .filter(snapshot_id__in=verdicts, route="auto_accepted")
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
    audits = certifying_audits().filter(snapshot_id__in=above.values("pk"))
    return ShadowReport(
        since=row.shadow_started_at,
        would_accept=above.count(),
        would_send=verdicts.filter(score__lt=row.threshold).count(),
        audited=audits.count(),
        audited_wrong=audits.filter(correct=False).count(),
    )
