"""Claim verdicts on the decision form in the browser, on a phone (issue 27, item 4):
the claims open from the form, keys typed in their fields never decide, and Satisfied
sends the verdicts with the decision. System Chromium via Playwright."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from evidence_app.models import ClaimLabel
from tasks_app.models import Feedback, ToolEvidence
from tests.ui.conftest import make_reviewable_task
from tests.ui.test_browser import CHROMIUM, login
from tests.ui.test_claim_labels_form import with_claims
from tests.ui.test_review_flow_browser import AXE, axe_violations, browser, page, page_overflow

__all__ = ["browser", "page"]  # the fixtures, shared with the review-flow tests

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason=f"needs the system Chromium at {CHROMIUM}"
    ),
]


def test_claim_verdicts_on_a_phone_go_with_the_decision(
    page: Any, live_server: Any, reviewer: Any, requester: Any, settings: Any
) -> None:
    """Issue 27, item 4: at 390 px the claim verdicts open inside the decision form
    without sideways scrolling; ``s`` typed into a claim's quote box is text, not
    Satisfied; the verdicts and the corrected citation are stored with the decision."""
    from playwright.sync_api import expect

    settings.DECISION_UNDO_SECONDS = 30
    task = make_reviewable_task(requester)
    with_claims(task)
    evidence = ToolEvidence.objects.get(task=task, title="Training budget")
    page.set_viewport_size({"width": 390, "height": 844})
    login(page, live_server, "rita", reverse("task_detail", args=[task.pk]))

    page.locator("#claim-labels-box > summary").click()
    expect(page.locator("#claim-label-0")).to_be_visible()
    page.select_option("#claim-label-0", "contradicted")
    page.select_option("#claim-label-1", "supported")
    page.locator("#claim-label-item-0 .claim-citation > summary").click()
    page.select_option("#claim-evidence-0", str(evidence.pk))
    quote = page.locator("#claim-quote-0")
    quote.click()
    quote.type("1,800 EUR is stated")  # an "s" among the words
    page.wait_for_timeout(300)
    assert not Feedback.objects.filter(task=task).exists()
    assert page_overflow(page) == ""
    if AXE.exists():  # npm ci puts axe-core there
        serious = [v for v in axe_violations(page) if v["impact"] in ("serious", "critical")]
        assert serious == [], serious

    page.locator("#act-satisfied").click()
    expect(page.locator("#undo-toast")).to_contain_text("Satisfied")
    decision = Feedback.objects.get(task=task)
    labels = list(ClaimLabel.objects.order_by("claim_index"))
    assert [(x.claim_index, x.label) for x in labels] == [(0, "contradicted"), (1, "supported")]
    assert all(x.feedback_id == decision.pk for x in labels)
    assert labels[0].corrected_citation == {
        "evidence_id": evidence.pk,
        "quote": "1,800 EUR is stated",
    }
    assert page.errors == []
