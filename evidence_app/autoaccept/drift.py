"""When to stop auto-accept: the audits of auto-accepted verdicts, in the order they were
judged since the threshold was set, watched by a one-sided CUSUM (Page 1954) for a rise
of the false-accept rate from the target ``α`` to ``degraded_factor × α``.

Each judged audit adds the log-likelihood ratio of the two rates (``ln k`` for a wrong
accept, ``ln((1 - kα) / (1 - α))`` for a right one), the sum is floored at 0, and
auto-accept stops when it reaches ``threshold``: some recent run of audits is at least
``e^threshold`` times likelier under the degraded rate than under the target. The floor
forgets a long healthy history, so a judge that degrades late is stopped as fast as one
that degrades early.

Why not "the live upper bound crosses the target": the bound on a handful of audits is
above any small target at once (0 wrong of 5: 45 %), and even after 149 audits (the
fewest that can put it under 2 %) a judge that is wrong 1 % of the time still has a bound
over 2 % in 78 % of cases. The rule asks for evidence that the rate is above the
target, not for the lack of evidence that it is below. The figures (simulate.py,
docs/validator.md) at the defaults, target 2 %: a judge exactly at the target is stopped
within 1,000 audits in 2.4 % of runs, one at half the target in none of 1,000; a judge
whose rate jumps to 10 % is stopped within 171 audits of the jump in 95 % of runs
(median 94), one whose rate rises to 6 % within 413 (median 195).

Audits enter unweighted: each audited verdict is a draw of the auto-accepted ones at the
time, wrong with the current rate whatever its audit probability."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from evidence_app.autoaccept.certify import DELTA, upper_bounds

__all__ = ["DriftRule", "DriftStatus", "drift_status", "drift_stops"]


@dataclass(frozen=True)
class DriftRule:
    """The CUSUM of the audits since the threshold was set: ``target`` the certified
    false-accept rate, ``degraded_factor`` how many times the target counts as degraded,
    ``threshold`` the log-likelihood ratio at which auto-accept stops."""

    target: float
    degraded_factor: float = 2.0
    threshold: float = 5.0

    def __post_init__(self) -> None:
        if not 0 < self.target < 1 or not 1 < self.degraded_factor < 1 / self.target:
            raise ValueError("need 0 < target < degraded_factor * target < 1")
        if self.threshold <= 0:
            raise ValueError("the threshold must be positive")

    @property
    def steps(self) -> tuple[float, float]:
        """What a wrong and a right audit add to the sum."""
        degraded = self.degraded_factor * self.target
        return math.log(self.degraded_factor), math.log((1 - degraded) / (1 - self.target))


@dataclass(frozen=True)
class DriftStatus:
    """The live audits of one judge since its threshold was set."""

    audits: int
    wrong: int
    # The CUSUM after the last audit; auto-accept stops once it reaches the threshold.
    statistic: float
    # The audit (1-based) at which it first reached it, None while it has not.
    stopped_at: int | None
    # The live false-accept rate and its one-sided 95 % upper bound (for the page).
    rate: float | None
    upper: float | None

    @property
    def stopped(self) -> bool:
        return self.stopped_at is not None


def drift_stops(wrong: NDArray[np.bool_], rule: DriftRule) -> tuple[NDArray[np.intp], NDArray]:
    """The CUSUM over audits along the last axis (many runs at once): the audit number
    (1-based) at which each run stops, 0 where it never does, and the final sums."""
    up, down = rule.steps
    increments = np.where(wrong, up, down)
    total = np.zeros(wrong.shape[:-1])
    stopped_at = np.zeros(wrong.shape[:-1], dtype=np.intp)
    for audit in range(wrong.shape[-1]):
        total = np.maximum(0.0, total + increments[..., audit])
        newly = (total >= rule.threshold) & (stopped_at == 0)
        stopped_at[newly] = audit + 1
    return stopped_at, total


def drift_status(wrong: ArrayLike, rule: DriftRule, *, delta: float = DELTA) -> DriftStatus:
    """The drift rule on one judge's judged audits since its threshold was set, in the
    order they were judged (``wrong`` True for a wrong auto-accept)."""
    outcomes = np.asarray(wrong, dtype=bool).ravel()
    stopped_at, total = drift_stops(outcomes, rule)
    audits, errors = outcomes.size, int(outcomes.sum())
    return DriftStatus(
        audits=audits,
        wrong=errors,
        statistic=float(total),
        stopped_at=int(stopped_at) or None,
        rate=errors / audits if audits else None,
        upper=float(upper_bounds(errors, audits, delta)) if audits else None,
    )
