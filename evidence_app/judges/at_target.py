"""The judge gate at the target: on the comparison's paired cases, each judge's
threshold certified at TRUST_TARGET_FALSE_ACCEPT on its own accepted verdicts, the share
of correct answers it auto-accepts there and the wrong ones, beside the share the judge's
own accept sends without a person today; McNemar's exact test on the correct answers
only one of the two auto-accepts at its threshold. "Better" then means "automates more
at the same guaranteed risk". Loads scipy: only the comparison job imports it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evidence_app.autoaccept.certify import DELTA, certify
from evidence_app.judges.figures import gate_verdict, share

__all__ = ["at_target_figures"]

SIDES = ("baseline", "candidate")


def _side(outcomes: list[Mapping[str, Any]], side: str, target: float) -> dict[str, Any]:
    scored = [o for o in outcomes if o[side] == "accepted" and o.get(f"{side}_score") is not None]
    result = certify(
        [float(o[f"{side}_score"]) for o in scored],
        [o["kind"] != "correct" for o in scored],
        target=target,
        delta=DELTA,
    )
    tau = result.threshold
    correct = [o for o in outcomes if o["kind"] == "correct"]
    wrong = [o for o in outcomes if o["kind"] != "correct"]
    return {
        "threshold": tau,
        "reason": result.reason,
        "labelled": len(scored),
        "automated": share(sum(_auto(o, side, tau) for o in correct), len(correct)),
        "wrong_auto_accepted": sum(_auto(o, side, tau) for o in wrong),
        "today": share(sum(o[side] == "accepted" for o in correct), len(correct)),
    }


def _auto(outcome: Mapping[str, Any], side: str, tau: float | None) -> bool:
    score = outcome.get(f"{side}_score")
    return tau is not None and outcome[side] == "accepted" and score is not None and score >= tau


def at_target_figures(outcomes: list[Mapping[str, Any]], *, target: float) -> dict[str, Any]:
    """Both judges at their certified thresholds and the paired test (outcomes without
    scores, from before scores were recorded, count as no threshold)."""
    sides = {side: _side(outcomes, side, target) for side in SIDES}
    taus = {side: sides[side]["threshold"] for side in SIDES}
    correct = [o for o in outcomes if o["kind"] == "correct"]
    candidate_only = sum(
        1
        for o in correct
        if _auto(o, "candidate", taus["candidate"]) and not _auto(o, "baseline", taus["baseline"])
    )
    baseline_only = sum(
        1
        for o in correct
        if _auto(o, "baseline", taus["baseline"]) and not _auto(o, "candidate", taus["candidate"])
    )
    p_value, verdict = gate_verdict(candidate_only, baseline_only)
    return {
        "target": target,
        "delta": DELTA,
        **sides,
        "candidate_only": candidate_only,
        "baseline_only": baseline_only,
        "p_value": p_value,
        "verdict": verdict,
    }
