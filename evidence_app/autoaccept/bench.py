"""judge_bench at a certified risk: per dataset, the threshold certified on the
development half's accepted verdicts (their scores, labelled by the cases), and what it
does on the held-out half: the share of correct answers auto-accepted at it and the wrong
ones auto-accepted, beside what the judge's own accept does (today's route without a
threshold). Loads scipy (``evidence_app.autoaccept.certify``): only the command imports
it. It reads judge_bench's case results through ``CaseResult``, the fields it uses: the
package sits below judge_bench, which reads the labels it certifies on."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any, Protocol

from evidence_app.autoaccept.certify import DELTA, certify

__all__ = ["certified_figures", "format_certified_table"]

ALL = "(all)"


class CaseResult(Protocol):
    """What this module reads of a judged case (``evidence_app.judge_bench.CaseResult``)."""

    id: str
    dataset: str
    split: str
    kind: str
    got: str
    score: float | None


def _auto_accepted(result: CaseResult, threshold: float | None) -> bool:
    return (
        threshold is not None
        and result.got == "accepted"
        and result.score is not None
        and result.score >= threshold
    )


def _one(dev: list[CaseResult], held: list[CaseResult], target: float) -> dict[str, Any]:
    accepted = [r for r in dev if r.got == "accepted" and r.score is not None]
    result = certify(
        [float(r.score or 0.0) for r in accepted],
        [r.kind != "correct" for r in accepted],
        target=target,
        delta=DELTA,
    )
    tau = result.threshold
    correct = [r for r in held if r.kind == "correct"]
    wrong = [r for r in held if r.kind != "correct"]
    return {
        "dev_cases": len(dev),
        "dev_accepted": len(accepted),
        "threshold": tau,
        "reason": result.reason,
        "guarantee": result.guarantee,
        "heldout_cases": len(held),
        "heldout_correct": len(correct),
        "heldout_wrong": len(wrong),
        "correct_auto_accepted": sum(_auto_accepted(r, tau) for r in correct),
        "wrong_auto_accepted": sorted(r.id for r in wrong if _auto_accepted(r, tau)),
        "correct_accepted_by_judge": sum(r.got == "accepted" for r in correct),
        "wrong_accepted_by_judge": sorted(r.id for r in wrong if r.got == "accepted"),
    }


def certified_figures(results: Sequence[CaseResult], *, target: float) -> dict[str, Any]:
    """Per dataset (and all together): the threshold certified at ``target`` on the dev
    half and its effect on the held-out half."""
    dev: dict[str, list[CaseResult]] = defaultdict(list)
    held: dict[str, list[CaseResult]] = defaultdict(list)
    for r in results:
        (dev if r.split == "dev" else held)[r.dataset].append(r)
    out = {
        name: _one(dev.get(name, []), held.get(name, []), target)
        for name in sorted(set(dev) | set(held))
    }
    out[ALL] = _one(
        [r for r in results if r.split == "dev"], [r for r in results if r.split != "dev"], target
    )
    return {"target": target, "delta": DELTA, "datasets": out}


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({part / whole:.0%})" if whole else "-"


def format_certified_table(figures: dict[str, Any]) -> list[str]:
    lines = [
        f"At a certified risk (target {figures['target']:.1%} false accepts, "
        f"{1 - figures['delta']:.0%} confidence): the threshold certified on the dev half's "
        "accepted verdicts, applied to the held-out half",
        f"{'dataset':<10}{'dev accepts':>12}{'threshold':>11}{'correct auto-accepted':>24}"
        f"{'wrong auto-accepted':>21}{'judge alone: correct / wrong':>31}",
    ]
    for name, f in figures["datasets"].items():
        tau = "none" if f["threshold"] is None else f"{f['threshold']:.3f}"
        alone = (
            f"{_share(f['correct_accepted_by_judge'], f['heldout_correct'])} / "
            f"{len(f['wrong_accepted_by_judge'])}"
        )
        lines.append(
            f"{name:<10}{f['dev_accepted']:>12}{tau:>11}"
            f"{_share(f['correct_auto_accepted'], f['heldout_correct']):>24}"
            f"{len(f['wrong_auto_accepted']):>21}{alone:>31}"
        )
    reasons = {f["reason"] for f in figures["datasets"].values() if f["threshold"] is None}
    if reasons:
        lines.append("no threshold: " + "; ".join(sorted(reasons)))
    return lines
