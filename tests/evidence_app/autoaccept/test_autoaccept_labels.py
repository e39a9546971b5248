"""Issue 43, item 2: only blind, independent labels certify. A requester's own feedback,
a reviewer's decision on a verdict they saw and an audit judged by the task's requester
are kept and shown apart on Trust, and never enter a certificate, its curve, the drift
sequence or the shadow figures."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from evidence_app.autoaccept.selectors import (
    JudgeKey,
    SeenVerdictLabels,
    judge_audits_since,
    labelled_verdicts,
    seen_verdict_labels,
)
from evidence_app.jobs import certify_thresholds_job
from evidence_app.models import Audit, AutoAcceptThreshold, ValidationSnapshot
from evidence_app.validator.templates import get_template
from tasks_app.models import Feedback
from tests.evidence_app.trust_helpers import labelled_accepts
from tests.evidence_app.validation_helpers import JUDGE
from tests.factories import TaskFactory, UserFactory

pytestmark = pytest.mark.django_db


def _key() -> JudgeKey:
    return JudgeKey(get_template("default").version, JUDGE)


def _self_marked(requester: Any, count: int, *, action: str = "satisfied") -> None:
    """``count`` external answers of ``requester``'s agent accepted by the test judge at
    0.95, each then marked by ``requester`` (the attack of issue 43: invented sources,
    900 EUR where the handbook says 150, marked satisfied)."""
    when = timezone.now() - timedelta(days=1)
    for i in range(count):
        task = TaskFactory(owner=requester, status="closed", agent="external")
        ValidationSnapshot.objects.create(
            task=task,
            attempt_index=1,
            status="accepted",
            score=0.95,
            route="auto_accepted",
            template_version=_key().template_version,
            model_name=JUDGE,
            created_at=when + timedelta(seconds=i),
        )
        Feedback.objects.create(
            task=task,
            author=requester,
            action=action,
            state="applied",
            created_at=when + timedelta(seconds=i, milliseconds=500),
        )


def test_a_requester_marking_their_own_answers_satisfied_certifies_nothing(
    requester: Any,
) -> None:
    """Issue 43, item 2: 160 self-marked answers (149 would certify 2 % were they
    labels) leave the judge with no labels and no threshold."""
    _self_marked(requester, 160)
    assert labelled_verdicts() == {}
    certify_thresholds_job()
    assert not AutoAcceptThreshold.objects.filter(threshold__isnull=False).exists()
    assert seen_verdict_labels()[_key()] == SeenVerdictLabels(
        decisions=160, wrong=0, by_requester=160
    )


def test_a_reviewers_decision_on_a_verdict_they_saw_labels_nothing(reviewer: Any) -> None:
    """Issue 43, item 2: a reviewer's satisfied or revise after seeing the verdict is
    counted apart, not a label."""
    _self_marked(reviewer, 2)  # a reviewer's own tasks: by_requester too
    other = TaskFactory(status="closed")
    ValidationSnapshot.objects.create(
        task=other,
        attempt_index=1,
        status="accepted",
        score=0.8,
        template_version=_key().template_version,
        model_name=JUDGE,
        created_at=timezone.now() - timedelta(hours=1),
    )
    Feedback.objects.create(task=other, author=reviewer, action="revise", state="applied")
    assert labelled_verdicts() == {}
    assert seen_verdict_labels()[_key()] == SeenVerdictLabels(decisions=3, wrong=1, by_requester=2)


def test_audits_judged_by_the_tasks_requester_certify_nothing_and_drive_no_drift() -> None:
    """Issue 43, item 2: audits whose judge is the task's requester (who submits its
    attempts) are no labels, whatever they say; the same audits by another person are."""
    owner = UserFactory()
    rows = labelled_accepts([0.9 + (i % 10) / 100 for i in range(200)], [False] * 200, owner=owner)
    Audit.objects.filter(snapshot__in=rows).update(reviewer=owner)
    assert labelled_verdicts() == {}
    assert judge_audits_since(_key(), timezone.now() - timedelta(days=30)) == []
    certify_thresholds_job()
    assert not AutoAcceptThreshold.objects.filter(threshold__isnull=False).exists()
    assert seen_verdict_labels()[_key()].not_blind == 200
    Audit.objects.filter(snapshot__in=rows).update(reviewer=UserFactory())
    assert len(labelled_verdicts()[_key()]) == 200
    certify_thresholds_job()
    assert AutoAcceptThreshold.objects.get(state="proposed").threshold == pytest.approx(0.9)


def test_trust_shows_the_labels_that_do_not_count_apart(
    requester: Any, operator: Any, client: Client
) -> None:
    """Issue 43, item 2: Trust names the decisions and requester feedback on a judge's
    accepts, and says they never certify."""
    _self_marked(requester, 3)
    client.force_login(operator)
    page = client.get("/ops/trust/").content.decode()
    assert "3 decisions on its accepts (0 revise or abandon; 3 the requester's own" in page
    assert "never certify" in page
