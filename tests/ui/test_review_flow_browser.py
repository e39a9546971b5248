"""Browser tests of the review flow (issue 13): keyboard-only triage of the demo queue to
empty, revise through the inline form, what a requester sees, and the axe-core sweep
over every page and role. System Chromium via Playwright; axe-core from npm
(``npm ci`` at the repository root, done by .ci/run)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.urls import reverse

from evidence_app.trust.audits import audit_judge
from tasks_app.models import Task
from tasks_app.workflow.states import TaskStatus as S
from tests.audit_helpers import drawn_audit
from tests.ui.conftest import make_reviewable_task
from tests.ui.test_browser import (
    ARTIFACTS,
    CHROMIUM,
    browser,  # noqa: F401 (fixture)
    in_worker_thread,
    login,
    wait_until,
)

AXE = Path(settings.BASE_DIR) / "node_modules" / "axe-core" / "axe.min.js"
DEMO_DIR = Path(settings.BASE_DIR) / "demo"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason=f"needs the system Chromium at {CHROMIUM}"
    ),
]


@pytest.fixture
def page(browser: Any, live_server: Any, monkeypatch: Any) -> Iterator[Any]:  # noqa: F811
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    # bypass_csp: the app's policy rightly refuses inline scripts, and axe is injected as one.
    context = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    context.set_default_timeout(10_000)
    page = context.new_page()
    errors: list[str] = []
    dialogs: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.errors = errors
    page.dialogs = dialogs
    yield page
    page.wait_for_timeout(200)
    context.close()


def build_demo_queue(owner: Any) -> None:
    """The demo handbook and demo tasks, each run through the real offline pipeline
    (agent, validator, automatic retries) the way the workers would."""
    from evidence_app.validation.services import validation_run
    from tasks_app.knowledge.importer import import_folder
    from tasks_app.runtime.attempts import attempt_run
    from tasks_app.workflow import services

    import_folder(DEMO_DIR / "handbook")
    for spec in json.loads((DEMO_DIR / "tasks.json").read_text(encoding="utf-8")):
        task = services.task_create(
            owner=owner,
            title=spec["title"],
            request=spec["request"],
            rules=spec.get("rules", ""),
            plan=spec.get("plan") or {},
            enqueue=False,
        )
        for _ in range(8):
            task.refresh_from_db()
            if task.status in (S.OPEN, S.NEEDS_REVISION):
                attempt_run(task_id=task.pk)
            elif task.status == S.VALIDATING:
                validation_run(task_id=task.pk, attempt_index=task.attempt_count)
            else:
                break


def screenshot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=False)


def test_keyboard_only_triage_of_the_demo_queue_to_empty(
    page: Any, live_server: Any, reviewer: Any, requester: Any
) -> None:
    """Issue 13: a reviewer triages the whole demo queue with the keyboard only. The
    progress count drops by one at each decision, focus lands on the next task, the
    queue's filter is kept, and no native dialog opens."""
    from playwright.sync_api import expect

    in_worker_thread(build_demo_queue, owner=requester)
    queue = list(Task.objects.needs_review().order_by("created_at", "id"))
    assert len(queue) >= 2, "the demo should put at least two tasks in review"
    login(page, live_server, "rita", "/")
    page.wait_for_url(re.compile(r"/review/$"))  # a reviewer lands on the queue
    expect(page.locator("#queue-remaining")).to_have_text(str(len(queue)))
    screenshot(page, "queue-1280.png")

    keys: list[str] = []

    def press(key: str) -> None:
        keys.append(key)
        page.keyboard.press(key)

    started = time.monotonic()
    press("j")
    first = page.locator("#queue-list tr.selected")
    expect(first).to_be_focused()
    expect(first).to_have_attribute("aria-selected", "true")
    expect(first).to_have_attribute("data-task-id", str(queue[0].pk))
    # First decision in the queue itself: satisfied; the next row takes the focus.
    press("s")
    expect(page.locator("#queue-remaining")).to_have_text(str(len(queue) - 1))
    expect(page.locator("#queue-done")).to_have_text("1")
    expect(page.locator("#queue-mine")).to_have_text("1")
    expect(page.locator(f'tr[data-task-id="{queue[1].pk}"]')).to_be_focused()
    # Then on the task pages: Enter opens, s decides and the next task opens.
    press("Enter")
    for i, task in enumerate(queue[1:], start=1):
        page.wait_for_url(f"**/tasks/{task.pk}/")
        expect(page.locator("#task-title")).to_be_focused()
        expect(page.locator("#queue-position")).to_have_text(
            f"Task 1 of {len(queue) - i} in the queue"
        )
        if i == 1:
            screenshot(page, "task-1280.png")
        if i == len(queue) - 1:
            press("a")  # the last one is abandoned through the in-page confirmation
            expect(page.locator("#abandon-submit")).to_be_focused()
            press("Enter")
        else:
            press("s")
    page.wait_for_url(re.compile(r"/review/$"))
    expect(page.locator("#queue-empty")).to_be_visible()
    expect(page.locator("#queue-remaining")).to_have_text("0")
    expect(page.locator("#queue-done")).to_have_text(str(len(queue)))
    elapsed = time.monotonic() - started
    assert Task.objects.needs_review().count() == 0
    assert Task.objects.get(pk=queue[-1].pk).status == S.ABANDONED
    assert page.dialogs == [] and page.errors == []
    print(
        f"\nkeyboard triage: {len(queue)} tasks to empty in {elapsed:.1f} s with "
        f"{len(keys)} keystrokes: {' '.join(keys)}"
    )


def test_revise_through_the_inline_form(
    page: Any, live_server: Any, reviewer: Any, requester: Any
) -> None:
    """Issue 13: r opens a multi-line comment field in the page, Tab goes from it to
    Send, Ctrl+Enter sends; an empty comment is refused in the page; no dialog."""
    from playwright.sync_api import expect

    task = make_reviewable_task(requester)
    login(page, live_server, "rita", f"/tasks/{task.pk}/")
    page.keyboard.press("r")
    box = page.locator("#feedback-comment")
    expect(box).to_be_focused()
    assert box.evaluate("el => el.tagName") == "TEXTAREA"
    page.keyboard.type("Quote the section heading.")
    page.keyboard.press("Enter")
    page.keyboard.type("And name the handbook chapter.")
    page.keyboard.press("Tab")
    expect(page.locator("#revise-submit")).to_be_focused()
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Control+Enter")
    expect(page.locator("#messages")).to_contain_text("revise")
    task.refresh_from_db()
    assert task.status == S.NEEDS_REVISION
    feedback = task.feedback.get()
    assert feedback.comment == "Quote the section heading.\nAnd name the handbook chapter."
    assert page.dialogs == [] and page.errors == []


def test_requester_never_sees_operator_sections(
    page: Any, live_server: Any, reviewer: Any, requester: Any
) -> None:
    """Issue 13: the requester gets the answer and the verdict in words; the validator
    input, raw responses, technical details, transcripts and admin links stay with staff."""
    from playwright.sync_api import expect

    task = make_reviewable_task(requester)
    login(page, live_server, "alice", f"/tasks/{task.pk}/")
    expect(page.locator("#verdict-panel")).to_contain_text("could not confirm")
    expect(page.locator("#answer-panel")).to_contain_text("1,800 EUR")
    for hidden in (
        "#input-panel",
        "#raw-panel",
        "#verdict-technical",
        "#trace-panel",
        "#kb-panel",
        "#queue-position",
    ):
        expect(page.locator(hidden)).to_have_count(0)
    body = page.locator("body").inner_text()
    for jargon in ("default@abc123", "tokens", "needs_review", "Admin"):
        assert jargon not in body, jargon
    snap = task.validations.get()
    response = page.goto(f"{live_server.url}/tasks/{task.pk}/validations/{snap.pk}/input/")
    assert response is not None and response.status == 403
    expect(page.locator("nav.mainnav")).to_be_visible()  # a styled 403 with navigation


# --- axe-core sweep ---------------------------------------------------------------------

AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]


# A phone, a tablet, a laptop and a desktop (issue 26 item 2).
WIDTHS = (390, 768, 1280, 1920)


def axe_violations(page: Any, *, inject: bool = True) -> list[dict[str, Any]]:
    if inject:
        page.add_script_tag(path=str(AXE))
    return page.evaluate(
        """async (tags) => {
          const r = await axe.run(document, {runOnly: {type: "tag", values: tags}});
          return r.violations.map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.length,
                                         target: v.nodes[0] && v.nodes[0].target.join(" ")}));
        }""",
        AXE_TAGS,
    )


def page_overflow(page: Any) -> str:
    """Empty when the page does not scroll sideways; else how wide it is and the widest
    element that sticks out of the viewport."""
    return page.evaluate(
        """() => {
          const root = document.scrollingElement;
          if (root.scrollWidth <= innerWidth) return "";
          let worst = null, right = innerWidth;
          for (const el of document.body.querySelectorAll("*")) {
            const r = el.getBoundingClientRect();
            if (r.right > right + 0.5) { right = r.right; worst = el; }
          }
          const name = worst ? worst.tagName.toLowerCase() + (worst.id ? "#" + worst.id : "")
            + (worst.className && typeof worst.className === "string"
               ? "." + worst.className.trim().split(/\\s+/).join(".") : "") : "?";
          const to = Math.round(right);
          return `scrollWidth ${root.scrollWidth} > ${innerWidth}, widest ${name} to ${to}`;
        }"""
    )


@pytest.mark.skipif(
    not AXE.exists(), reason="axe-core is not installed: run npm ci at the repo root"
)
def test_axe_core_sweep_over_every_page_and_role(
    page: Any, live_server: Any, reviewer: Any, operator: Any, requester: Any
) -> None:
    """Issue 13 and issue 26 item 2: 0 serious or critical axe-core violations on every
    page for every role, including the queue with a selection, the task page with the
    revise form open and the operator pages, at 390, 768, 1280 and 1920 px; and no page
    scrolls sideways at any of these widths. Prints the counts per page and width."""
    from django.contrib.auth.models import Group

    from tests.factories import KnowledgeDocumentFactory

    operator.groups.add(Group.objects.get_or_create(name="reviewers")[0])
    task = make_reviewable_task(requester)
    closed = make_reviewable_task(requester, title="Closed one")
    Task.objects.filter(pk=closed.pk).update(status=S.CLOSED)
    doc = KnowledgeDocumentFactory(
        title="Training budget", body="Intro.\n\nThe training budget is 1,800 EUR."
    )
    snap = task.validations.get()
    # Audits (issue 27): an open one (blind) and a judged one.
    audit = drawn_audit("accepted")
    judged = drawn_audit("rejected")
    audit_judge(judged.pk, user=reviewer, correct=True)
    base = live_server.url
    pages: dict[str, list[tuple[str, str, Any]]] = {
        "anonymous": [("login", "/login/", None), ("not found", "/nope/", None)],
        "alice": [
            ("my tasks", "/tasks/mine/", None),
            ("new task", "/tasks/new/", None),
            ("task", f"/tasks/{task.pk}/", None),
            ("closed task", f"/tasks/{closed.pk}/", None),
            ("forbidden", "/review/", None),
            ("account", "/account/", None),
        ],
        "rita": [
            ("queue, row selected", "/review/", lambda p: p.keyboard.press("j")),
            ("task, revise form open", f"/tasks/{task.pk}/", lambda p: p.keyboard.press("r")),
            ("all tasks", "/tasks/", None),
            ("knowledge search", "/knowledge/?q=training+budget", None),
            ("knowledge document", f"/knowledge/{doc.pk}/?q=training+budget", None),
            ("audits", reverse("audit_queue"), None),
            ("audit, blind", reverse("audit_detail", args=[audit.pk]), None),
            ("audit, judged", reverse("audit_detail", args=[judged.pk]), None),
        ],
    }
    # Operator URLs from the URLconf, so a renamed path fails here rather than 404s quietly.
    pages["otto"] = [
        ("operator overview", reverse("ops_index"), None),
        ("templates", reverse("ops_templates"), None),
        ("LLM requests", reverse("ops_llm_requests"), None),
        ("task inputs", reverse("ops_task_inputs", args=[task.pk]), None),
        ("validation and replay", reverse("ops_validation", args=[snap.pk]), None),
        ("bulk replay", reverse("ops_bulk_replay"), None),
        ("agreement", reverse("ops_agreement"), None),
        ("charts", reverse("ops_charts"), None),
        ("review team", reverse("ops_team"), None),
        ("trust", reverse("ops_trust"), None),
        ("judge", reverse("ops_judge"), None),
    ]
    report: list[str] = []
    serious: list[str] = []
    overflow: list[str] = []
    per_width = dict.fromkeys(WIDTHS, 0)
    serious_per_width = dict.fromkeys(WIDTHS, 0)
    for who, items in pages.items():
        page.context.clear_cookies()
        page.set_viewport_size({"width": 1280, "height": 900})
        if who != "anonymous":
            login(page, live_server, who, "/tasks/new/")
        for name, path, action in items:
            page.goto(base + path)
            page.wait_for_load_state("networkidle")
            if action:
                action(page)
                page.wait_for_timeout(150)
            # One load per page, four widths: resizing re-lays out the same document.
            page.add_script_tag(path=str(AXE))
            for width in WIDTHS:
                page.set_viewport_size({"width": width, "height": 900})
                found = axe_violations(page, inject=False)
                bad = [v for v in found if v["impact"] in ("serious", "critical")]
                per_width[width] += len(found)
                serious_per_width[width] += len(bad)
                report.append(
                    f"{who:9} {name:28} {width:4} px {len(found)} violations, "
                    f"{len(bad)} serious/critical"
                    + (f": {', '.join(v['id'] for v in found)}" if found else "")
                )
                serious += [f"{who} {name} {width} px: {v}" for v in bad]
                wide = page_overflow(page)
                if wide:
                    overflow.append(f"{who} {name} {width} px: {wide}")
    print("\naxe-core " + "\n".join(report))
    print(
        "axe-core per width (all / serious or critical): "
        + ", ".join(f"{w} px {per_width[w]}/{serious_per_width[w]}" for w in WIDTHS)
    )
    print("sideways overflow:\n" + ("\n".join(overflow) or "none"))
    assert serious == [], "\n".join(serious)
    assert overflow == [], "\n".join(overflow)


# --- No decision by accident (issue 26) -----------------------------------------------

REVISION_TEXT = "The sources are wrong, revise and retry"


def decision_state() -> list[tuple[Any, ...]]:
    """Every task's status and version with its counts of events and decisions: what a
    decision, a revision or a claim would change."""
    return [
        (t.pk, t.status, t.version, t.events.count(), t.feedback.count())
        for t in Task.objects.order_by("pk")
    ]


def test_empty_revise_keeps_the_form_and_typed_text_decides_nothing(
    page: Any, live_server: Any, reviewer: Any, requester: Any
) -> None:
    """Issue 26 item 1: on a task opened from the queue, an empty Revise (click, then
    Ctrl+Enter) shows the error beside the comment box and leaves the focus in it; the
    comment then typed ("The sources are wrong, revise and retry", whose "s" and "r"
    were read as shortcuts) changes nothing: the task is not Satisfied, no other task
    opens, no revision goes to another task."""
    from playwright.sync_api import expect

    task = make_reviewable_task(requester, title="First question")
    make_reviewable_task(requester, title="Second question")
    login(page, live_server, "rita", "/review/")
    page.keyboard.press("j")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/tasks/{task.pk}/")
    expect(page.locator("#queue-position")).to_have_text("Task 1 of 2 in the queue")
    before = decision_state()
    box = page.locator("#feedback-comment")
    error = page.locator("#revise-error")
    expect(box).to_have_attribute("required", "")

    page.click("#act-revise")
    expect(box).to_be_focused()
    page.click("#revise-submit")  # empty: refused by the browser, beside the field
    expect(error).to_be_visible()
    expect(error).to_contain_text("a revision needs a comment")
    expect(box).to_be_focused()
    expect(box).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#revise-panel")).to_be_visible()
    page.keyboard.press("Control+Enter")  # the same with the keyboard
    expect(error).to_be_visible()
    expect(box).to_be_focused()

    page.keyboard.type(REVISION_TEXT)
    page.wait_for_timeout(400)  # time for any request a stray shortcut would have sent
    expect(box).to_have_value(REVISION_TEXT)
    expect(box).to_be_focused()
    assert page.url.endswith(f"/tasks/{task.pk}/")
    assert decision_state() == before
    # Out of the box but still in the form that reported the error: keys stay keys.
    page.focus("#act-satisfied")
    page.keyboard.type("sr")
    page.wait_for_timeout(300)
    expect(page.locator("#revise-panel")).to_be_visible()
    expect(box).to_have_value(REVISION_TEXT)
    assert page.url.endswith(f"/tasks/{task.pk}/")
    assert decision_state() == before
    assert page.dialogs == [] and page.errors == []


def test_server_refuses_a_blank_revision_beside_the_field(
    page: Any, live_server: Any, reviewer: Any, requester: Any
) -> None:
    """Issue 26 item 1: a comment of spaces sent past the browser's check (the form's
    validation switched off) is refused by the server: the page comes back with the
    revise form open, the text kept, the error beside the field and the focus in it,
    and what is typed next decides nothing."""
    from playwright.sync_api import expect

    task = make_reviewable_task(requester, title="First question")
    make_reviewable_task(requester, title="Second question")
    login(page, live_server, "rita", f"/tasks/{task.pk}/")
    before = decision_state()
    page.keyboard.press("r")
    page.evaluate("document.getElementById('feedback-form').noValidate = true")
    page.fill("#feedback-comment", "   ")
    with page.expect_response(re.compile(r"/feedback/$")) as answer:
        page.keyboard.press("Control+Enter")
    assert answer.value.status == 422
    box = page.locator("#feedback-comment")
    expect(page.locator("#revise-error")).to_contain_text("a revision needs a comment")
    expect(box).to_be_focused()
    expect(box).to_have_value("   ")
    expect(page.locator("#messages .msg-error")).to_have_count(0)  # no banner
    page.keyboard.type("s r")
    page.wait_for_timeout(300)
    expect(box).to_have_value("   s r")
    assert decision_state() == before
    assert page.errors == []


def test_queue_shortcuts_never_act_while_typing(
    page: Any, live_server: Any, reviewer: Any, requester: Any
) -> None:
    """Issue 26 item 1: in the queue, j and s typed into the search box, a filter's
    select, the inline revise comment (also after its empty-comment error) or a
    contenteditable field decide nothing."""
    from playwright.sync_api import expect

    first = make_reviewable_task(requester, title="First question")
    make_reviewable_task(requester, title="Second question")
    login(page, live_server, "rita", "/review/")
    before = decision_state()

    page.focus("#id_q")
    page.keyboard.type("js")
    page.wait_for_timeout(500)  # the search refreshes the list
    expect(page.locator("#id_q")).to_have_value("js")
    page.fill("#id_q", "")
    page.wait_for_timeout(500)
    page.focus("#queue-filters select")
    page.keyboard.press("j")
    page.keyboard.press("s")
    page.wait_for_timeout(300)
    assert decision_state() == before

    page.evaluate(
        """() => { const d = document.createElement("div"); d.id = "scratch";
                   d.contentEditable = "true"; document.getElementById("main").prepend(d); }"""
    )
    page.focus("#scratch")
    page.keyboard.type("js")
    page.wait_for_timeout(300)
    assert decision_state() == before

    page.focus(f'tr[data-task-id="{first.pk}"]')
    page.keyboard.press("r")
    comment = page.locator("#queue-comment")
    expect(comment).to_be_focused()
    page.keyboard.press("Control+Enter")  # empty: refused beside the field
    expect(page.locator("#queue-comment-error")).to_be_visible()
    expect(comment).to_be_focused()
    page.keyboard.type("j s " + REVISION_TEXT)
    page.wait_for_timeout(300)
    expect(comment).to_have_value("j s " + REVISION_TEXT)
    expect(page.locator("#queue-inline")).to_be_visible()
    assert decision_state() == before
    assert page.errors == []


def test_queue_refresh_keeps_the_keyboard_focus(
    page: Any, live_server: Any, reviewer: Any, requester: Any
) -> None:
    """Issue 26: the 10-second refresh of the queue replaces the list; the row (or the
    link in a row) that had the focus has it again afterwards, not the page."""
    from playwright.sync_api import expect

    make_reviewable_task(requester, title="First question")
    second = make_reviewable_task(requester, title="Second question")
    page.clock.install()
    login(page, live_server, "rita", "/review/")
    page.keyboard.press("j")
    page.keyboard.press("j")
    row = page.locator(f'#queue-list tr[data-task-id="{second.pk}"]')
    expect(row).to_be_focused()
    for focused in (row, row.locator("a.open")):
        focused.focus()
        page.evaluate("document.getElementById('queue-list').dataset.old = 'yes'")
        with page.expect_response(re.compile(r"/review/\?")):
            page.clock.run_for(10_500)
        wait_until(page, "!document.getElementById('queue-list').dataset.old")
        page.wait_for_timeout(100)  # htmx settles the new list
        expect(focused).to_be_focused()
    assert page.errors == []
