"""A claim one source supports and another contradicts is shown as disputed (issue 26
item 3): both sources named with what each says, the reason for review in one line at
the top of the verdict, citation chips that open their evidence item at the quote, and a
screen reader told which claim is selected and that its evidence loaded.

The shape is the demo's meal-allowance task: the Travel Policy says 46 EUR, the FAQ
38 EUR, and the answer gives 46 EUR with a note that the sources disagree."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from evidence_app.validation.services import validation_run
from evidence_app.validator.reconcile import reconcile
from evidence_app.validator.schema import ValidationResult
from tests.evidence_app.validation_helpers import validating_task
from tests.ui.test_browser import login
from tests.ui.test_review_flow_browser import AXE, axe_violations, browser, page  # noqa: F401

POLICY = "The daily meal allowance for domestic business travel is 46 EUR."
FAQ = "The daily meal allowance for domestic business travel is 38 EUR."
NOTE = "Note: the sources disagree: Travel Policy says 46, Frequently Asked Questions says 38."


def _disputed_task(settings: Any, owner: Any) -> tuple[Any, Any]:
    """The offline judge's verdict on the meal-allowance answer: claim 1 stated by R1 and
    contradicted by R2, claim 2 (the agent's own note) unsupported."""
    settings.VALIDATOR_MODEL = "offline:judge"
    task = validating_task(
        owner=owner,
        answer=f"{POLICY} {NOTE}",
        evidence=[
            "Title: Travel Policy\n\nSection 4. " + POLICY + " It covers breakfast, lunch "
            "and dinner.",
            "Title: Frequently Asked Questions\n\nHow much is the meal allowance? " + FAQ,
        ],
        request="What is the daily meal allowance for domestic business travel?",
    )
    snapshot = validation_run(task_id=task.pk, attempt_index=1)
    task.refresh_from_db()
    assert task.status == "needs_review", snapshot.result
    return task, snapshot


@pytest.mark.django_db
def test_disputed_claim_names_both_sources_and_is_never_two_ticks(
    client: Client, reviewer: Any, requester: Any, settings: Any
) -> None:
    """Issue 26 item 3: the disputed claim, which source says what, the reason line at
    the top of the verdict, and the category the unsupported claim gives the verdict."""
    task, snapshot = _disputed_task(settings, requester)
    client.force_login(reviewer)

    html = client.get(f"/tasks/{task.pk}/").content.decode()

    item = re.search(
        r'<li class="claim-item claim-disputed-item" id="claim-item-1">.*?</li>', html, re.S
    )
    assert item, "claim 1 is not shown as disputed"
    assert (
        '<span class="badge claim-badge claim-disputed"><span class="claim-icon" '
        'aria-hidden="true">⚠</span> disputed</span>'
    ) in item.group(0)
    assert "<strong>Disputed:</strong> R1: 46 EUR; R2 says 38 EUR" in item.group(0)
    assert "R1 ✓" in item.group(0)
    assert "R2 ✓" not in item.group(0) and "R2 ≠ says otherwise" in item.group(0)
    # One count on the page, in the states' one order and words (issue 39).
    counts = re.sub(
        r"<[^>]+>", "", re.search(r'<span class="claim-counts">.*?</span></span>', html).group(0)
    )
    assert counts == "✓ 0 supported · ⚠ 1 disputed · ✗ 0 contradicted · ? 1 without support"
    assert html.count('class="claim-counts"') == 1 and 'id="claims-summary"' not in html
    reason = re.search(r'<p id="verdict-reason"[^>]*>(.*?)</p>', html, re.S)
    assert reason
    assert (
        "Sources disagree about the figure (R1: 46 EUR; R2 says 38 EUR); 1 claim unsupported"
        in (reason.group(1))
    )
    # The reason is the first thing the verdict says, before the meaning of the status.
    assert html.index('id="verdict-reason"') < html.index('class="verdict-meaning"')
    assert snapshot.failure_category == "unsupported_claim"
    queue = client.get("/review/").content.decode()
    assert '<span class="badge cat">Unsupported claim</span>' in queue


@pytest.mark.django_db
def test_citation_chip_opens_its_evidence_item_with_the_quote_marked(
    client: Client, reviewer: Any, requester: Any, settings: Any
) -> None:
    """Issue 26 item 3: a chip links to its evidence item; the item opens with the quoted
    span in a <mark> and announces itself in the claim status region."""
    task, snapshot = _disputed_task(settings, requester)
    client.force_login(reviewer)
    html = client.get(f"/tasks/{task.pk}/").content.decode()
    chip = re.search(r'<a class="cite cite-ok cite-contradicts" href="([^"]+)"', html)
    assert chip, "the R2 chip is not a link"

    fragment = client.get(chip.group(1).replace("&amp;", "&"), headers={"HX-Request": "true"})

    body = fragment.content.decode()
    assert fragment.status_code == 200
    assert '<mark class="quote" id="evidence-' in body and f"{FAQ}</mark>" in body
    assert "How much is the meal allowance? <mark" in body  # the rest of the item around it
    assert 'id="claim-status"' in body and 'hx-swap-oob="true"' in body
    assert "Claim 1: evidence R2 loaded, the quote is marked." in body
    # Offsets outside the content mark nothing rather than fail.
    plain = client.get(chip.group(1).split("?")[0] + "?start=5&end=999999").content.decode()
    assert "<mark" not in plain and FAQ in plain


def test_accepted_verdict_with_a_disputed_claim_goes_to_a_person() -> None:
    """Issue 26 item 3: a model's 'accepted' whose only claim another verified source
    contradicts is not accepted; the reconciliation says the claim is disputed."""
    verdict = ValidationResult.model_validate(
        {
            "status": "accepted",
            "claims": [
                {
                    "id": "1",
                    "text": POLICY,
                    "verdict": "supported",
                    "citations": [
                        {"ref": "R1", "quote": POLICY, "verified": True, "stance": "supports"},
                        {"ref": "R2", "quote": FAQ, "verified": True, "stance": "contradicts"},
                    ],
                }
            ],
            "requirements": [{"text": "the allowance", "met": "yes", "claim_ids": ["1"]}],
        }
    )

    result = reconcile(verdict)

    assert result.status == "insufficient_evidence"
    assert "claim 1 is disputed: another source states otherwise" in result.reconciliation
    # Without the contradicting citation the same verdict stands.
    verdict.claims[0].citations.pop()
    assert reconcile(verdict).status == "accepted"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_reviewer_sees_the_dispute_and_opens_the_contradicting_source_at_its_quote(
    page: Any,  # noqa: F811
    live_server: Any,
    reviewer: Any,
    requester: Any,
    settings: Any,
) -> None:
    """Issue 26 item 3: in Chromium, the disputed claim with both sources named, the
    reason line on top of the verdict, chip -> evidence item with the quote in <mark>,
    the selected claim marked aria-current and announced in a polite live region."""
    from playwright.sync_api import expect

    task, _ = _disputed_task(settings, requester)
    login(page, live_server, "rita", f"/tasks/{task.pk}/")

    expect(page.locator("#verdict-reason")).to_contain_text(
        "Sources disagree about the figure (R1: 46 EUR; R2 says 38 EUR)"
    )
    claim = page.locator("#claim-item-1")
    expect(claim.locator(".claim-badge")).to_have_text("⚠ disputed")
    expect(claim.locator(".dispute")).to_have_text("Disputed: R1: 46 EUR; R2 says 38 EUR")
    expect(claim.locator(".cite")).to_have_text(["R1 ✓", "R2 ≠ says otherwise"])
    expect(page.locator("#claim-status")).to_have_attribute("aria-live", "polite")

    claim.locator('a.cite[data-ref="R2"]').click()
    expect(page.locator("#claim-evidence mark.quote")).to_have_text(FAQ)
    expect(page.locator("#claim-evidence")).to_contain_text("How much is the meal allowance?")
    expect(page.locator("#claim-status")).to_have_text(
        "Claim 1: evidence R2 loaded, the quote is marked."
    )
    expect(claim).to_have_attribute("aria-current", "true")

    page.click('#answer-claims a.claim[data-claim="2"]')
    expect(page.locator("#claim-status")).to_contain_text("Claim 2 selected, without support")
    expect(page.locator('#answer-claims a.claim[data-claim="2"]')).to_have_attribute(
        "aria-current", "true"
    )
    expect(claim).not_to_have_attribute("aria-current", "true")
    assert not page.errors
    if AXE.exists():  # axe-core comes from `npm ci`; the sweep test says when it is missing
        serious = [v for v in axe_violations(page) if v["impact"] in ("serious", "critical")]
        assert not serious, serious


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [390, 1280])
def test_claim_states_read_the_same_in_the_answer_the_list_and_the_count_without_colour(
    page: Any,  # noqa: F811
    live_server: Any,
    reviewer: Any,
    requester: Any,
    settings: Any,
    width: int,
) -> None:
    """Issue 39 item 2: a disputed claim is marked disputed in the answer (not as a
    supported one), in the list and in the one count of the page; each state carries
    its sign and a line style of its own, so it reads without colour (greyscale)."""
    from playwright.sync_api import expect

    task, _ = _disputed_task(settings, requester)
    page.set_viewport_size({"width": width, "height": 900})
    login(page, live_server, "rita", f"/tasks/{task.pk}/")
    page.add_style_tag(content="html { filter: grayscale(1); }")
    marks = page.locator("#answer-claims a.claim")
    expect(marks).to_have_count(2)
    states = marks.evaluate_all(
        """els => els.map(a => ({
          state: a.dataset.state,
          sign: a.querySelector('.claim-icon').textContent,
          words: a.querySelector('.sr-only').textContent.trim(),
          line: getComputedStyle(a).textDecorationStyle,
        }))"""
    )
    assert states == [
        {"state": "disputed", "sign": "⚠", "words": "(disputed)", "line": "wavy"},
        {"state": "unsupported", "sign": "?", "words": "(without support)", "line": "dotted"},
    ]
    expect(page.locator("#claim-item-1 .claim-badge")).to_have_text("⚠ disputed")
    expect(page.locator("#claim-item-2 .claim-badge")).to_have_text("? without support")
    expect(page.locator(".claim-counts")).to_have_count(1)
    expect(page.locator(".claim-counts")).to_have_text(
        "✓ 0 supported · ⚠ 1 disputed · ✗ 0 contradicted · ? 1 without support"
    )
    page.locator("#answer-panel").screenshot(path=f"test-artifacts/claim-states-{width}.png")
    assert not page.errors
