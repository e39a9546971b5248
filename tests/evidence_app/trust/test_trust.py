"""Issue 27, item 2: the certified false-accept and false-reject rates, computed from
verdict and audit rows in the database."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from evidence_app.models import ValidationSnapshot
from evidence_app.trust.rates import GroupTrust, RateTrust, trust_report, trust_window
from evidence_app.trust.stats import (
    PredictionStratum,
    Stratum,
    audits_needed,
    clopper_pearson,
    ppi_interval,
    stratified_interval,
)
from tests.evidence_app.trust_helpers import MODEL, TEMPLATE, verdicts
from tests.factories import TaskFactory

pytestmark = pytest.mark.django_db


def only_group() -> GroupTrust:
    (group,) = trust_report().groups
    return group


def accepts(group: GroupTrust) -> RateTrust:
    assert group.window.false_accepts is not None
    return group.window.false_accepts


def test_one_rate_gives_the_exact_interval_over_the_judged_audits() -> None:
    """Issue 27, item 2: 400 auto-accepts at one audit rate, 40 judged with 2 not correct:
    k/n = 5 % with the Clopper–Pearson interval; the unaudited verdicts count as eligible
    only."""
    verdicts(400, probability=0.1, audits=[False, False] + [True] * 38)
    group = only_group()
    rate = accepts(group)
    assert (group.template_version, group.model_name) == (TEMPLATE, MODEL)
    assert (rate.eligible, rate.judged, rate.wrong, group.window.outstanding) == (400, 40, 2, 0)
    assert rate.method == "exact"
    exact = clopper_pearson(2, 40)
    assert rate.interval.estimate == pytest.approx(0.05)
    assert (rate.interval.low, rate.interval.high) == pytest.approx((exact.low, exact.high))
    assert group.window.false_rejects is None
    # 5 % observed against a 2 % target: no number of audits at that rate certifies it.
    assert rate.target == 0.02 and rate.audits_needed is None and not rate.certified


def test_open_audits_are_outstanding_never_judged() -> None:
    """Issue 27, item 2: an open audit is counted as outstanding and changes neither the
    estimate nor the number of judged audits."""
    verdicts(100, probability=0.2, audits=[True] * 10 + [None] * 5)
    group = only_group()
    rate = accepts(group)
    assert (rate.judged, rate.wrong, group.window.outstanding) == (10, 0, 5)
    assert rate.interval.estimate == 0.0
    assert rate.interval.high == pytest.approx(clopper_pearson(0, 10).high)


def test_changed_rates_weigh_each_stratum_by_its_share_of_verdicts() -> None:
    """Issue 27, item 2: 100 verdicts audited at 50 % (10 of 50 wrong) and 900 at 5 %
    (0 of 45 wrong): the estimate is 0.1 × 20 % + 0.9 × 0 % = 2 %, not the pooled
    10 / 95, with the Bonferroni interval."""
    verdicts(100, probability=0.5, audits=[False] * 10 + [True] * 40)
    verdicts(900, probability=0.05, audits=[True] * 45)
    rate = accepts(only_group())
    assert rate.method == "stratified" and rate.eligible == 1000 and rate.judged == 95
    assert rate.interval.estimate == pytest.approx(0.02)
    expected = stratified_interval([Stratum(100, 50, 10), Stratum(900, 45, 0)])
    assert rate.interval == expected
    low_a = clopper_pearson(10, 50, level=0.975)
    high_b = clopper_pearson(0, 45, level=0.975)
    assert expected.low == pytest.approx(0.1 * low_a.low)
    assert expected.high == pytest.approx(0.1 * low_a.high + 0.9 * high_b.high)


def test_no_audits_is_unknown_with_the_audits_needed_from_zero() -> None:
    """Issue 27, item 2: eligible verdicts but nothing judged: the rate is unknown, and
    the audits needed are those that bring the exact upper bound of 0 wrong under 2 %
    (183 audits: 1 - 0.025^(1/183) < 0.02), at a 5 % audit rate 3,660 verdicts."""
    verdicts(30, probability=0.05, audits=[None])
    group = only_group()
    rate = accepts(group)
    assert not rate.interval.known and group.window.outstanding == 1
    assert rate.audits_needed == 183
    assert clopper_pearson(0, 183).high < 0.02 <= clopper_pearson(0, 182).high  # type: ignore[operator]
    assert rate.verdicts_needed == 3660


def test_audits_needed_assume_the_observed_rate_and_certify_once_under() -> None:
    """Issue 27, item 2: 1 wrong in 100 judged (1 %): the count is the smallest m whose
    bound at 1 % of 100 + m audits falls under 2 %; a bound already under is certified."""
    strata = [Stratum(2000, 100, 1)]
    needed = audits_needed(strata, target=0.02, into=0, probability=0.05)
    assert needed is not None and needed > 0
    grown = [Stratum(2000, 100 + needed, 1 + 0.01 * needed)]
    fewer = [Stratum(2000, 99 + needed, 1 + 0.01 * (needed - 1))]
    assert stratified_interval(grown).high < 0.02 <= stratified_interval(fewer).high  # type: ignore[operator]
    assert audits_needed([Stratum(5000, 2000, 2)], target=0.02, into=0, probability=0.4) == 0
    assert audits_needed(strata, target=0.02, into=0, probability=0.0) is None


def test_target_per_request_and_certified_when_the_bound_is_under() -> None:
    """Issue 27, item 2: 0 wrong in 400 judged: the upper bound (0.92 %) is under a 2 %
    target (certified) but not under a 0.5 % one (more audits needed)."""
    verdicts(800, probability=0.5, audits=[True] * 400)
    rate = accepts(only_group())
    assert rate.certified and rate.audits_needed == 0
    strict = trust_report(target=0.005).groups[0].window.false_accepts
    assert strict is not None and not strict.certified
    assert strict.audits_needed == 736 - 400
    assert clopper_pearson(0, 736).high < 0.005 <= clopper_pearson(0, 735).high  # type: ignore[operator]
    assert strict.verdicts_needed == 2 * (736 - 400)


def test_false_rejects_count_rejected_answers_judged_correct() -> None:
    """Issue 27, item 2: on auto-rejected verdicts a wrong verdict is an answer the person
    judged correct."""
    verdicts(50, probability=1.0, route="auto_rejected", audits=[True] * 3 + [False] * 47)
    group = only_group()
    rejects = group.window.false_rejects
    assert group.window.false_accepts is None and rejects is not None
    assert (rejects.judged, rejects.wrong) == (50, 3)
    assert rejects.interval.estimate == pytest.approx(0.06)


def test_groups_by_model_window_and_periods() -> None:
    """Issue 27, item 2: one group per template version × model; verdicts older than 30
    days are outside the headline window but in the weekly rows of their week; ineligible
    verdicts (sent to a person, replays) are left out."""
    verdicts(20, probability=0.5, audits=[True] * 10)
    verdicts(10, probability=0.5, audits=[False] * 2, model="test:other")
    verdicts(5, probability=0.5, audits=[True] * 5, when=timezone.now() - timedelta(days=40))
    ValidationSnapshot.objects.create(
        task=TaskFactory(),
        attempt_index=1,
        status="accepted",
        route="to_person",
        template_version=TEMPLATE,
        model_name=MODEL,
    )
    report = trust_report(period="week")
    by_model = {g.model_name: g for g in report.groups}
    assert set(by_model) == {MODEL, "test:other"}
    assert accepts(by_model[MODEL]).eligible == 20
    weekly = [p.false_accepts.eligible for p in by_model[MODEL].periods if p.false_accepts]
    assert sum(weekly) == 25 and len(weekly) >= 2
    assert by_model[MODEL].periods[0].start >= by_model[MODEL].periods[-1].start  # type: ignore[operator]
    assert [g.model_name for g in trust_window()] == [MODEL, "test:other"]
    with pytest.raises(ValueError):
        trust_report(period="year")


def test_prediction_powered_estimate_needs_a_second_judge_on_every_verdict() -> None:
    """Issue 27, item 2: with a second judge's score on every eligible verdict the
    prediction-powered estimate is mean(1 - score) over all plus mean(label - (1 - score))
    over the judged; one verdict without a second judge and it is not offered."""
    scores: list[float | None] = [0.2, 0.4, 0.9, 0.8, 0.95, 0.9] + [0.9] * 14
    audits: list[bool | None] = [False, True, True, True, True, True]
    verdicts(20, probability=0.3, audits=audits, second_scores=scores)
    rate = accepts(only_group())
    assert rate.ppi is not None
    predicted = [1 - s for s in scores if s is not None]
    residual = [(0.0 if ok else 1.0) - (1 - s) for ok, s in zip(audits, scores, strict=False)]  # type: ignore[operator]
    expected = ppi_interval(
        [
            PredictionStratum(
                20,
                sum(predicted),
                sum(p * p for p in predicted),
                6,
                sum(residual),
                sum(r * r for r in residual),
            )
        ]
    )
    assert rate.ppi.estimate == pytest.approx(expected.estimate)
    assert rate.ppi.high == pytest.approx(expected.high)
    assert rate.ppi.estimate == pytest.approx(sum(predicted) / 20 + sum(residual) / 6)

    verdicts(5, probability=0.3, audits=[True, True])
    assert accepts(only_group()).ppi is None


def test_a_second_judge_without_a_score_leaves_out_the_prediction_powered_estimate() -> None:
    """Issue 27, item 2: a second-judge snapshot with no score (its call failed) makes
    the predictor unknown for that verdict: no PPI for the group."""
    verdicts(4, probability=1.0, audits=[True] * 4, second_scores=[0.9, None, 0.8, 0.9])
    assert accepts(only_group()).ppi is None


def test_metrics_carry_the_false_accept_rate_its_bounds_and_the_audits(client: Client) -> None:
    """Issue 27, item 2: /metrics shows per template version and model the estimated
    false-accept rate of the last 30 days, its 95 % bounds, audits judged and outstanding;
    a group with nothing judged has no rate (unknown, not zero)."""
    verdicts(100, probability=0.5, audits=[False] * 2 + [True] * 48 + [None] * 3)
    verdicts(10, probability=0.5, audits=[None] * 2, model="test:unaudited")
    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(client.get("/metrics").content.decode())
        for sample in family.samples
    }
    group = (("model", MODEL), ("template_version", TEMPLATE))
    exact = clopper_pearson(2, 50)
    assert samples[("evidentia_false_accept_rate", group)] == pytest.approx(0.04)
    assert samples[("evidentia_false_accept_rate_upper", group)] == pytest.approx(exact.high)
    assert samples[("evidentia_false_accept_rate_lower", group)] == pytest.approx(exact.low)
    accepted = (("model", MODEL), ("route", "auto_accepted"), ("template_version", TEMPLATE))
    assert samples[("evidentia_audits_judged_total", accepted)] == 50
    # Issue 43: outstanding without their route (one open audit's count would tell it).
    assert samples[("evidentia_audits_outstanding", group)] == 3
    unaudited = (("model", "test:unaudited"), ("template_version", TEMPLATE))
    assert ("evidentia_false_accept_rate", unaudited) not in samples
    assert samples[("evidentia_audits_outstanding", unaudited)] == 2
