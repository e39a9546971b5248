"""The background job's work: certify every judge's threshold on its labelled
verdicts as they arrive, and run the drift rule on the audits of each approved one.
Loads numpy and scipy: only the job (and judge_bench) imports it."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from evidence_app.autoaccept.certify import DELTA, Certification, certify
from evidence_app.autoaccept.drift import DriftRule, drift_status
from evidence_app.autoaccept.selectors import JudgeKey, judge_audits_since, labelled_verdicts
from evidence_app.autoaccept.services import (
    DriftFigures,
    Proposal,
    threshold_drift_record,
    threshold_propose,
)
from evidence_app.models import AutoAcceptThreshold

log = logging.getLogger(__name__)

__all__ = [
    "CURVE_POINTS",
    "RecomputeOutcome",
    "curve_points",
    "proposal_of",
    "thresholds_recompute",
]

# The curve the Trust page draws: at most this many of its points.
CURVE_POINTS = 24


def curve_points(result: Certification, limit: int = CURVE_POINTS) -> list[dict[str, Any]]:
    """The coverage–risk curve downsampled to at most ``limit`` points, evenly over its
    length, keeping the strictest, the loosest and the certified one."""
    curve = result.curve
    if not curve:
        return []
    step = max(1, -(-len(curve) // limit))
    keep = set(range(0, len(curve), step)) | {len(curve) - 1}
    keep |= {i for i, p in enumerate(curve) if p.threshold == result.threshold}
    return [
        {
            "threshold": round(curve[i].threshold, 4),
            "accepted": curve[i].accepted,
            "coverage": round(curve[i].coverage, 4),
            "risk": round(curve[i].risk, 4),
            "upper": round(min(curve[i].upper, 1.0), 4),
        }
        for i in sorted(keep)
    ]


def proposal_of(result: Certification) -> Proposal:
    return Proposal(
        threshold=result.threshold,
        target=result.target,
        delta=result.delta,
        labelled=result.labelled,
        automated=result.automated,
        risk=result.risk,
        upper=result.upper,
        guarantee=result.guarantee,
        curve=curve_points(result),
    )


@dataclass(frozen=True)
class RecomputeOutcome:
    judges: int
    certified: int
    stopped: int


def thresholds_recompute() -> RecomputeOutcome:
    """Certify each judge with labels at TRUST_TARGET_FALSE_ACCEPT, then run the drift
    rule on every approved threshold still auto-accepting."""
    target = settings.TRUST_TARGET_FALSE_ACCEPT
    if not 0 < target < 0.5:
        log.warning("TRUST_TARGET_FALSE_ACCEPT=%s: no threshold can be certified", target)
        return RecomputeOutcome(0, 0, 0)
    labels = labelled_verdicts()
    certified = 0
    for key, rows in sorted(labels.items()):
        result = certify(
            [r.score for r in rows],
            [r.wrong for r in rows],
            [r.weight for r in rows],
            target=target,
            delta=DELTA,
        )
        certified += result.certified
        threshold_propose(key=key, proposal=proposal_of(result))
    stopped = 0
    for row in AutoAcceptThreshold.objects.approved().filter(stopped_at__isnull=True):
        stopped += drift_check(row).stopped
    return RecomputeOutcome(len(labels), certified, stopped)


def drift_check(row: AutoAcceptThreshold) -> AutoAcceptThreshold:
    """The drift rule on the judged audits of the threshold's auto-accepts since it was
    approved, in the order they were judged."""
    audits = judge_audits_since(JudgeKey.of(row), row.approved_at or row.computed_at)
    status = drift_status([wrong for wrong, _task in audits], DriftRule(target=row.target))
    stopped_task = audits[status.stopped_at - 1][1] if status.stopped_at else None
    return threshold_drift_record(
        threshold_id=row.pk,
        drift=DriftFigures(
            audits=status.audits,
            wrong=status.wrong,
            statistic=status.statistic,
            stopped_task_id=stopped_task,
        ),
    )
