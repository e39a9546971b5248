"""The claim view on the task page (issue 12): the answer with each claim marked, the
cited evidence of a selected claim with the quote highlighted, R labels as the
validator saw them, and the claim summary in the queue."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from evidence_app.validation.services import validation_run
from tests.evidence_app.validation_helpers import validating_task
from tests.ui.test_browser import browser, login, page, screenshot  # noqa: F401

FACT = "The annual training budget per employee is 1,750 EUR."
OTHER = "Unused budget does not carry over to the next year."
ANSWER = f"{FACT} Training days count as working time at 100 percent pay."


def _reviewable(settings: Any, owner: Any) -> Any:
    """A task the offline judge sent to needs_review: one supported, one unsupported claim."""
    settings.VALIDATOR_MODEL = "offline:judge"
    task = validating_task(
        owner=owner,
        answer=ANSWER,
        evidence=[
            "Title: Canteen\n\nThe canteen opens at noon every weekday.",
            "Title: Training Budget\n\nWe value learning. "
            + "Filler sentence here. " * 200
            + f"{FACT} {OTHER} "
            + "More filler text. " * 200,
        ],
        request="What is the annual training budget per employee?",
    )
    snapshot = validation_run(task_id=task.pk, attempt_index=1)
    task.refresh_from_db()
    assert task.status == "needs_review", snapshot.result
    return task, snapshot


@pytest.mark.django_db
def test_task_page_marks_each_claim_and_labels_evidence_like_the_validator(
    client: Client, reviewer: Any, requester: Any, settings: Any
) -> None:
    """Issue 12: claims marked by verdict in the answer, citations flagged, R labels."""
    task, snapshot = _reviewable(settings, requester)
    client.force_login(reviewer)

    html = client.get(f"/tasks/{task.pk}/").content.decode()

    assert 'class="claim claim-supported" data-claim="1"' in html
    assert 'class="claim claim-unsupported" data-claim="2"' in html
    assert "R2 ✓" in html
    # The evidence list uses the labels the validator saw (R1 canteen, R2 training).
    assert "A1·R1" in html and "A1·R2" in html
    assert "[R2] read_document" in snapshot.rendered_input


@pytest.mark.django_db
def test_selected_claim_shows_the_quote_highlighted_without_the_whole_result(
    client: Client, reviewer: Any, requester: Any, settings: Any
) -> None:
    """Issue 12: the fragment has the quote in a <mark> with surrounding text, not the
    whole multi-thousand-character result."""
    task, snapshot = _reviewable(settings, requester)
    client.force_login(reviewer)

    response = client.get(
        f"/tasks/{task.pk}/validations/{snapshot.pk}/claims/1/", headers={"HX-Request": "true"}
    )

    html = response.content.decode()
    assert response.status_code == 200
    assert f'<mark class="quote">{FACT}</mark>' in html
    assert OTHER in html  # surrounding text
    assert html.count("Filler sentence here.") < 40  # an excerpt, not the 200 repeats
    assert "verified" in html


@pytest.mark.django_db
def test_unverified_citation_is_flagged_and_other_requesters_get_404(
    client: Client, reviewer: Any, requester: Any, other_requester: Any, settings: Any
) -> None:
    """Issue 12, A2: an unverified citation is visibly flagged; the fragment URL checks
    permissions on its own."""
    task, snapshot = _reviewable(settings, requester)
    result = dict(snapshot.result)
    result["claims"][0]["citations"].append(
        {"ref": "R1", "quote": FACT, "verified": False, "problem": "citation R1 not found"}
    )
    snapshot.result = result
    snapshot.save(update_fields=["result"])

    client.force_login(reviewer)
    page_html = client.get(f"/tasks/{task.pk}/").content.decode()
    fragment = client.get(f"/tasks/{task.pk}/validations/{snapshot.pk}/claims/1/").content
    assert "R1 ✗ unverified" in page_html
    assert b"citation R1 not found" in fragment and b"unverified" in fragment

    client.force_login(other_requester)
    assert client.get(f"/tasks/{task.pk}/validations/{snapshot.pk}/claims/1/").status_code == 404


@pytest.mark.django_db
def test_queue_shows_claim_summary_and_first_problem_claim(
    client: Client, reviewer: Any, requester: Any, settings: Any
) -> None:
    """Issue 12: the queue shows each task's claim counts and its first unsupported or
    contradicted claim."""
    _reviewable(settings, requester)
    client.force_login(reviewer)

    html = client.get("/review/").content.decode()

    assert 'class="queue-claims"' in html
    assert "1 supported" in html and "1 without support" in html
    assert "Training days count as working time at 100 percent pay." in html


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_reviewer_selects_a_claim_and_sees_the_highlighted_quote(
    page: Any,  # noqa: F811
    live_server: Any,
    reviewer: Any,
    requester: Any,
    settings: Any,
) -> None:
    """Issue 12: selecting a claim opens the cited evidence at the quote, highlighted."""
    from playwright.sync_api import expect

    task, _ = _reviewable(settings, requester)
    login(page, live_server, "rita", f"/tasks/{task.pk}/")

    expect(page.locator("#claim-evidence mark.quote")).to_have_count(0)
    page.click('#answer-claims a.claim[data-claim="1"]')
    expect(page.locator("#claim-evidence mark.quote")).to_have_text(FACT)
    expect(page.locator("#claim-evidence")).to_contain_text(OTHER)
    expect(page.locator("#claim-evidence .badge.mono")).to_have_text("R2")
    page.locator("#answer-panel").scroll_into_view_if_needed()
    screenshot(page, "claim_view.png")
    # The unsupported claim says it cites nothing.
    page.click('#answer-claims a.claim[data-claim="2"]')
    expect(page.locator("#claim-evidence")).to_contain_text("cited no evidence")
    assert not page.errors
