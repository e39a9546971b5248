"""Issue 27, item 2: the intervals the product shows cover the true false-accept rate.

Each test simulates 200 periods of 10,000 auto-accepted verdicts with a known false-accept
rate, draws each verdict for an audit with a known probability (Bernoulli sampling, as
``evidence_app.trust.audits`` does), computes the interval with the functions of
``evidence_app.trust.stats`` that the operator page uses, and counts how often it contains the
true rate. Seeded, vectorised with numpy: a few seconds at most."""

from __future__ import annotations

import numpy as np
import pytest

from evidence_app.trust.stats import (
    Interval,
    PredictionStratum,
    Stratum,
    clopper_pearson,
    ppi_interval,
    stratified_interval,
)

RUNS = 200
VERDICTS = 10_000


def _coverage(intervals: list[Interval], truth: float) -> float:
    inside = [
        i.low is not None and i.high is not None and i.low <= truth <= i.high for i in intervals
    ]
    return sum(inside) / len(inside)


def _width(intervals: list[Interval]) -> float:
    return float(
        np.mean([i.high - i.low for i in intervals if i.high is not None and i.low is not None])
    )


def test_one_audit_rate_exact_interval_covers_the_true_false_accept_rate() -> None:
    """Issue 27, item 2: 3 % false accepts, 5 % audited: the exact interval contains the
    true rate in at least 93 % of 200 simulated periods."""
    rng = np.random.default_rng(2701)
    wrong = rng.random((RUNS, VERDICTS)) < 0.03
    audited = rng.random((RUNS, VERDICTS)) < 0.05
    judged = audited.sum(axis=1)
    events = (wrong & audited).sum(axis=1)
    intervals = [
        stratified_interval([Stratum(VERDICTS, int(n), int(k))])
        for n, k in zip(judged, events, strict=True)
    ]
    coverage = _coverage(intervals, 0.03)
    print(f"one rate: coverage {coverage:.3f}, mean width {_width(intervals):.4f}")
    assert coverage >= 0.93
    # One stratum is exactly the Clopper–Pearson interval.
    exact = clopper_pearson(int(events[0]), int(judged[0]))
    assert (intervals[0].low, intervals[0].high) == pytest.approx((exact.low, exact.high))


def test_changed_audit_rate_stratified_interval_covers_and_the_pooled_one_does_not() -> None:
    """Issue 27, item 2: mid-period the audit rate goes from 2 % to 10 % while the
    false-accept rate drops from 5 % to 1 % (true rate over the period: 3 %). Weighing each
    stratum by its share of verdicts covers at least 93 % of the time; pooling the audits
    as if they were one sample does not (it over-weighs the later, better half)."""
    rng = np.random.default_rng(2702)
    half = VERDICTS // 2
    wrong = np.concatenate(
        [rng.random((RUNS, half)) < 0.05, rng.random((RUNS, half)) < 0.01], axis=1
    )
    chance = np.concatenate([np.full(half, 0.02), np.full(half, 0.10)])
    audited = rng.random((RUNS, VERDICTS)) < chance
    first = (audited[:, :half].sum(axis=1), (wrong & audited)[:, :half].sum(axis=1))
    second = (audited[:, half:].sum(axis=1), (wrong & audited)[:, half:].sum(axis=1))
    stratified = []
    pooled = []
    for run in range(RUNS):
        strata = [
            Stratum(half, int(first[0][run]), int(first[1][run])),
            Stratum(half, int(second[0][run]), int(second[1][run])),
        ]
        stratified.append(stratified_interval(strata))
        pooled.append(
            clopper_pearson(
                int(first[1][run] + second[1][run]), int(first[0][run] + second[0][run])
            )
        )
    coverage = _coverage(stratified, 0.03)
    print(
        f"changed rate: stratified coverage {coverage:.3f} (mean width {_width(stratified):.4f}),"
        f" pooled coverage {_coverage(pooled, 0.03):.3f}"
    )
    assert coverage >= 0.93
    assert _coverage(pooled, 0.03) < 0.93


def test_prediction_powered_interval_covers_and_is_narrower_than_the_plain_one() -> None:
    """Issue 27, item 2: with a second judge whose doubt tracks the false accepts (its
    score is low on most wrong answers), the prediction-powered interval covers at least
    93 % of the time and is narrower on average than the exact interval on the same
    audits."""
    rng = np.random.default_rng(2703)
    wrong = rng.random((RUNS, VERDICTS)) < 0.03
    audited = rng.random((RUNS, VERDICTS)) < 0.05
    # The second judge's score in [0, 1]; the predictor of a false accept is 1 - score.
    score = np.where(wrong, rng.beta(3, 3, (RUNS, VERDICTS)), 1 - rng.beta(1, 20, (RUNS, VERDICTS)))
    predicted = 1 - score
    residual = np.where(audited, wrong - predicted, 0.0)
    judged = audited.sum(axis=1)
    events = (wrong & audited).sum(axis=1)
    sums = zip(
        predicted.sum(axis=1),
        (predicted**2).sum(axis=1),
        judged,
        residual.sum(axis=1),
        (residual**2).sum(axis=1),
        strict=True,
    )
    powered = [
        ppi_interval([PredictionStratum(VERDICTS, float(a), float(b), int(n), float(c), float(d))])
        for a, b, n, c, d in sums
    ]
    plain = [clopper_pearson(int(k), int(n)) for k, n in zip(events, judged, strict=True)]
    coverage = _coverage(powered, 0.03)
    print(
        f"prediction-powered: coverage {coverage:.3f}, mean width {_width(powered):.4f};"
        f" exact: coverage {_coverage(plain, 0.03):.3f}, mean width {_width(plain):.4f}"
    )
    assert coverage >= 0.93
    assert _width(powered) < _width(plain)
    assert np.mean([i.estimate for i in powered]) == pytest.approx(0.03, abs=0.002)
