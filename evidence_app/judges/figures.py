"""The figures of the judge gate and of shadow mode: plain functions of counts and
stored verdicts (the page and the tests read them; nothing here writes).

A comparison's outcomes are paired: the current judge and the candidate judged the same
labelled cases. For each judge: accuracy (verdict as labelled), false-accept rate (a
wrong or irrelevant answer accepted, over the wrong and irrelevant answers) and
false-reject rate (a correct answer rejected, over the correct answers), each with its
exact 95 % Clopper–Pearson interval. McNemar's exact test on the discordant pairs (cases
only one of the two got right) says whether the difference is more than chance: below
``SIGNIFICANCE`` the candidate is ``better`` or ``worse`` by the direction of the
discordant counts, otherwise there is ``no significant difference``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from evidence_app.judge_bench.report import TO_A_PERSON
from evidence_app.models import (
    Audit,
    AuditState,
    JudgeComparison,
    JudgeDefault,
    ShadowJudge,
    ShadowState,
    ShadowVerdict,
    ValidationSnapshot,
    ValidationStatus,
)
from evidence_app.trust.agreement import HUMAN_DECISIONS, cohen_kappa
from evidence_app.trust.stats import agreement_rate, clopper_pearson, mcnemar_exact
from tasks_app.records import Feedback, FeedbackAction

__all__ = [
    "BETTER",
    "NO_DIFFERENCE",
    "SIGNIFICANCE",
    "WORSE",
    "comparison_figures",
    "gate_verdict",
    "judge_history",
    "latest_shadow",
    "recent_comparisons",
    "shadow_figures",
]

SIGNIFICANCE = 0.05
BETTER = "better"
WORSE = "worse"
NO_DIFFERENCE = "no significant difference"


def gate_verdict(candidate_only: int, baseline_only: int) -> tuple[float, str]:
    """(McNemar's exact p-value, verdict) from the cases only the candidate got right
    and the cases only the current judge got right."""
    p_value = mcnemar_exact(candidate_only, baseline_only)
    if p_value >= SIGNIFICANCE or candidate_only == baseline_only:
        return p_value, NO_DIFFERENCE
    return p_value, BETTER if candidate_only > baseline_only else WORSE


def share(k: int, n: int) -> dict[str, Any]:
    """k of n with its Clopper-Pearson interval, as the gate's figures show a share."""
    interval = clopper_pearson(k, n)
    return {
        "k": k,
        "n": n,
        "estimate": interval.estimate,
        "low": interval.low,
        "high": interval.high,
    }


def judge_side(outcomes: list[Mapping[str, Any]], side: str) -> dict[str, Any]:
    """One judge's figures on the outcomes (``side``: ``baseline`` or ``candidate``)."""
    correct_answers = [o for o in outcomes if o["kind"] == "correct"]
    wrong_answers = [o for o in outcomes if o["kind"] != "correct"]
    return {
        "accuracy": share(sum(1 for o in outcomes if o[f"{side}_correct"]), len(outcomes)),
        "false_accept": share(
            sum(1 for o in wrong_answers if o[side] == ValidationStatus.ACCEPTED),
            len(wrong_answers),
        ),
        "false_reject": share(
            sum(1 for o in correct_answers if o[side] == ValidationStatus.REJECTED),
            len(correct_answers),
        ),
        "to_person": share(sum(1 for o in outcomes if o[side] in TO_A_PERSON), len(outcomes)),
    }


def comparison_figures(outcomes: list[Mapping[str, Any]]) -> dict[str, Any]:
    """Both judges' figures side by side, the discordant counts, McNemar's p-value and
    the verdict on the candidate."""
    candidate_only = sum(
        1 for o in outcomes if o["candidate_correct"] and not o["baseline_correct"]
    )
    baseline_only = sum(1 for o in outcomes if o["baseline_correct"] and not o["candidate_correct"])
    p_value, verdict = gate_verdict(candidate_only, baseline_only)
    return {
        "cases": len(outcomes),
        "baseline": judge_side(outcomes, "baseline"),
        "candidate": judge_side(outcomes, "candidate"),
        "candidate_only": candidate_only,
        "baseline_only": baseline_only,
        "both_right": sum(1 for o in outcomes if o["candidate_correct"] and o["baseline_correct"]),
        "both_wrong": sum(
            1 for o in outcomes if not o["candidate_correct"] and not o["baseline_correct"]
        ),
        "p_value": p_value,
        "verdict": verdict,
        # The cases behind the test: where one judge was right and the other was not.
        "discordant": [
            {
                "id": o.get("id", ""),
                "expected": o.get("expected", ""),
                "baseline": o["baseline"],
                "candidate": o["candidate"],
            }
            for o in outcomes
            if o["candidate_correct"] != o["baseline_correct"]
        ],
    }


# --- Shadow mode ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Agreement:
    """Two binary calls (accept or not) on the same items: how often they agree, Cohen's
    kappa and the 2×2 confusion (rows: the first, columns: the second)."""

    compared: int
    rate: float | None
    kappa: float | None
    confusion: tuple[tuple[int, int], tuple[int, int]]

    @classmethod
    def of(cls, pairs: Iterable[tuple[bool, bool]]) -> Agreement:
        pairs = list(pairs)
        n = len(pairs)

        def count(a: bool, b: bool) -> int:
            return sum(1 for x, y in pairs if x == a and y == b)

        return cls(
            compared=n,
            rate=agreement_rate(pairs),
            kappa=cohen_kappa(pairs),
            confusion=(
                (count(True, True), count(True, False)),
                (count(False, True), count(False, False)),
            ),
        )


def _made_a_call(status: str) -> bool:
    """A validator error is no call: left out of agreement, as on the agreement page."""
    return status != ValidationStatus.VALIDATOR_ERROR


def shadow_figures(shadow: ShadowJudge) -> dict[str, Any]:
    """What a shadow judge has judged so far: counts by state; agreement with the current
    judge on accepted versus not; and with people, beside the current judge's on the same
    items: the decisions applied on those attempts (satisfied versus revise or abandon)
    and the judged audits of the originals (correct versus not)."""
    states, pairs = _shadow_pairs(shadow)
    judged = [(o, s) for o, s in pairs if _made_a_call(o.status) and _made_a_call(s.status)]
    decisions = _decisions(o for o, _ in judged)
    audits = _audits(o for o, _ in judged)
    with_decision = [
        (o, s, decisions[(o.task_id, o.attempt_index)])
        for o, s in judged
        if (o.task_id, o.attempt_index) in decisions
    ]
    with_audit = [(o, s, audits[o.pk]) for o, s in judged if o.pk in audits]
    return {
        "states": states,
        "judged": len(pairs),
        "with_current": Agreement.of((_accepts(o), _accepts(s)) for o, s in judged),
        "people_rows": [
            ("Decisions", _beside(with_decision)),
            ("Audits", _beside(with_audit)),
        ],
    }


Pair = tuple[ValidationSnapshot, ValidationSnapshot]


def _accepts(snapshot: ValidationSnapshot) -> bool:
    return snapshot.status == ValidationStatus.ACCEPTED


def _beside(items: list[tuple[ValidationSnapshot, ValidationSnapshot, bool]]) -> dict[str, Any]:
    """The candidate's and the current judge's agreement with people on the same items."""
    return {
        "candidate": Agreement.of((_accepts(s), ok) for _, s, ok in items),
        "current": Agreement.of((_accepts(o), ok) for o, _, ok in items),
    }


def _shadow_pairs(shadow: ShadowJudge) -> tuple[dict[str, int], list[Pair]]:
    """The shadow verdicts' counts by state, and (original, shadow snapshot) of those done."""
    rows = list(
        ShadowVerdict.objects.filter(shadow=shadow)
        .select_related("original", "snapshot")
        .only(
            "state",
            "original__task_id",
            "original__attempt_index",
            "original__status",
            "snapshot__status",
        )
    )
    states = dict.fromkeys(ShadowState.values, 0)
    pairs: list[Pair] = []
    for row in rows:
        states[row.state] += 1
        if row.state == ShadowState.DONE and row.snapshot is not None:
            pairs.append((row.original, row.snapshot))
    return states, pairs


def _audits(originals: Iterable[ValidationSnapshot]) -> dict[int, bool]:
    """Original snapshot id -> the auditor's call (correct: accept), for judged audits."""
    judged = Audit.objects.filter(
        snapshot_id__in=[o.pk for o in originals], state=AuditState.DONE, correct__isnull=False
    )
    return {pk: bool(correct) for pk, correct in judged.values_list("snapshot_id", "correct")}


def _decisions(originals: Iterable[ValidationSnapshot]) -> dict[tuple[int, int], bool]:
    """(task, attempt) -> the person's call on that attempt (satisfied: accept), from
    the last decision applied on it."""
    wanted = {(o.task_id, o.attempt_index) for o in originals}
    found: dict[tuple[int, int], bool] = {}
    by_task: dict[int, set[int]] = defaultdict(set)
    for task_id, attempt in wanted:
        by_task[task_id].add(attempt)
    decisions = (
        Feedback.objects.in_effect()
        .filter(task_id__in=list(by_task), action__in=HUMAN_DECISIONS)
        .order_by("created_at", "id")
        .values_list("task_id", "attempt_index", "action")
    )
    for task_id, attempt, action in decisions:
        if (task_id, attempt) in wanted:
            found[(task_id, attempt)] = action == FeedbackAction.SATISFIED
    return found


# --- The judge page's reads ----------------------------------------------------------------


def judge_history(limit: int = 50) -> list[JudgeDefault]:
    """The changes of the default judge, newest first, with who chose each and from
    which comparison."""
    return list(
        JudgeDefault.objects.select_related("chosen_by", "comparison").order_by(
            "-chosen_at", "-id"
        )[:limit]
    )


def recent_comparisons(limit: int = 20) -> list[JudgeComparison]:
    """The latest comparisons, newest first, without their per-case outcomes."""
    return list(
        JudgeComparison.objects.select_related("requested_by")
        .defer("outcomes")
        .order_by("-created_at", "-id")[:limit]
    )


def latest_shadow() -> ShadowJudge | None:
    """The candidate in shadow, else the last one stopped (its figures stay on show)."""
    return (
        ShadowJudge.objects.select_related("started_by", "stopped_by")
        .order_by("-active", "-started_at", "-id")
        .first()
    )
