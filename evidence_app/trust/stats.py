"""Exact binomial statistics for measuring the judge, on scipy.

Plain functions of counts: the certified rates (``evidence_app.trust.rates``), the judge gate
and the agreement pages build on them. Intervals are two-sided at ``level`` (0.95).

The certified rates sample each verdict with a recorded probability; verdicts drawn with
the same probability form a *stratum*. ``stratified_interval`` weighs each stratum by its
share of the verdicts (the stratified, Horvitz–Thompson-type estimator) and bounds it by
Bonferroni: each stratum's exact interval at level ``1 - alpha / H``, the bounds summed
with the same weights. ``ppi_interval`` is the prediction-powered mean (Angelopoulos et
al., arXiv 2301.09633) per stratum, from sums only, so a simulation can call it too."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

# scipy is imported where a figure is computed, not with this module: scipy.stats costs
# about 3 s of CPU to import, and every process loads this module at start (the metrics
# read the trust figures) while few ever compute one. The beta and normal quantiles come
# from scipy.special (betaincinv is beta.ppf, ndtri is norm.ppf), a lighter import.

__all__ = [
    "Interval",
    "PredictionStratum",
    "Stratum",
    "agreement_rate",
    "audits_needed",
    "clopper_pearson",
    "cohen_kappa",
    "mcnemar_exact",
    "ppi_interval",
    "stratified_interval",
]

# No count of audits beyond this is worth reporting: "not reachable" instead.
AUDITS_NEEDED_CAP = 10_000_000


@dataclass(frozen=True)
class Interval:
    """An estimate with its confidence interval; all None when nothing was observed."""

    estimate: float | None
    low: float | None
    high: float | None

    @property
    def known(self) -> bool:
        return self.estimate is not None


def clopper_pearson(k: int, n: int, *, level: float = 0.95) -> Interval:
    """The exact (Clopper–Pearson) interval of a binomial share: ``k`` events in ``n``
    independent trials. Covers the true share at least ``level`` of the time, for every
    share and every ``n``; conservative, never too narrow."""
    if n <= 0:
        return Interval(None, None, None)
    if not 0 <= k <= n:
        raise ValueError(f"k={k} is not between 0 and n={n}")
    # The beta quantiles are the exact interval (what binomtest's proportion_ci computes),
    # without its p-value: the coverage simulation calls this hundreds of times.
    alpha = 1 - level
    return Interval(k / n, _lower(k, n, alpha), _upper(k, n, alpha))


def mcnemar_exact(only_first: int, only_second: int) -> float:
    """McNemar's exact test on paired outcomes: the two-sided p-value that the two
    judges are equally often right, from the cases only the first got right and the
    cases only the second got right (the concordant cases carry no information).
    1.0 when the two never differ."""
    discordant = only_first + only_second
    if discordant == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(binomtest(only_first, discordant, 0.5).pvalue)


@dataclass(frozen=True)
class Stratum:
    """The verdicts drawn with one probability: ``eligible`` verdicts, ``judged`` of them
    audited and judged, ``events`` of those judged wrong (false accepts or rejects)."""

    eligible: int
    judged: int
    events: float


def _upper(events: float, trials: float, alpha: float) -> float:
    """The exact upper bound, with the beta quantiles extended to a fractional count of
    events (used only to project future audits)."""
    if events >= trials:
        return 1.0
    from scipy.special import betaincinv

    return float(betaincinv(events + 1, trials - events, 1 - alpha / 2))


def _lower(events: float, trials: float, alpha: float) -> float:
    if events <= 0:
        return 0.0
    from scipy.special import betaincinv

    return float(betaincinv(events, trials - events + 1, alpha / 2))


def stratified_interval(strata: Sequence[Stratum], *, level: float = 0.95) -> Interval:
    """The share of wrong verdicts over every eligible verdict of ``strata``: each
    stratum's share ``events / judged`` weighed by its share of eligible verdicts.

    One stratum: the exact Clopper–Pearson interval. Several (the rate changed): each
    audited stratum's exact interval at level ``1 - (1 - level) / H`` (H audited strata),
    bounds summed with the weights; all H intervals cover at once with probability at
    least ``level`` (Bonferroni), so the weighted sum does too. A stratum without judged
    audits contributes [0, 1] (it can be anything) and leaves the estimate unknown."""
    total = sum(s.eligible for s in strata)
    if total <= 0 or not any(s.judged for s in strata):
        return Interval(None, None, None)
    audited = sum(1 for s in strata if s.eligible and s.judged)
    alpha = (1 - level) / audited
    estimate: float | None = 0.0
    low = high = 0.0
    for s in strata:
        if not s.eligible:
            continue
        weight = s.eligible / total
        if not s.judged:
            estimate = None
            high += weight
            continue
        if estimate is not None:
            estimate += weight * s.events / s.judged
        low += weight * _lower(s.events, s.judged, alpha)
        high += weight * _upper(s.events, s.judged, alpha)
    return Interval(estimate, low, min(1.0, high))


def audits_needed(
    strata: Sequence[Stratum],
    *,
    target: float,
    into: int,
    probability: float,
    level: float = 0.95,
) -> int | None:
    """How many more judged audits bring the interval's upper bound under ``target``,
    if they come into stratum ``into`` (the current audit rate, ``probability``) and show
    the share observed so far (none wrong when nothing was judged yet: the rule-of-three
    count). Each audit brings ``1 / probability`` verdicts with it. 0 when the bound is
    already under; None when it never gets there (observed share at or above target)."""
    if not 0 <= into < len(strata) or probability <= 0:
        return None
    observed = stratified_interval(strata, level=level)
    if observed.high is not None and observed.high < target:
        return 0
    judged = sum(s.judged for s in strata)
    rate = sum(s.events for s in strata) / judged if judged else 0.0
    if observed.estimate is not None:
        rate = observed.estimate
    if rate >= target:
        return None

    def bound(more: int) -> float:
        grown = list(strata)
        s = grown[into]
        grown[into] = Stratum(
            eligible=s.eligible + math.ceil(more / probability),
            judged=s.judged + more,
            events=s.events + rate * more,
        )
        high = stratified_interval(grown, level=level).high
        return 1.0 if high is None else high

    low, high = 0, 1
    while bound(high) >= target:
        low, high = high, high * 2
        if high > AUDITS_NEEDED_CAP:
            return None
    while high - low > 1:  # bound(low) >= target > bound(high)
        middle = (low + high) // 2
        if bound(middle) < target:
            high = middle
        else:
            low = middle
    return high


@dataclass(frozen=True)
class PredictionStratum:
    """Sums for the prediction-powered mean of one stratum: the predictor over every
    eligible verdict (count, sum, sum of squares) and the residual label - predictor over
    the judged ones (count, sum, sum of squares)."""

    eligible: int
    predicted_sum: float
    predicted_squares: float
    judged: int
    residual_sum: float
    residual_squares: float


def _variance(total: float, squares: float, n: int) -> float:
    if n < 2:
        return 0.0
    return max(0.0, (squares - total * total / n) / (n - 1))


def ppi_interval(strata: Sequence[PredictionStratum], *, level: float = 0.95) -> Interval:
    """The prediction-powered estimate of the mean label (arXiv 2301.09633): the mean
    predictor over every eligible verdict plus the mean residual over the judged ones,
    per stratum, weighed by each stratum's share of eligible verdicts; the interval is
    the normal one of its variance, var(predictor) / N + var(residual) / n per stratum,
    clipped to [0, 1]. Unknown when a stratum has fewer than two judged verdicts."""
    total = sum(s.eligible for s in strata)
    if total <= 0 or any(s.eligible and s.judged < 2 for s in strata):
        return Interval(None, None, None)
    estimate = variance = 0.0
    for s in strata:
        if not s.eligible:
            continue
        weight = s.eligible / total
        estimate += weight * (s.predicted_sum / s.eligible + s.residual_sum / s.judged)
        spread = _variance(s.predicted_sum, s.predicted_squares, s.eligible) / s.eligible
        spread += _variance(s.residual_sum, s.residual_squares, s.judged) / s.judged
        variance += weight * weight * spread
    from scipy.special import ndtri

    half = float(ndtri(1 - (1 - level) / 2)) * math.sqrt(variance)
    # A share lies in [0, 1]; the raw sum can step outside it by chance.
    clipped = min(1.0, max(0.0, estimate))
    return Interval(clipped, max(0.0, estimate - half), min(1.0, estimate + half))


def agreement_rate(pairs: Sequence[tuple[Hashable, Hashable]]) -> float | None:
    """The share of ``(first, second)`` pairs where the two raters agree; None when there
    are no pairs."""
    return sum(1 for a, b in pairs if a == b) / len(pairs) if pairs else None


def cohen_kappa(pairs: Sequence[tuple[Hashable, Hashable]]) -> float | None:
    """Cohen's kappa of two raters over any set of categories: ``(first, second)`` per
    item. ``(p_o - p_e) / (1 - p_e)``, with ``p_e`` the agreement expected from each
    rater's own category shares. None when there are no pairs or when chance agreement
    is 1 (both raters always gave the same single category)."""
    observed = agreement_rate(pairs)
    if observed is None:
        return None
    n = len(pairs)
    first = Counter(a for a, _ in pairs)
    second = Counter(b for _, b in pairs)
    expected = sum(first[c] * second[c] for c in first) / (n * n)
    if expected >= 1:
        return None
    return (observed - expected) / (1 - expected)
