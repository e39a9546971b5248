"""Exact binomial statistics for measuring the judge (issue 27), on scipy.

Plain functions of counts: the certified rates (``evidence_app.trust``), the judge gate
and the agreement pages build on them. Intervals are two-sided at ``level`` (0.95)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from scipy.stats import binomtest

__all__ = ["Interval", "clopper_pearson", "cohen_kappa", "mcnemar_exact"]


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
    ci = binomtest(k, n).proportion_ci(confidence_level=level, method="exact")
    return Interval(k / n, float(ci.low), float(ci.high))


def mcnemar_exact(only_first: int, only_second: int) -> float:
    """McNemar's exact test on paired outcomes: the two-sided p-value that the two
    judges are equally often right, from the cases only the first got right and the
    cases only the second got right (the concordant cases carry no information).
    1.0 when the two never differ."""
    discordant = only_first + only_second
    if discordant == 0:
        return 1.0
    return float(binomtest(only_first, discordant, 0.5).pvalue)


def cohen_kappa(pairs: Sequence[tuple[Hashable, Hashable]]) -> float | None:
    """Cohen's kappa of two raters over any set of categories: ``(first, second)`` per
    item. ``(p_o - p_e) / (1 - p_e)``, with ``p_e`` the agreement expected from each
    rater's own category shares. None when there are no pairs or when chance agreement
    is 1 (both raters always gave the same single category)."""
    n = len(pairs)
    if n == 0:
        return None
    observed = sum(1 for a, b in pairs if a == b) / n
    first = Counter(a for a, _ in pairs)
    second = Counter(b for _, b in pairs)
    expected = sum(first[c] * second[c] for c in first) / (n * n)
    if expected >= 1:
        return None
    return (observed - expected) / (1 - expected)
