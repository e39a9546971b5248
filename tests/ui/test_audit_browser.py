"""Issue 27, item 1: a blind audit in the browser. The page shows the request, the answer
and the evidence but not the validator's verdict; the person judges (a "not correct"
without a comment is refused in place), and only then the verdict appears beside their
call. On a phone the page is one column and does not scroll sideways. System Chromium
via Playwright, as the other browser tests."""

from __future__ import annotations

import os
from typing import Any

import pytest

from evidence_app.models import Audit, ClaimLabel
from tests.audit_helpers import ANSWER, drawn_audit
from tests.ui.test_browser import ARTIFACTS, CHROMIUM, browser, login, page  # noqa: F401
from tests.ui.test_review_flow_browser import page_overflow

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not os.path.exists(CHROMIUM), reason=f"browser tests need the system Chromium at {CHROMIUM}"
    ),
]


def test_a_blind_audit_hides_the_verdict_until_the_person_judges(
    page: Any,  # noqa: F811
    live_server: Any,
    reviewer: Any,
) -> None:
    """Issue 27, item 1: no verdict text before submit; the person judges; the verdict
    appears after."""
    from playwright.sync_api import expect

    audit = drawn_audit("accepted", title="Training budget question")
    login(page, live_server, "rita", "/review/audits/")
    # Issue 36: the row names the audit, not its task.
    expect(page.locator(f"#audit-row-{audit.pk}")).not_to_contain_text("Training budget")
    page.click(f"#audit-row-{audit.pk} td:first-child a")
    page.wait_for_url(f"**/review/audits/{audit.pk}/")
    expect(page.locator("#answer-text")).to_have_text(ANSWER)
    body = page.locator("body").inner_text().lower()
    assert "accepted" not in body and "0.93" not in body
    assert page.locator("#audit-reveal").count() == 0

    # The evidence opens in place, as on the task page.
    page.locator("#evidence-panel summary").first.click()
    expect(page.locator("#evidence-panel .lazy")).to_have_count(0)

    # "Not correct" needs a comment: refused, nothing stored, still blind.
    page.check("input[name=correct][value=not_correct]")
    page.select_option("select[name=claim_0]", "contradicted")
    page.click("#audit-submit")
    expect(page.locator("#audit-comment-error")).to_be_visible()
    assert "accepted" not in page.locator("body").inner_text().lower()
    assert Audit.objects.get(pk=audit.pk).state == "open"

    # Keys typed in the comment are text, never shortcuts (issue 26's rule).
    page.locator("textarea[name=comment]").press_sequentially("sraj")
    expect(page.locator("textarea[name=comment]")).to_have_value("sraj")
    assert Audit.objects.get(pk=audit.pk).state == "open"
    page.fill("textarea[name=comment]", "The handbook says 1,800 EUR.")
    page.check("input[name=correct][value=not_correct]")
    page.select_option("select[name=claim_0]", "contradicted")
    page.click("#audit-submit")
    expect(page.locator("#audit-reveal")).to_have_text(
        "You said not correct; the validator accepted it: a false accept."
    )
    expect(page.locator("#audit-verdict")).to_have_text("Accepted")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "audit-judged.png"), full_page=True)
    audit.refresh_from_db()
    assert audit.state == "done" and audit.correct is False
    assert [(c.claim_index, c.label) for c in ClaimLabel.objects.all()] == [(0, "contradicted")]
    assert page.errors == []


def test_the_audit_page_fits_a_phone(
    page: Any,  # noqa: F811
    live_server: Any,
    reviewer: Any,
) -> None:
    """Issue 27, item 1: at 390 px the audit list and the audit page do not scroll
    sideways, and the form is as wide as the screen, after the request and the answer."""
    from playwright.sync_api import expect

    audit = drawn_audit("accepted")
    login(page, live_server, "rita", "/review/audits/")
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_load_state("networkidle")
    assert page_overflow(page) == ""
    page.goto(f"{live_server.url}/review/audits/{audit.pk}/")
    page.wait_for_load_state("networkidle")
    assert page_overflow(page) == ""
    form = page.locator("#audit-form").bounding_box()
    answer = page.locator("#answer-panel").bounding_box()
    assert form is not None and answer is not None
    assert form["width"] >= 330 and form["y"] >= answer["y"] + answer["height"]
    expect(page.locator("#audit-submit")).to_be_visible()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "audit-390.png"), full_page=True)
