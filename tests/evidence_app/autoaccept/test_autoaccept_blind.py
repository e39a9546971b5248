"""Issue 38, item 2 (with issue 36's blind audits): a judgement given after its judge read
the verdict (not blind) labels nothing. The same verdicts with the same wrong judgement
give another certified threshold, another drift decision and other shadow figures
depending on whether that judgement was blind; its claim labels count no more than its
call. The decisive judgement goes through the product: a verdict drawn by the real
validation service, a read of the task recorded as the page records it, audit_judge."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from evidence_app.autoaccept.selectors import shadow_report
from evidence_app.autoaccept.services import threshold_approve, threshold_shadow_start
from evidence_app.jobs import certify_thresholds_job
from evidence_app.judge_bench.from_reviews import labelled_cases
from evidence_app.models import (
    Audit,
    AutoAcceptThreshold,
    ThresholdState,
)
from evidence_app.trust.audits import audit_judge
from evidence_app.trust.blinding import audit_exposures_record
from evidence_app.trust.claim_agreement import claim_agreement_stats
from tests.audit_helpers import drawn_audit
from tests.evidence_app.trust_helpers import labelled_accepts

pytestmark = pytest.mark.django_db

BLIND = pytest.mark.parametrize("blind", [True, False], ids=["blind", "not-blind"])


def _right_accepts(count: int = 200) -> None:
    """``count`` accepts of the test judge scoring 0.90 to 0.99 (as many at each), two
    days old, each judged right on a blind audit drawn with probability 1: enough to
    certify τ = 0.90 at the 2 % target (149 are needed)."""
    labelled_accepts([0.9 + (i % 10) / 100 for i in range(count)], [False] * count)


def _judged_wrong(reviewer: Any, *, blind: bool, claims: Sequence[dict[str, Any]] = ()) -> Audit:
    """A verdict of the test judge accepted at 0.93, drawn for an audit, and judged wrong
    by ``reviewer``; not blind when they read the task's page while it was open."""
    audit = drawn_audit("accepted")
    assert audit.snapshot.score == pytest.approx(0.93)
    if not blind:
        audit_exposures_record(user=reviewer, task_ids=[audit.task_id], channel="task page")
    judged = audit_judge(
        audit.pk,
        user=reviewer,
        correct=False,
        comment="The budget is 1,500 EUR, not 1,750.",
        claim_labels=claims,
    )
    assert judged.blind is blind
    return judged


@BLIND
def test_a_wrong_judgement_stops_the_certification_only_when_blind(
    reviewer: Any, blind: bool
) -> None:
    """Issue 38, item 2: 200 right accepts at 0.90 or more certify τ = 0.90. One more
    accept at 0.93 judged wrong on a blind audit puts the bound at the strictest
    testable threshold over 2 %: nothing is certified. The same judgement, given after
    its judge read the verdict, is no label: τ = 0.90 on the 200."""
    _right_accepts()
    _judged_wrong(reviewer, blind=blind)
    certify_thresholds_job()
    row = AutoAcceptThreshold.objects.get()
    if blind:
        assert row.threshold is None and row.labelled == 201
        assert "No threshold is certified" in row.guarantee
    else:
        assert row.threshold == pytest.approx(0.9) and row.labelled == 200
        assert row.upper is not None and row.upper < 0.02


@BLIND
def test_claim_labels_of_a_judgement_count_only_when_it_was_blind(
    reviewer: Any, blind: bool
) -> None:
    """Issue 38, item 2: a claim labelled unsupported makes its verdict wrong, unless
    the judgement that labelled it was not blind (its claim labels are part of it)."""
    _right_accepts()
    _judged_wrong(reviewer, blind=blind, claims=({"claim_index": 0, "label": "unsupported"},))
    certify_thresholds_job()
    row = AutoAcceptThreshold.objects.get()
    assert (row.threshold is None) is blind
    assert row.labelled == (201 if blind else 200)


def _approved(operator: Any, settings: Any) -> AutoAcceptThreshold:
    _right_accepts()
    certify_thresholds_job()
    row = AutoAcceptThreshold.objects.get(state=ThresholdState.PROPOSED)
    threshold_shadow_start(threshold_id=row.pk, user=operator)
    settings.AUTOACCEPT_SHADOW_HOURS = 0
    return threshold_approve(threshold_id=row.pk, user=operator)


@BLIND
def test_drift_counts_only_blind_judgements(
    reviewer: Any, operator: Any, settings: Any, blind: bool
) -> None:
    """Issue 38, item 3: at the 2 % target the drift rule stops auto-accept after 8
    wrong audits in a row (7 leave its sum at 4.85 of 5). Seven blind wrong judgements
    of auto-accepts since τ was approved and an eighth: blind, auto-accept stops; given
    after its judge read the verdict, the sequence holds 7 and the judge goes on."""
    row = _approved(operator, settings)
    for _ in range(7):
        _judged_wrong(reviewer, blind=True)
    last = _judged_wrong(reviewer, blind=blind)
    assert last.route == "auto_accepted"
    outcome = certify_thresholds_job()
    row.refresh_from_db()
    assert outcome["stopped"] == (1 if blind else 0)
    assert row.stopped is blind
    assert (row.drift_audits, row.drift_wrong) == ((8, 8) if blind else (7, 7))


@BLIND
def test_shadow_figures_count_only_blind_judgements(
    reviewer: Any, operator: Any, blind: bool
) -> None:
    """Issue 38, item 2: the shadow says "would have auto-accepted N; M of those audited
    were wrong"; a wrong judgement given after its judge read the verdict is not one of
    the M, and the verdict still counts in N."""
    _right_accepts()
    certify_thresholds_job()
    row = AutoAcceptThreshold.objects.get(state=ThresholdState.PROPOSED)
    row = threshold_shadow_start(threshold_id=row.pk, user=operator)
    _judged_wrong(reviewer, blind=blind)
    report = shadow_report(row)
    assert report is not None and report.would_accept == 1 and report.would_send == 0
    assert (report.audited, report.audited_wrong) == ((1, 1) if blind else (0, 0))


@BLIND
def test_the_team_cases_of_judge_bench_and_the_gate_hold_blind_judgements_only(
    reviewer: Any, blind: bool
) -> None:
    """Issue 38, item 7: the judge gate certifies each judge at the target on the team's
    labelled cases; an audit judged after its judge read the verdict is not one of them."""
    audit = _judged_wrong(reviewer, blind=blind)
    ids = {case["id"] for case in labelled_cases()}
    assert (f"team-audit-{audit.pk}" in ids) is blind


@BLIND
def test_claim_agreement_counts_an_audits_claim_labels_only_when_it_was_blind(
    reviewer: Any, blind: bool
) -> None:
    """Issue 36, item 1: the agreement between the validator and people per claim reads
    an audit's claim labels only when the judgement was blind; given after its judge read
    the verdict, they are stored but compared with nothing."""
    audit = _judged_wrong(
        reviewer, blind=blind, claims=({"claim_index": 0, "label": "unsupported"},)
    )
    assert audit.claim_labels.count() == 1
    groups = claim_agreement_stats()
    assert [group.count for group in groups] == ([1] if blind else [])
