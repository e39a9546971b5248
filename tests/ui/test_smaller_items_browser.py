"""Issue 47, item 5 (the smaller items) in the system Chromium via Playwright: the axe
rules the sweep's WCAG tags leave out (landmark-unique, empty-table-header), the
accessible names of the count chips and the validator-input tabs, the undo toast and the
queue's first click, and the phone layout of the queue, Trust and the judge page."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.evidence_app.trust_helpers import verdicts
from tests.factories import ValidationSnapshotFactory
from tests.ui.conftest import make_reviewable_task
from tests.ui.test_browser import CHROMIUM, browser, login  # noqa: F401
from tests.ui.test_judge_page import _comparison, _figures
from tests.ui.test_review_flow_browser import AXE

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not os.path.exists(CHROMIUM), reason=f"browser tests need the system Chromium at {CHROMIUM}"
    ),
    pytest.mark.skipif(not AXE.exists(), reason="axe-core is not installed: run npm ci"),
]


@pytest.fixture
def page(browser: Any, live_server: Any, monkeypatch: Any) -> Iterator[Any]:  # noqa: F811
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    # bypass_csp: axe-core is injected as an inline script, which the app's policy refuses.
    context = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    context.set_default_timeout(30_000)  # a loaded 2-core machine
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.errors = errors
    yield page
    page.wait_for_timeout(200)
    context.close()


def rules_violated(page: Any, rules: list[str]) -> list[dict[str, Any]]:
    page.add_script_tag(path=str(AXE))
    return page.evaluate(
        """async (rules) => {
          const r = await axe.run(document, {runOnly: {type: "rule", values: rules}});
          return r.violations.map(v => ({id: v.id, nodes: v.nodes.map(n => n.target.join(" "))}));
        }""",
        rules,
    )


def test_no_page_repeats_a_landmark_name_or_leaves_a_table_header_empty(
    page: Any, live_server: Any, requester: Any, operator: Any
) -> None:
    """Issue 47, item 5: axe-core's landmark-unique and empty-table-header (best-practice
    rules the sweep's WCAG tags do not run) hold on the task page (two searches), the
    operator overview (a panel and its table's scroll box named alike; a link column
    without a header), the inputs page, the team's and the agreement pages, and the
    account page."""
    task = make_reviewable_task(requester)
    login(page, live_server, "otto", "/ops/")
    pages = [
        f"/tasks/{task.pk}/",
        "/ops/",
        f"/ops/tasks/{task.pk}/inputs/",
        "/ops/team/",
        "/ops/agreement/",
        "/ops/judge/",
        "/account/",
    ]
    found = {}
    for path in pages:
        page.goto(live_server.url + path)
        violated = rules_violated(page, ["landmark-unique", "empty-table-header"])
        if violated:
            found[path] = violated
    assert found == {}
    assert page.errors == []


def test_count_chips_and_input_tabs_read_as_separate_words(
    page: Any, live_server: Any, requester: Any, operator: Any
) -> None:
    """Issue 47, item 5: a count chip reads "Needs review: 1" (not "Needs review1"), and a
    validator-input tab's is "Attempt 1 · judge · offline:judge"
    (not "judgeoffline:judge")."""
    task = make_reviewable_task(requester)
    ValidationSnapshotFactory(
        task=task,
        attempt_index=1,
        kind="second",
        status="rejected",
        companion_of=task.validations.get(),
        model_name="offline:second",
    )
    login(page, live_server, "otto", "/review/")
    chip = page.locator("p.counts .badge.status-needs_review")
    assert chip.evaluate("e => e.textContent.replace(/\\s+/g, ' ').trim()") == "Needs review: 1"
    assert "Needs review: 1" in page.locator("p.counts").aria_snapshot()
    page.goto(f"{live_server.url}/tasks/{task.pk}/")
    tab = page.locator("a.input-tab").first
    assert tab.evaluate("e => e.textContent.replace(/\\s+/g, ' ').trim()") == (
        "Attempt 1 · judge · offline:judge"
    )
    assert page.errors == []


def test_undo_on_the_next_task_s_page_brings_back_the_undone_task_s_address(
    page: Any, live_server: Any, reviewer: Any, requester: Any, settings: Any
) -> None:
    """Issue 47, item 5: ``s`` on a task page opens the next task; Undo there shows the
    undone task again, and the address bar says so (it kept the next task's address)."""
    from playwright.sync_api import expect

    settings.DECISION_UNDO_SECONDS = 30
    first = make_reviewable_task(requester, title="First to decide")
    make_reviewable_task(requester, title="Next in the queue")
    login(page, live_server, "rita", f"/tasks/{first.pk}/")
    page.keyboard.press("s")
    expect(page.locator("#undo-toast")).to_be_visible()
    expect(page.locator("h1")).to_contain_text("Next in the queue")
    page.locator("#undo-button").click()
    expect(page.locator("#undo-toast")).to_have_count(0)
    expect(page.locator("h1")).to_contain_text("First to decide")
    assert page.url.split("?")[0].endswith(f"/tasks/{first.pk}/")
    assert page.errors == []


def test_the_first_click_on_a_queue_row_partly_below_the_fold_opens_it(
    page: Any, live_server: Any, reviewer: Any, requester: Any
) -> None:
    """Issue 47, item 5: a click on the title of a row whose lower part is below the fold
    opens that task (the focus of the mousedown used to scroll the row up, so the click
    landed on something else)."""
    tasks = [make_reviewable_task(requester, title=f"Question {i:02d}") for i in range(14)]
    page.set_viewport_size({"width": 1280, "height": 600})
    login(page, live_server, "rita", "/review/")
    height = page.evaluate("innerHeight")
    target = None
    for task in tasks:
        link = page.locator(f'#queue-list tr[data-task-id="{task.pk}"] a').first
        box = link.bounding_box()
        if box and box["y"] > height:
            target, target_box = task, box
            break
    assert target is not None, "every row fits the screen: no row to test"
    # Scroll so that the link's top few pixels show at the bottom edge.
    page.evaluate(f"window.scrollBy(0, {target_box['y'] - height + 5})")
    box = page.locator(f'#queue-list tr[data-task-id="{target.pk}"] a').first.bounding_box()
    assert box is not None and box["y"] < height < box["y"] + box["height"] + 8
    page.mouse.click(box["x"] + min(20, box["width"] / 2), height - 2)
    page.wait_for_url(f"**/tasks/{target.pk}/**")
    assert page.errors == []


def overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and b["y"] < a["y"] + a["height"]
    )


@pytest.mark.parametrize("width", [390, 1280])
def test_the_undo_toast_covers_neither_the_abandon_form_nor_the_page_s_end(
    page: Any, live_server: Any, reviewer: Any, requester: Any, settings: Any, width: int
) -> None:
    """Issue 47, item 5: with the undo toast showing, the queue's abandon form (sticky at
    the bottom) sits above it, heading and all; on the next task's page, scrolled to the
    end, the last of the page is above the toast."""
    from playwright.sync_api import expect

    settings.DECISION_UNDO_SECONDS = 30
    first = make_reviewable_task(requester, title="First to decide")
    for i in range(12):
        make_reviewable_task(requester, title=f"Waiting {i:02d}")
    page.set_viewport_size({"width": width, "height": 700})
    login(page, live_server, "rita", "/review/")
    page.locator(f'#queue-list tr[data-task-id="{first.pk}"]').click()
    page.keyboard.press("s")
    toast = page.locator("#undo-toast")
    expect(toast).to_be_visible()
    page.wait_for_timeout(700)  # the toast's room is kept on its next tick
    page.locator("#queue-list tr[data-task-id]").first.click()
    page.keyboard.press("a")
    form = page.locator("#queue-inline")
    expect(form).to_be_visible()
    page.evaluate("window.scrollTo(0, 0)")
    page.wait_for_timeout(200)
    toast_box = toast.bounding_box()
    assert not overlap(page.locator("#queue-inline-title").bounding_box(), toast_box)
    assert not overlap(form.bounding_box(), toast_box)
    page.keyboard.press("Escape")

    page.goto(f"{live_server.url}/tasks/{first.pk}/")
    expect(toast).to_be_visible()
    page.wait_for_timeout(700)
    page.evaluate("window.scrollTo(0, document.scrollingElement.scrollHeight)")
    page.wait_for_timeout(200)
    last = page.locator("#main > *").last.bounding_box()
    assert last["y"] + last["height"] <= toast.bounding_box()["y"]
    assert page.errors == []


def test_on_a_phone_wide_tables_say_they_scroll_and_their_last_columns_are_reachable(
    page: Any, live_server: Any, requester: Any, operator: Any
) -> None:
    """Issue 47, item 5: at 390 px the queue's Claims column, Trust's Estimate and the
    judge comparison's Candidate column are off-screen in their table's box; a visible
    line above the box says to scroll sideways, and scrolling the box brings the column
    into view (the page itself does not scroll sideways)."""
    make_reviewable_task(requester)
    verdicts(50, probability=1.0, audits=[True] * 50)
    _comparison("succeeded", figures=_figures(12, 2))
    page.set_viewport_size({"width": 390, "height": 800})
    login(page, live_server, "otto", "/review/")
    for path, header in (
        ("/review/", "Claims"),
        ("/ops/trust/", "Estimate"),
        ("/ops/judge/", "Candidate"),
    ):
        page.goto(live_server.url + path)
        page.wait_for_timeout(300)
        th = page.locator("th", has_text=header).first
        box = th.locator("xpath=ancestor::div[contains(@class, 'table-scroll-x')][1]")
        start = th.bounding_box()
        assert start["x"] + start["width"] > 391, f"{path}: {header} already on screen"
        hint = box.locator("xpath=preceding-sibling::*[1]")
        assert hint.get_attribute("class") == "scroll-hint", path
        assert hint.is_visible() and "scroll the table sideways" in hint.inner_text()
        box.evaluate("b => { b.scrollLeft = b.scrollWidth; }")
        place = th.bounding_box()
        assert place["x"] < 390 and place["x"] + place["width"] <= 391, f"{path}: {place}"
        assert page.evaluate("document.scrollingElement.scrollWidth <= innerWidth"), path
    assert page.errors == []
