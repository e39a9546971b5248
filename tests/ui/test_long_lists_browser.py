"""The task page of a 20,000-result attempt in Chromium (issue 39): the Evidence list
and a run's transcript load a page at a time, each with a search within it, at 390 and
1280 px. Behaviour only: how fast the page and each list answer (the issue's 1 s) is
measured by the benchmark ``python -m bench --only long_lists`` (bench/long_lists.py),
never asserted here."""

from __future__ import annotations

import os
from typing import Any

import pytest

from bench.trace_tree import build_trace_task
from evidence_app.review.lists import PAGE_SIZE, TRANSCRIPT_PAGE_SIZE
from evidence_app.review.task_detail import EVIDENCE_INLINE_ITEMS
from tests.ui.test_browser import ARTIFACTS, CHROMIUM, browser, login  # noqa: F401

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not os.path.exists(CHROMIUM),
        reason=f"browser tests need the system Chromium at {CHROMIUM} (apt-get install chromium)",
    ),
]

RESULTS = 20_000


@pytest.mark.parametrize("width", [390, 1280])
def test_20000_result_attempt_pages_its_lists(
    browser: Any,  # noqa: F811
    live_server: Any,
    reviewer: Any,
    monkeypatch: Any,
    width: int,
) -> None:
    """Issue 39 item 1: with 20,000 tool results and 40,000 transcript messages the task
    page lists 50 results; "more" adds 200 at a time; a search lists the matches only;
    a run's transcript opens with 100 messages, pages on and searches; no list holds
    more than a page per request; no error in the page."""
    from playwright.sync_api import expect

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    task = build_trace_task(reviewer, steps=2 * RESULTS)
    context = browser.new_context(viewport={"width": width, "height": 900})
    context.set_default_timeout(20_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    login(page, live_server, "rita", "/tasks/new/")
    page.goto(f"{live_server.url}/tasks/{task.pk}/")
    panel = page.locator("#evidence-panel")
    items = panel.locator(".evidence-list > li > details")
    expect(items).to_have_count(EVIDENCE_INLINE_ITEMS)
    expect(panel.locator("h2")).to_contain_text("20,000 tool results")

    more = panel.locator(".list-more button")
    expect(more).to_contain_text(f"Show the next {PAGE_SIZE} results (19,950 left)")
    more.click()
    expect(items).to_have_count(EVIDENCE_INLINE_ITEMS + PAGE_SIZE)
    expect(more).to_contain_text("(19,750 left)")

    search = panel.locator("input[type=search]")
    search.fill("Document 1234")
    expect(items).to_have_count(5)
    expect(panel.locator("#evidence-found")).to_contain_text("5 tool results contain")
    expect(items.first).to_contain_text("Document 1234")
    search.fill("")
    expect(items).to_have_count(PAGE_SIZE)

    run = page.locator("#trace-panel .trace-run > details").first
    run.locator("> summary").click()
    expect(run.locator(".trace-step")).to_have_count(PAGE_SIZE)
    transcript = run.locator("details.run-transcript")
    messages = transcript.locator("ol.transcript > li:not(.list-more)")
    transcript.locator("> summary").click()
    expect(messages).to_have_count(TRANSCRIPT_PAGE_SIZE)
    expect(transcript.locator(".list-found")).to_contain_text("8,000 messages")
    transcript.locator(".list-more button").click()
    expect(messages).to_have_count(2 * TRANSCRIPT_PAGE_SIZE)
    transcript.locator("input[type=search]").fill("Step 3999:")
    expect(messages).to_have_count(1)
    expect(transcript.locator(".list-found")).to_contain_text("1 message contains")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"long-lists-{width}.png"), full_page=False)
    context.close()
    assert errors == []
