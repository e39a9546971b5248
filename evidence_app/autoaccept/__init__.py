"""Auto-accept at a certified risk: the threshold on the judge's score above which it may
accept alone, certified on labelled verdicts (``certify``), and the rule that stops it
when the live audits show it drifting (``drift``); ``simulate`` checks both on
synthetic judges. Pure functions of arrays, no database; ``recompute`` is the background
job's work on top of them (it reads the labels and writes the proposals through
``evidence_app.trust``). numpy and scipy load with this package: only that job and
judge_bench import it, never a module loaded at start-up."""

from __future__ import annotations

from evidence_app.autoaccept.certify import (
    DELTA,
    Certification,
    CurvePoint,
    certify,
    certify_batch,
    coverage_risk_curve,
    guarantee_sentence,
    min_accepts_needed,
)
from evidence_app.autoaccept.drift import DriftRule, DriftStatus, drift_status, drift_stops

__all__ = [
    "DELTA",
    "Certification",
    "CurvePoint",
    "DriftRule",
    "DriftStatus",
    "certify",
    "certify_batch",
    "coverage_risk_curve",
    "drift_status",
    "drift_stops",
    "guarantee_sentence",
    "min_accepts_needed",
]
