"""Issue 38: the certified auto-accept threshold and the drift rule, on cases whose answer
is known by hand."""

from __future__ import annotations

import numpy as np
import pytest

from evidence_app.autoaccept.certify import certify, certify_batch, min_accepts_needed
from evidence_app.autoaccept.drift import DriftRule, drift_status
from evidence_app.trust.stats import clopper_pearson


def _spread(low: float, high: float, count: int) -> np.ndarray:
    return np.linspace(high, low, count)


def test_fewest_labels_that_certify_are_the_all_right_count_of_the_exact_bound() -> None:
    """Issue 38: 149 right accepts are the fewest with a 95 % bound under 2 % (58 under 5 %
    fall short: 59 needed); one fewer certifies nothing, all of them certify the lot."""
    assert min_accepts_needed(0.02) == 149
    assert min_accepts_needed(0.05) == 59
    assert 1 - 0.05 ** (1 / 149) < 0.02 < 1 - 0.05 ** (1 / 148)

    short = certify(_spread(0.5, 1.0, 148), np.zeros(148, bool), target=0.02)
    assert not short.certified and short.automated == 0.0
    assert "148 labelled verdicts are too few at this target" in short.guarantee

    enough = certify(_spread(0.5, 1.0, 149), np.zeros(149, bool), target=0.02)
    assert enough.threshold == pytest.approx(0.5)
    assert enough.automated == pytest.approx(1.0)
    assert enough.upper == pytest.approx(1 - 0.05 ** (1 / 149))
    assert enough.guarantee.startswith(
        "With 95 % confidence at most 2 % of auto-accepted answers are wrong, "
        "for answers like the 149 labelled ones"
    )


def test_certification_stops_at_the_first_threshold_it_cannot_pass() -> None:
    """Issue 38: 400 right answers score highest, 20 wrong ones next, 2,000 right ones
    below. Over all 2,420 the bound is under 2 % (20 wrong), but testing from the
    strictest threshold down stops inside the wrong ones and never reaches the bottom."""
    scores = np.concatenate(
        [_spread(0.61, 1.0, 400), _spread(0.56, 0.60, 20), _spread(0.0, 0.55, 2000)]
    )
    wrong = np.concatenate([np.zeros(400, bool), np.ones(20, bool), np.zeros(2000, bool)])
    result = certify(scores, wrong, target=0.02)

    assert result.curve[-1].threshold == 0.0 and result.curve[-1].rejected
    assert result.threshold is not None and 0.56 < result.threshold < 0.60
    accepted = scores >= result.threshold
    assert 0 < wrong[accepted].sum() <= 3
    assert result.automated == pytest.approx(accepted.mean())
    assert result.risk == pytest.approx(wrong[accepted].mean())


def test_a_judge_wrong_at_its_most_confident_certifies_nothing() -> None:
    """Issue 38: when the 149 highest scores hold a wrong answer the first test fails and
    nothing is auto-accepted, however good the rest looks."""
    scores = _spread(0.0, 1.0, 3000)
    wrong = np.zeros(3000, bool)
    wrong[0] = True
    result = certify(scores, wrong, target=0.02)
    assert not result.certified
    assert result.guarantee.startswith("No threshold is certified")


def test_audit_weights_form_strata_bounded_together_by_bonferroni() -> None:
    """Issue 38: audits drawn at 10 % (weight 10) and labels of weight 1 are two strata;
    the bound is each stratum's exact bound at 1 - 0.05 / 2, weighed by its estimated
    count (the exact two-sided 95 % interval of issue 27 has that upper end)."""
    scores = np.concatenate([_spread(0.5, 1.0, 300), _spread(0.5, 1.0, 400)])
    wrong = np.zeros(700, bool)
    wrong[[299, 699]] = True  # the lowest score of each stratum
    weights = np.concatenate([np.full(300, 10.0), np.ones(400)])
    result = certify(scores, wrong, weights, target=0.02)

    lowest = result.curve[-1]
    by_hand = (3000 * clopper_pearson(1, 300).high + 400 * clopper_pearson(1, 400).high) / 3400
    assert lowest.upper == pytest.approx(by_hand)
    assert lowest.risk == pytest.approx((10 + 1) / 3400)
    assert lowest.coverage == pytest.approx(1.0) and lowest.rejected
    # At the 149 highest scores, about 64 audits stand for 640 verdicts and their bound
    # alone (0 of 64: 5.6 %) keeps the sum over the target: not yet testable. The
    # sequence starts lower, where the counts allow a pass.
    assert not next(p for p in result.curve if p.accepted == 149).testable
    first = next(p for p in result.curve if p.testable)
    assert first.accepted > 149
    assert result.threshold == pytest.approx(0.5)


def test_equal_weights_certify_as_unweighted_labels() -> None:
    """Issue 38: one audit probability for every label is one stratum, the exact test."""
    rng = np.random.default_rng(5)
    scores = rng.random(1500)
    wrong = rng.random(1500) < 0.2 * (1 - scores) ** 3
    plain = certify(scores, wrong, target=0.02)
    weighted = certify(scores, wrong, np.full(1500, 4.0), target=0.02)
    assert plain.certified
    assert weighted.threshold == plain.threshold
    assert weighted.upper == pytest.approx(plain.upper)


def test_batch_certification_agrees_with_one_at_a_time_ties_included() -> None:
    """Issue 38: the vectorised form the simulations use gives the same thresholds, also
    when scores repeat (rounded to two decimals)."""
    rng = np.random.default_rng(7)
    scores = np.round(rng.random((40, 800)), 2)
    wrong = rng.random((40, 800)) < 0.3 * (1 - scores) ** 2
    batch = certify_batch(scores, wrong, target=0.05)
    single = [certify(s, w, target=0.05).threshold for s, w in zip(scores, wrong, strict=True)]
    assert np.isfinite(batch).sum() >= 10
    assert [None if np.isnan(t) else float(t) for t in batch] == single


def test_labels_outside_the_contract_are_refused() -> None:
    """Issue 38: scores outside [0, 1], weights not positive, unequal lengths."""
    with pytest.raises(ValueError):
        certify([0.5, 1.2], [False, False], target=0.02)
    with pytest.raises(ValueError):
        certify([0.5, 0.7], [False, False], [1.0, 0.0], target=0.02)
    with pytest.raises(ValueError):
        certify([0.5, 0.7], [False], target=0.02)


def test_drift_rule_stops_on_a_run_of_wrong_audits_not_on_a_few_right_ones() -> None:
    """Issue 38: at 2 %, a wrong audit adds ln 2 and the rule stops at 5, so eight wrong
    audits in a row stop a fresh judge, seven do not. Five right audits do not stop it,
    although their exact upper bound (45 %) is far above the target."""
    rule = DriftRule(0.02)
    assert drift_status([True] * 8, rule).stopped_at == 8
    assert not drift_status([True] * 7, rule).stopped
    five = drift_status([False] * 5, rule)
    assert not five.stopped and five.statistic == 0.0
    assert five.upper == pytest.approx(1 - 0.05 ** (1 / 5))


def test_drift_rule_forgets_a_long_healthy_history() -> None:
    """Issue 38: 2,000 right audits do not bank credit: eight wrong ones after them stop
    the judge as fast as at the start."""
    status = drift_status([False] * 2000 + [True] * 8, DriftRule(0.02))
    assert status.stopped_at == 2008
    assert status.rate == pytest.approx(8 / 2008)


def test_weights_from_the_same_probability_form_one_stratum_despite_rounding() -> None:
    """Issue 38: 1 / 0.1 computed two ways is one audit rate, so one exact stratum."""
    rng = np.random.default_rng(3)
    scores = rng.random(600)
    wrong = np.zeros(600, bool)
    weights = np.where(np.arange(600) % 2 == 0, 1 / 0.1, 10.000000000000002)
    assert len(set(weights.tolist())) == 2
    result = certify(scores, wrong, weights, target=0.02)
    assert result.curve[-1].upper == pytest.approx(1 - 0.05 ** (1 / 600))
