"""Issue 27: the exact binomial interval and McNemar's exact test, on known values."""

from __future__ import annotations

import pytest

from evidence_app.trust.stats import clopper_pearson, mcnemar_exact


def test_clopper_pearson_matches_published_values() -> None:
    # 0 of 100: the upper bound is 1 - 0.025 ** (1 / 100) (the "rule of three" region).
    zero = clopper_pearson(0, 100)
    assert zero.estimate == 0.0 and zero.low == 0.0
    assert zero.high == pytest.approx(1 - 0.025 ** (1 / 100), rel=1e-9)
    # 5 of 50: the textbook exact interval (0.0333, 0.2181).
    five = clopper_pearson(5, 50)
    assert five.low == pytest.approx(0.03328, abs=1e-4)
    assert five.high == pytest.approx(0.21814, abs=1e-4)


def test_clopper_pearson_with_no_trials_is_unknown_and_refuses_impossible_counts() -> None:
    assert not clopper_pearson(0, 0).known
    with pytest.raises(ValueError):
        clopper_pearson(3, 2)


def test_mcnemar_exact_is_the_two_sided_sign_test_on_discordant_pairs() -> None:
    # 1 against 9 discordant: 2 * P(X <= 1 | n=10, p=1/2) = 2 * 11 / 1024.
    assert mcnemar_exact(1, 9) == pytest.approx(22 / 1024)
    assert mcnemar_exact(5, 5) == 1.0
    assert mcnemar_exact(0, 0) == 1.0
