"""Issue 39 item 5 in Chromium, at 390 and 1280 px: tap targets of at least 24 px on the
queue, task, audit, trust and judge pages; ``?`` lists ``u``; on a phone the audit page
shows the evidence before the judgement form; axe finds no serious or critical issue
(link-in-text-block included) on a task page with claims and on /ops/judge/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from evidence_app.judges.figures import comparison_figures
from evidence_app.models import JudgeComparison
from tests.audit_helpers import drawn_audit
from tests.ui.conftest import make_reviewable_task
from tests.ui.test_browser import ARTIFACTS, CHROMIUM, login
from tests.ui.test_disputed_claims import _disputed_task
from tests.ui.test_review_flow_browser import AXE, axe_violations, browser, page

__all__ = ["browser", "page"]  # the fixtures, shared with the review-flow tests

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason=f"needs the system Chromium at {CHROMIUM}"
    ),
]

# Controls a finger taps (WCAG 2.5.8): buttons, button-like links, disclosures, fields.
# Links inside a sentence are exempt, as the criterion says.
SMALL_TARGETS = """() => [...document.querySelectorAll(
    'button, a.btn, a.badge, a.cite, summary, select, input:not([type=hidden]), textarea,'
    + ' .queue-nav a, .ops-nav a')]
  .filter(el => el.offsetParent !== null)
  .map(el => [el, el.getBoundingClientRect()])
  .filter(([el, r]) => r.width > 0 && r.height < 23.5)
  .map(([el, r]) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '')
       + '.' + String(el.className).split(' ').join('.') + ' ' + Math.round(r.height) + 'px')"""


def _comparison() -> JudgeComparison:
    outcome = {
        "kind": "correct",
        "candidate": "accepted",
        "baseline": "rejected",
        "candidate_correct": True,
        "baseline_correct": False,
    }
    same = {**outcome, "baseline": "accepted", "baseline_correct": True}
    return JudgeComparison.objects.create(
        template="terse",
        model="offline:judge",
        baseline_template="default",
        baseline_model="offline:judge",
        state="succeeded",
        done=40,
        total=40,
        figures=comparison_figures([same] * 32 + [outcome] * 8),
    )


@pytest.mark.parametrize("width", [390, 1280])
def test_tap_targets_help_audit_order_and_axe_on_the_review_pages(
    page: Any,
    live_server: Any,
    reviewer: Any,
    operator: Any,
    requester: Any,
    settings: Any,
    width: int,
) -> None:
    """Issue 39 item 5: every control on the review pages is at least 24 px tall;
    ``?`` lists ``u``; at 390 px the audit's evidence comes before its form; axe
    reports no serious or critical violation on the task page with claims and on the
    judge page."""
    from django.contrib.auth.models import Group
    from playwright.sync_api import expect

    operator.groups.add(Group.objects.get_or_create(name="reviewers")[0])
    task, _ = _disputed_task(settings, requester)
    make_reviewable_task(requester)
    audit = drawn_audit("accepted")
    _comparison()
    page.set_viewport_size({"width": width, "height": 900})
    login(page, live_server, "otto", reverse("review_queue"))
    small: list[str] = []
    serious: list[str] = []
    for path in (
        reverse("review_queue"),
        reverse("task_detail", args=[task.pk]),
        reverse("audit_detail", args=[audit.pk]),
        reverse("ops_trust"),
        reverse("ops_judge"),
    ):
        page.goto(live_server.url + path)
        page.wait_for_load_state("networkidle")
        small += [f"{path}: {s}" for s in page.evaluate(SMALL_TARGETS)]
        if AXE.exists():
            serious += [
                f"{path}: {v['id']} {v['target']}"
                for v in axe_violations(page)
                if v["impact"] in ("serious", "critical")
            ]
    assert small == []
    assert serious == []

    page.goto(live_server.url + reverse("task_detail", args=[task.pk]))
    page.locator("#main").focus()
    page.keyboard.press("?")
    help_box = page.locator("#kbd-help")
    expect(help_box).to_be_visible()
    expect(help_box).to_contain_text("undo your last decision")

    page.goto(live_server.url + reverse("audit_detail", args=[audit.pk]))
    evidence = page.locator("#evidence-panel").bounding_box()
    form = page.locator("#audit-form, #audit-result").first.bounding_box()
    assert evidence and form
    if width == 390:
        assert evidence["y"] < form["y"], "the evidence comes before the form on a phone"
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"audit-{width}.png"), full_page=True)
    assert page.errors == []
