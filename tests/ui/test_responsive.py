"""The task page and the queue on a phone (390 px) and a tablet (768 px), and the claim
marks of the answer (issue 26). System Chromium via Playwright; screenshots go to
``test-artifacts/`` (git-ignored)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from evidence_app.validation.services import validation_run
from tasks_app.models import Task
from tests.evidence_app.validation_helpers import validating_task
from tests.ui.conftest import make_reviewable_task
from tests.ui.test_browser import ARTIFACTS, CHROMIUM, browser, login  # noqa: F401
from tests.ui.test_review_flow_browser import AXE, page_overflow

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not os.path.exists(CHROMIUM), reason=f"browser tests need the system Chromium at {CHROMIUM}"
    ),
]

FACT = "The annual training budget per employee is 1,750 EUR, paid by the team budget."
ANSWER = f"{FACT} Training days count as working time at 100 percent pay for every employee."


@pytest.fixture
def wide_page(browser: Any, live_server: Any, monkeypatch: Any) -> Iterator[Any]:  # noqa: F811
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    # bypass_csp: axe-core is injected as an inline script, which the app's policy refuses.
    context = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    context.set_default_timeout(10_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.errors = errors
    yield page
    page.wait_for_timeout(200)
    context.close()


def box(page: Any, selector: str) -> dict[str, float]:
    found = page.locator(selector).bounding_box()
    assert found is not None, f"{selector} is not rendered"
    return found


def overlaps(a: dict[str, float], b: dict[str, float]) -> bool:
    return not (
        a["x"] + a["width"] <= b["x"]
        or b["x"] + b["width"] <= a["x"]
        or a["y"] + a["height"] <= b["y"]
        or b["y"] + b["height"] <= a["y"]
    )


def serious_axe(page: Any, selector: str = "body") -> list[str]:
    """The serious and critical axe-core violations under ``selector``. Without axe-core
    (``npm ci`` not run: ``make test`` on a fresh machine) the test is skipped here, after
    the layout checks before it have run; CI installs it."""
    if not AXE.exists():
        pytest.skip("axe-core is not installed: run npm ci")
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    found = page.evaluate(
        """async (selector) => {
          const r = await axe.run(selector, {runOnly: {type: "tag",
            values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]}});
          return r.violations.filter(v => v.impact === "serious" || v.impact === "critical")
            .map(v => v.id + " " + (v.nodes[0] && v.nodes[0].target.join(" ")));
        }""",
        selector,
    )
    return list(found)


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


@pytest.mark.skipif(not AXE.exists(), reason="axe-core is not installed: run npm ci")
@pytest.mark.parametrize("width", [390, 768])
def test_task_page_and_queue_on_a_phone_and_a_tablet(
    wide_page: Any, live_server: Any, reviewer: Any, requester: Any, width: int
) -> None:
    """Issue 26 item 2: at 390 and 768 px the task page is one column as wide as the
    screen, the Decision and Details panels come after the request and the answer and
    never cover them, the decision buttons are reachable; the queue's table scrolls in its
    own container while the page does not scroll sideways; the top navigation collapses
    behind a Menu button that opens and closes it, and the user name and Log out then
    pass axe-core's contrast check."""
    from playwright.sync_api import expect

    page = wide_page
    task = make_reviewable_task(requester, title="First question")
    make_reviewable_task(requester, title="Second question")
    login(page, live_server, "rita", "/review/")
    page.set_viewport_size({"width": width, "height": 844})

    # The queue.
    page.wait_for_load_state("networkidle")
    assert page_overflow(page) == ""
    expect(page.locator(f'tr[data-task-id="{task.pk}"] a.open')).to_be_visible()
    table_box = box(page, "#queue-table")
    assert table_box["x"] >= 0 and table_box["x"] + table_box["width"] <= width
    shot(page, f"queue-{width}.png")

    # The navigation: collapsed behind an accessible Menu button.
    menu = page.locator("#nav-toggle")
    expect(menu).to_be_visible()
    expect(menu).to_have_attribute("aria-expanded", "false")
    expect(page.locator("nav.mainnav")).to_be_hidden()
    menu.click()
    expect(menu).to_have_attribute("aria-expanded", "true")
    expect(page.locator("nav.mainnav")).to_be_visible()
    expect(page.locator("form.logout .who")).to_be_visible()
    expect(page.locator("form.logout button")).to_be_visible()
    assert page_overflow(page) == ""
    assert serious_axe(page, ".topbar") == []
    shot(page, f"menu-{width}.png")
    page.keyboard.press("Escape")
    expect(menu).to_have_attribute("aria-expanded", "false")
    expect(menu).to_be_focused()
    expect(page.locator("nav.mainnav")).to_be_hidden()

    # The task page, opened from the queue.
    page.click(f'tr[data-task-id="{task.pk}"] a.open')
    page.wait_for_url(f"**/tasks/{task.pk}/")
    page.wait_for_load_state("networkidle")
    assert page_overflow(page) == ""
    request, answer = box(page, "#request-panel"), box(page, "#answer-panel")
    decision, details = box(page, "#task-actions"), box(page, "#details-panel")
    for panel in (request, answer, decision, details):
        assert panel["width"] >= width - 60, panel  # one column, the whole screen wide
    assert decision["y"] >= answer["y"] + answer["height"]
    for side in (decision, details):
        for main in (request, answer):
            assert not overlaps(side, main)
    satisfied = page.locator("#act-satisfied")
    satisfied.scroll_into_view_if_needed()
    expect(satisfied).to_be_in_viewport()
    page.click("#act-revise")
    expect(page.locator("#feedback-comment")).to_be_focused()
    assert serious_axe(page) == []
    height = page.evaluate("document.scrollingElement.scrollHeight")
    print(f"\ntask page at {width} px: {height} px tall")
    shot(page, f"task-{width}.png")
    assert Task.objects.get(pk=task.pk).status == "needs_review"
    assert page.errors == []


def test_claim_marks_are_highlights_not_strikethrough(
    wide_page: Any, live_server: Any, reviewer: Any, requester: Any, settings: Any
) -> None:
    """Issue 26 item 3: a claim in the answer is marked by a background highlight and an
    underline; where a claim wraps onto a second line, its mark on the first line ends
    above the second line (the old 2 px border under a padded box was drawn through it),
    and its text keeps AA contrast."""
    page = wide_page
    settings.VALIDATOR_MODEL = "offline:judge"
    task = validating_task(
        owner=requester,
        answer=ANSWER,
        evidence=[f"Title: Training Budget\n\n{FACT}"],
        request="What is the annual training budget per employee?",
    )
    validation_run(task_id=task.pk, attempt_index=1)
    login(page, live_server, "rita", f"/tasks/{task.pk}/")
    page.set_viewport_size({"width": 390, "height": 844})
    marks = page.locator("#answer-claims a.claim")
    assert marks.count() >= 1
    for i in range(marks.count()):
        mark = marks.nth(i)
        style = mark.evaluate(
            """el => { const s = getComputedStyle(el);
                return {border: s.borderBottomWidth, line: s.textDecorationLine,
                        background: s.backgroundColor}; }"""
        )
        assert style["border"] == "0px", style
        assert "underline" in style["line"], style
        assert style["background"] not in ("rgba(0, 0, 0, 0)", "transparent"), style
    lines = marks.first.evaluate(
        "el => Array.from(el.getClientRects()).map(r => [r.top, r.bottom])"
    )
    assert len(lines) >= 2, "the first claim should wrap at 390 px"
    for (_, bottom), (top, _) in zip(lines, lines[1:], strict=False):
        assert bottom <= top + 0.5, lines
    assert serious_axe(page, "#answer-claims") == []
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("#answer-panel").screenshot(path=str(ARTIFACTS / "claims-390.png"))


def test_operator_cost_table_fits_at_1280(
    wide_page: Any, live_server: Any, operator: Any, requester: Any
) -> None:
    """Issue 26 item 2: the /ops/ cost table (per day, role and model) fits its panel at
    1280 px with real model names, token counts in the millions and priced costs: its
    container does not scroll and the page does not scroll sideways."""
    from datetime import timedelta
    from decimal import Decimal

    from django.utils import timezone

    from tests.factories import RunFactory, ValidationSnapshotFactory

    page = wide_page
    task = make_reviewable_task(requester)
    for day in range(5):
        for model in ("anthropic:claude-sonnet-4-5", "openai:gpt-4.1-mini", "compat:llama3"):
            RunFactory(
                task=task,
                model_name=model,
                started_at=timezone.now() - timedelta(days=day),
                input_tokens=12_345_678,
                output_tokens=1_234_567,
                cost=Decimal("1234.5678"),
            )
        ValidationSnapshotFactory(
            task=task,
            model_name="anthropic:claude-opus-4-1",
            input_tokens=9_876_543,
            output_tokens=987_654,
            cost=Decimal("987.65"),
        )
    login(page, live_server, "otto", "/ops/")
    page.set_viewport_size({"width": 1280, "height": 900})
    page.wait_for_load_state("networkidle")
    assert page.locator("#ops-cost tbody tr").count() >= 15
    assert page_overflow(page) == ""
    sizes = page.evaluate(
        """() => { const t = document.querySelector("#ops-cost table");
                   const c = t.parentElement;
                   return [c.className, c.scrollWidth, c.clientWidth,
                           t.getBoundingClientRect().right,
                           document.getElementById("ops-cost").getBoundingClientRect().right]; }"""
    )
    container, scroll_width, client_width, table_right, panel_right = sizes
    assert container == "table-scroll-x"
    assert scroll_width <= client_width, sizes
    assert table_right <= panel_right, sizes
