"""Issue 47, item 5: no stored code in the text a person reads. The queue's "Why here",
the timeline's reasons, the application's check of a verdict, the claim-label form and
Trust's "Not covered" table say ``insufficient_evidence``, ``unsupported_claim``,
``auto_accepted``, "… kept" and "none" in words."""

from __future__ import annotations

import html as entities
import re
from typing import Any

import pytest
from django.urls import reverse

from tasks_app.models import TaskEvent
from tests.evidence_app.trust_helpers import verdicts
from tests.factories import ValidationSnapshotFactory
from tests.ui.conftest import make_reviewable_task
from tests.ui.test_both_judges_marks import disagreement  # noqa: F401
from tests.ui.test_trust_plain_words import text_of as tagless

pytestmark = pytest.mark.django_db


def text_of(markup: str) -> str:
    return entities.unescape(tagless(markup))


CODES = re.compile(r"\b(insufficient_evidence|unsupported_claim|auto_accepted|auto_rejected)\b")


def test_the_queue_says_why_here_in_words(
    client: Any,
    reviewer: Any,
    disagreement: Any,  # noqa: F811
) -> None:
    """Issue 47, item 5: "Why here: judges disagree: … says insufficient evidence", not
    the stored ``insufficient_evidence``."""
    client.force_login(reviewer)
    html = client.get(reverse("review_queue")).content.decode()
    why = text_of(html.split('class="small muted queue-why"')[1].split("</div>")[0])
    assert "says insufficient evidence" in why
    assert not CODES.search(why)


def test_the_timeline_gives_a_change_s_reason_in_words(client: Any, reviewer: Any) -> None:
    """Issue 47, item 5: the timeline's "validator: insufficient_evidence
    (unsupported_claim)" reads "validator: insufficient evidence (unsupported claim)"."""
    task = make_reviewable_task(reviewer)
    TaskEvent.objects.create(
        task=task,
        from_status="validating",
        to_status="needs_review",
        actor_kind="system",
        reason="validator: insufficient_evidence (unsupported_claim)",
        attempt_index=1,
    )
    client.force_login(reviewer)
    html = client.get(reverse("task_detail", args=[task.pk])).content.decode()
    timeline = text_of(html.split('id="timeline-panel"')[1].split("</section>")[0])
    assert "validator: insufficient evidence (unsupported claim)" in timeline
    assert not CODES.search(timeline)


def test_the_application_s_check_of_a_verdict_is_said_in_words(client: Any, operator: Any) -> None:
    """Issue 47, item 5: "insufficient_evidence: kept" under "Reconciliation" reads as what
    the check did, on the replay page and on the task page."""
    snapshot = ValidationSnapshotFactory(
        status="insufficient_evidence",
        failure_category="unsupported_claim",
        result={
            "model_status": "accepted",
            "reconciliation": [
                "the model's 'accepted' became 'insufficient_evidence'",
                "insufficient_evidence: kept",
            ],
        },
    )
    client.force_login(operator)
    page = text_of(client.get(reverse("ops_validation", args=[snapshot.pk])).content.decode())
    assert "Reconciliation" not in page and ": kept" not in page
    assert "The application's check of the verdict" in page
    assert "the model's 'accepted' became 'insufficient evidence'" in page
    assert "Insufficient evidence: the application's checks left the model's verdict" in page
    task_page = client.get(reverse("task_detail", args=[snapshot.task.pk])).content.decode()
    reasons = text_of(task_page.split('id="verdict-reasons"')[1].split("</ul>")[0])
    assert not CODES.search(reasons) and ": kept" not in reasons


def test_the_claim_label_form_names_the_empty_evidence_choice(
    client: Any,
    reviewer: Any,
    disagreement: Any,  # noqa: F811
) -> None:
    """Issue 47, item 5: "Evidence item: none" reads "no evidence item"."""
    client.force_login(reviewer)
    html = client.get(reverse("task_detail", args=[disagreement.pk])).content.decode()
    form = html[html.index('id="claim-labels-box"') :]
    assert '<option value="">no evidence item</option>' in form
    assert ">none<" not in form


def test_trust_s_not_covered_table_names_the_route_in_words(client: Any, operator: Any) -> None:
    """Issue 47, item 5: the "Not covered" table's route is "Accepted without a person",
    not ``auto_accepted``."""
    verdicts(3, probability=0.0)
    verdicts(2, probability=0.0, route="auto_rejected")
    client.force_login(operator)
    html = client.get(reverse("ops_trust")).content.decode()
    table = text_of(html.split('id="trust-uncovered"')[1].split("</section>")[0])
    assert "Accepted without a person 3" in table
    assert "Rejected without a person 2" in table
    assert not CODES.search(table)
