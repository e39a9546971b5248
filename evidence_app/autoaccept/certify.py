"""The certified auto-accept threshold: the lowest score τ above which the judge may accept
alone, with the false-accept rate among those accepts at most the target ``α`` with
confidence ``1 - δ``.

Learn then Test (Angelopoulos, Bates, Candès, Jordan, Lei, arXiv 2110.01052), as
"Trust or Escalate" (Jung, Brahman, Choi, arXiv 2407.18370) applies it to LLM judges:
each candidate threshold τ is a null hypothesis "the false-accept rate among verdicts
scoring ≥ τ is above α"; the thresholds are tested in a fixed order, strictest first, each
at level δ, and the procedure stops at the first one it cannot reject. The certified τ
is the last one rejected. Testing in a fixed order needs no correction for choosing τ
from the same data: a wrong certification needs the first true null on the way down to
be rejected, which happens with probability at most δ.

The candidates are the distinct labelled scores: between two of them the accepted set,
and so the test, does not change. The sequence starts at the strictest *testable*
candidate: one whose test would reject were none of its labels wrong, with at least
``min_accepts`` labels at or above it (above it no test can reject, and a sequence that
began there would stop at once). Where it starts, like the candidates, depends on the
scores and weights only, never on the labels. Given them, the labels are independent and
the test is valid for the average wrong-answer probability of the labelled verdicts it
accepts (a sum of unequal Bernoulli draws is no more spread than the binomial at its
mean: Hoeffding 1956); that this carries over to new verdicts is the assumption:
labelled and live verdicts are alike (exchangeable).

The test at one threshold, on verdicts with their weights (``1 / p`` for an audit drawn
with probability ``p``, 1 for every other label): the verdicts of one weight form a
stratum. One stratum: the exact binomial test, whose rejection is the one-sided
Clopper–Pearson upper bound at ``1 - δ`` falling under α. Several: each stratum's
one-sided exact bound at ``1 - δ / H`` (H strata), weighed by the stratum's estimated
count at or above τ (the sum of its weights there), summed; all H bounds hold at once
with probability at least ``1 - δ`` (Bonferroni), so the sum does too. Conservative, and
exact again when every weight is equal."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import betainc, betaincinv

__all__ = [
    "DELTA",
    "Certification",
    "CurvePoint",
    "certify",
    "certify_batch",
    "coverage_risk_curve",
    "fixed_sequence",
    "guarantee_sentence",
    "min_accepts_needed",
]

# The error allowed to the certification: the guarantee holds with 95 % confidence.
DELTA = 0.05

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]
IntArray = NDArray[np.intp]


def min_accepts_needed(alpha: float, delta: float = DELTA) -> int:
    """The fewest labelled accepts that can certify a false-accept rate under ``alpha``:
    all of them right, the exact upper bound ``1 - δ^(1/n)`` under ``alpha`` (149 at
    2 %, 59 at 5 %). Fewer labels never certify a threshold."""
    if not 0 < alpha < 1 or not 0 < delta < 1:
        raise ValueError("alpha and delta must lie strictly between 0 and 1")
    return math.floor(math.log(delta) / math.log1p(-alpha)) + 1


def binomial_pvalues(wrong: ArrayLike, accepted: ArrayLike, alpha: float) -> FloatArray:
    """The exact p-value of "the false-accept rate is above ``alpha``": the chance of at
    most ``wrong`` wrong among ``accepted`` at the rate ``alpha``, P(Bin(n, α) ≤ k)."""
    k = np.asarray(wrong, dtype=float)
    n = np.asarray(accepted, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        # P(Bin(n, α) ≤ k) = I_{1-α}(n - k, k + 1); 1 when every accept is wrong.
        p = np.where(k >= n, 1.0, betainc(np.maximum(n - k, 1e-300), k + 1, 1 - alpha))
    return np.asarray(p, dtype=float)


def upper_bounds(wrong: ArrayLike, accepted: ArrayLike, delta: float) -> FloatArray:
    """The one-sided exact (Clopper–Pearson) upper bound at ``1 - delta`` of a binomial
    share, ``wrong`` of ``accepted``; fractional counts allowed, 1 where none accepted."""
    k, n = np.broadcast_arrays(np.asarray(wrong, dtype=float), np.asarray(accepted, dtype=float))
    bound = np.ones(k.shape)
    # None wrong: the closed form 1 - δ^(1/n), no quantile to invert.
    none = (k <= 0) & (n > 0)
    bound[none] = -np.expm1(np.log(delta) / n[none])
    some = (k > 0) & (k < n)
    bound[some] = betaincinv(k[some] + 1, n[some] - k[some], 1 - delta)
    return bound


def fixed_sequence(rejected: BoolArray, candidate: BoolArray, start: int) -> IntArray:
    """Fixed-sequence testing along the last axis, strictest threshold first: position
    ``j`` accepts the ``j + 1`` highest scores, and is a threshold only where
    ``candidate`` (the next score differs). From the candidate at or after ``start``,
    the run of rejected candidates until the first that is not; returns the position of
    the last rejected one, -1 where none is (no threshold certified)."""
    width = rejected.shape[-1]
    if start >= width:
        return np.full(rejected.shape[:-1], -1, dtype=np.intp)
    positions = np.arange(width)
    # Each position takes the result of the candidate that closes its group of ties.
    closing = np.where(candidate, positions, width - 1)
    closing = np.minimum.accumulate(closing[..., ::-1], axis=-1)[..., ::-1]
    filled = np.take_along_axis(rejected, closing, axis=-1)
    failed = ~filled[..., start:]
    first_failure = np.where(failed.any(axis=-1), failed.argmax(axis=-1) + start, width)
    first_tested = closing[..., start]
    last = first_failure - 1
    return np.where(last >= first_tested, last, -1).astype(np.intp)


@dataclass(frozen=True)
class CurvePoint:
    """One candidate threshold of the coverage–risk curve."""

    threshold: float
    # Labelled verdicts scoring at or above the threshold (a count, not weighted).
    accepted: int
    # The weighted share of labelled verdicts at or above it: the share it automates.
    coverage: float
    # The weighted false-accept rate among them, and its one-sided 95 % upper bound.
    risk: float
    upper: float
    # The test "the rate is above the target" is rejected here (the bound is under it).
    rejected: bool
    # It could be, were none of these labels wrong (a matter of counts and weights only):
    # the sequence of tests starts at the strictest testable threshold.
    testable: bool


@dataclass(frozen=True)
class Certification:
    """The coverage–risk curve of one judge's labelled verdicts and the certified
    threshold, if any (``threshold`` None: nothing is auto-accepted on a score)."""

    target: float
    delta: float
    labelled: int
    min_accepts: int
    curve: tuple[CurvePoint, ...]
    threshold: float | None
    automated: float
    risk: float | None
    upper: float | None
    reason: str

    @property
    def certified(self) -> bool:
        return self.threshold is not None

    @property
    def guarantee(self) -> str:
        return guarantee_sentence(self)


def _percent(share: float) -> str:
    return f"{100 * share:.3g} %"


def guarantee_sentence(result: Certification) -> str:
    """The guarantee in one sentence, or why there is none."""
    if result.threshold is None:
        return f"No threshold is certified: {result.reason}; every verdict goes to a person."
    return (
        f"With {_percent(1 - result.delta)} confidence at most {_percent(result.target)} "
        f"of auto-accepted answers are wrong, for answers like the {result.labelled} "
        f"labelled ones; scores of {result.threshold:.3g} or more are auto-accepted "
        f"({_percent(result.automated)} of them)."
    )


def _validated(
    scores: ArrayLike, wrong: ArrayLike, weights: ArrayLike | None
) -> tuple[FloatArray, BoolArray, FloatArray]:
    s = np.asarray(scores, dtype=float).ravel()
    w = np.asarray(wrong, dtype=bool).ravel()
    wt = np.ones_like(s) if weights is None else np.asarray(weights, dtype=float).ravel()
    if not s.shape == w.shape == wt.shape:
        raise ValueError("scores, wrong and weights must have the same length")
    if s.size and (np.isnan(s).any() or s.min() < 0 or s.max() > 1):
        raise ValueError("scores must lie in [0, 1]")
    if s.size and not (np.isfinite(wt).all() and wt.min() > 0):
        raise ValueError("weights must be positive")
    return s, w, wt


def coverage_risk_curve(
    scores: ArrayLike,
    wrong: ArrayLike,
    weights: ArrayLike | None = None,
    *,
    target: float,
    delta: float = DELTA,
) -> list[CurvePoint]:
    """The coverage–risk curve over every distinct score, strictest first."""
    s, w, wt = _validated(scores, wrong, weights)
    order = np.argsort(-s, kind="stable")
    s, w, wt = s[order], w[order], wt[order]
    candidate = np.append(s[:-1] != s[1:], True) if s.size else np.zeros(0, dtype=bool)
    # Weights are 1 / a recorded probability: equal probabilities, equal weights, whatever
    # the float rounding of the division.
    levels, stratum = np.unique(np.round(wt, 6), return_inverse=True)
    members = stratum[None, :] == np.arange(levels.size)[:, None]
    counts = np.cumsum(members, axis=1)
    estimated = counts * levels[:, None]
    total = estimated.sum(axis=0)
    share = estimated / np.where(total > 0, total, 1)
    level = delta / max(1, levels.size)
    upper = (share * upper_bounds(np.cumsum(members & w, axis=1), counts, level)).sum(axis=0)
    best_case = (share * upper_bounds(np.zeros_like(counts), counts, level)).sum(axis=0)
    risk = np.cumsum(wt * w) / np.where(total > 0, total, 1)
    coverage = total / wt.sum() if s.size else total
    at = np.flatnonzero(candidate)
    # Plain Python values: the curve of thousands of labels is built in a few milliseconds.
    columns = zip(
        s[at].tolist(),
        (at + 1).tolist(),
        coverage[at].tolist(),
        risk[at].tolist(),
        upper[at].tolist(),
        (upper[at] < target).tolist(),
        (best_case[at] < target).tolist(),
        strict=True,
    )
    return [CurvePoint(*row) for row in columns]


def certify(
    scores: ArrayLike,
    wrong: ArrayLike,
    weights: ArrayLike | None = None,
    *,
    target: float,
    delta: float = DELTA,
    min_accepts: int = 0,
) -> Certification:
    """The certified threshold of one judge from its labelled verdicts: one row per
    verdict the judge accepted, its ``score`` in [0, 1], ``wrong`` when the answer was in
    fact not acceptable, its ``weight`` (1 / audit probability; 1 otherwise). The lowest
    threshold reached by fixed-sequence testing from the strictest testable one down (at
    least ``max(min_accepts, min_accepts_needed(target))`` labels at or above it); none
    when that first test fails or no threshold is testable."""
    floor = max(min_accepts, min_accepts_needed(target, delta))
    curve = coverage_risk_curve(scores, wrong, weights, target=target, delta=delta)
    labelled = curve[-1].accepted if curve else 0

    def result(point: CurvePoint | None, reason: str) -> Certification:
        return Certification(
            target=target,
            delta=delta,
            labelled=labelled,
            min_accepts=floor,
            curve=tuple(curve),
            threshold=None if point is None else point.threshold,
            automated=0.0 if point is None else point.coverage,
            risk=None if point is None else point.risk,
            upper=None if point is None else point.upper,
            reason=reason,
        )

    first = next((p for p in curve if p.testable and p.accepted >= floor), None)
    if first is None:
        return result(None, f"{labelled} labelled verdicts are too few at this target")
    positions = np.array([point.accepted - 1 for point in curve])
    candidate = np.zeros(labelled, dtype=bool)
    candidate[positions] = True
    rejected = np.zeros(labelled, dtype=bool)
    rejected[positions] = [point.rejected for point in curve]
    last = int(fixed_sequence(rejected, candidate, first.accepted - 1))
    if last < 0:
        return result(None, "the strictest testable threshold is not under the target")
    return result(curve[int(np.searchsorted(positions, last))], "")


def certify_batch(
    scores: FloatArray,
    wrong: BoolArray,
    *,
    target: float,
    delta: float = DELTA,
    min_accepts: int = 0,
) -> FloatArray:
    """``certify`` for many unweighted calibration sets at once (one per row, for the
    simulations): the certified threshold per row, NaN where none is."""
    floor = max(min_accepts, min_accepts_needed(target, delta))
    order = np.argsort(-scores, axis=-1, kind="stable")
    s = np.take_along_axis(scores, order, axis=-1)
    wrongs = np.cumsum(np.take_along_axis(wrong, order, axis=-1), axis=-1)
    accepted = np.arange(1, s.shape[-1] + 1)
    rejected = binomial_pvalues(wrongs, accepted, target) <= delta
    candidate = np.concatenate([s[..., :-1] != s[..., 1:], np.ones_like(s[..., :1], bool)], -1)
    last = fixed_sequence(rejected, candidate, floor - 1)
    found = np.take_along_axis(s, np.maximum(last, 0)[..., None], axis=-1)[..., 0]
    return np.where(last >= 0, found, np.nan)
