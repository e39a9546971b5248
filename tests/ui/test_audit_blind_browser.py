"""Issue 36, "Done when": as an auditor, open everything an open audit's task can be
reached by in the browser (the audit list and page with its lazy sections and evidence,
All tasks and its status filter, the task page, the review queue and its search) and find
no verdict; then open the task anyway and find the judgement counted apart (not blind on
the audit page, left out of the certified figures). System Chromium via Playwright."""

from __future__ import annotations

import os
from typing import Any

import pytest

from evidence_app.models import Audit, AuditExposure
from evidence_app.trust.rates import trust_report
from tests.audit_helpers import drawn_audit
from tests.ui.test_browser import ARTIFACTS, CHROMIUM, browser, login, page  # noqa: F401

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not os.path.exists(CHROMIUM), reason=f"browser tests need the system Chromium at {CHROMIUM}"
    ),
]

TELLS = ("accepted by the validator", "awaiting feedback", "awaiting_feedback", "0.93")


def tells(text: str) -> list[str]:
    lowered = text.lower()
    return [tell for tell in TELLS if tell in lowered]


def test_an_auditor_finds_no_verdict_anywhere_or_is_counted_apart(
    page: Any,  # noqa: F811
    live_server: Any,
    reviewer: Any,
    requester: Any,
    settings: Any,
) -> None:
    from playwright.sync_api import expect

    settings.UI_LAZY_SECTION_CHARS = 100
    title = "Blind drill budget question"
    audit = drawn_audit(
        "accepted", title=title, owner=requester, request="What is the budget? " * 12
    )
    task_id = audit.task_id

    # The audit list and the blind page: no task named, no verdict.
    login(page, live_server, "rita", "/review/audits/")
    row = page.locator(f"#audit-row-{audit.pk}")
    expect(row).to_be_visible()
    assert title not in row.inner_text() and not tells(page.locator("main").inner_text())
    row.locator("a").first.click()
    page.wait_for_url(f"**/review/audits/{audit.pk}/")
    expect(page.locator("#request-panel .lazy")).to_have_count(0)  # loaded by the audit's URL
    page.locator("#evidence-panel summary").first.click()
    expect(page.locator("#evidence-panel .ev-body")).to_have_count(1)
    assert not tells(page.locator("main").inner_text())
    assert f"/tasks/{task_id}/" not in page.content()

    # All tasks: the row is left out (issue 43: a marked row tied the title to the audit).
    page.goto(f"{live_server.url}/tasks/")
    expect(page.locator(f"tr[data-task-id='{task_id}']")).to_have_count(0)
    expect(page.locator("#tasks-unlisted")).to_contain_text("1 task of this page is not listed")

    # The review queue and its search: the task is not there, nothing tells.
    page.goto(f"{live_server.url}/review/?q=Blind+drill")
    assert title not in page.locator("main").inner_text()

    # The task page: withheld, with a way to look that is recorded.
    page.goto(f"{live_server.url}/tasks/{task_id}/")
    expect(page.locator("#task-withheld")).to_be_visible()
    assert not tells(page.locator("main").inner_text()) and title not in page.content()
    assert not AuditExposure.objects.exists()

    # Judging now would be blind; the auditor looks anyway (recorded), then judges.
    page.click("#task-withheld-reveal")
    page.wait_for_url(f"**/tasks/{task_id}/?reveal=1")
    assert tells(page.locator("main").inner_text())
    assert AuditExposure.objects.filter(audit=audit, user=reviewer).count() == 1
    # All tasks by status is recorded too (the exposure stays the first one).
    page.goto(f"{live_server.url}/tasks/?status=awaiting_feedback")

    page.goto(f"{live_server.url}/review/audits/{audit.pk}/")
    expect(page.locator("#audit-not-blind")).to_contain_text("not counted")
    page.check("input[name=correct][value=not_correct]")
    page.fill("textarea[name=comment]", "The handbook says 1,800 EUR.")
    page.click("#audit-submit")
    expect(page.locator("#audit-blind")).to_contain_text("no")
    stored = Audit.objects.get(pk=audit.pk)
    assert stored.state == "done" and stored.blind is False
    (group,) = trust_report().groups
    rate = group.window.false_accepts
    assert rate is not None and (rate.judged, rate.wrong, rate.not_blind) == (0, 0, 1)
    page.screenshot(path=str(ARTIFACTS / "audit-not-blind.png"), full_page=True)
