"""Browser tests: Playwright (sync API) on the system Chromium against the live server
(U1, U2, U3, U4, U7). Screenshots go to ``test-artifacts/`` (git-ignored)."""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from bench.trace_tree import CHROMIUM, LAUNCH_ARGS
from tasks_app.models import Task
from tasks_app.workflow.states import TaskStatus as S
from tests.factories import KnowledgeDocumentFactory, ToolEvidenceFactory
from tests.ui.conftest import FACT, make_reviewable_task

ARTIFACTS = Path(settings.BASE_DIR) / "test-artifacts"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not os.path.exists(CHROMIUM),
        reason=f"browser tests need the system Chromium at {CHROMIUM} (apt-get install chromium)",
    ),
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    # Scoped to these tests, so subprocesses started by later tests do not inherit it.
    with pytest.MonkeyPatch.context() as patch, sync_playwright() as p:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Any, live_server: Any, monkeypatch: Any) -> Iterator[Any]:
    # Playwright's sync API runs an event loop in this thread; the ORM calls the test
    # makes between browser steps are still plain synchronous calls.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    context.set_default_timeout(10_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.errors = errors
    yield page
    # Let pending htmx requests settle before the database is flushed.
    page.wait_for_timeout(200)
    context.close()


def wait_until(page: Any, expression: str, timeout_ms: int = 20_000) -> None:
    """Poll ``expression`` in the page until it is truthy. ``page.wait_for_function``
    evaluates a string with ``eval`` inside the page, which the product's Content
    Security Policy (no 'unsafe-eval') refuses whenever the first check is false; an
    ``evaluate`` from the test's side is not subject to it."""
    deadline = time.monotonic() + timeout_ms / 1000
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise AssertionError(f"still false after {timeout_ms} ms: {expression}")
        page.wait_for_timeout(20)


def login(page: Any, live_server: Any, username: str, next_url: str) -> None:
    page.goto(f"{live_server.url}/login/?next={next_url}")
    page.fill("#id_username", username)
    page.fill("#id_password", "pw-123456")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(re.escape(next_url) + "$"))


def in_worker_thread(func: Any, **kwargs: Any) -> None:
    """Run a job's service in its own thread, as a worker would: the agent runtime uses
    asyncio, and this thread already runs Playwright's event loop."""
    from django.db import connection

    failures: list[BaseException] = []

    def target() -> None:
        try:
            func(**kwargs)
        except BaseException as exc:  # re-raised in the test thread
            failures.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive(), f"{func.__name__} did not finish"
    if failures:
        raise failures[0]


def screenshot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.evaluate("window.scrollTo(0, 0)")  # the sticky top bar stays at the top
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


def test_reviewer_triages_a_task_without_full_reloads(
    page: Any, live_server: Any, reviewer: Any, requester: Any
) -> None:
    """U1–U3: log in, open the queue, open a task, search the validator input for a fact,
    mark it satisfied; the queue updates without a full page reload."""
    from playwright.sync_api import expect

    task = make_reviewable_task(requester)
    other = make_reviewable_task(requester, title="Parental leave in Lisbon")
    login(page, live_server, "rita", "/review/")
    expect(page.locator(f'tr[data-task-id="{task.pk}"]')).to_be_visible()
    page.evaluate("window.__noReload = 'still here'")
    screenshot(page, "queue.png")

    page.click(f'tr[data-task-id="{task.pk}"] a.open')
    page.wait_for_url(f"**/tasks/{task.pk}/")
    expect(page.locator("#validator-input")).to_be_visible()
    page.fill("#validator-input-search", "1,800 EUR")
    page.press("#validator-input-search", "Enter")
    expect(page.locator("#validator-input-count")).to_contain_text("1 / 2")
    expect(page.locator("#validator-input .l.current mark")).to_have_text("1,800 EUR")
    # Copy and download give the input exactly as sent.
    snap = task.validations.get()
    page.click("#validator-input-wrap [data-copy]")
    expect(page.locator("#validator-input-wrap [data-copy]")).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == snap.rendered_input
    with page.expect_download() as download_info:
        page.click("#validator-input-wrap a[download]")
    assert Path(download_info.value.path()).read_text(encoding="utf-8") == snap.rendered_input
    # Evidence content loads on demand.
    page.click(f"#ev-{task.tool_evidence.get(sequence=1).pk} summary")
    expect(page.locator(f"#evidence-{task.tool_evidence.get(sequence=1).pk}-content")).to_have_text(
        FACT
    )
    screenshot(page, "detail.png")

    page.click("#task-actions button[value=satisfied]")
    # Complete-and-next (issue 13): the next task of the queue opens, no dialog.
    page.wait_for_url(f"**/tasks/{other.pk}/")
    expect(page.locator("#messages")).to_contain_text("satisfied")
    expect(page.locator("#queue-position")).to_have_text("Task 1 of 1 in the queue")
    assert page.evaluate("window.__noReload") == "still here"
    assert Task.objects.get(pk=task.pk).status == S.CLOSED
    assert page.errors == []


def test_keyboard_triage_in_the_queue(
    page: Any, live_server: Any, reviewer: Any, requester: Any
) -> None:
    """U7, issue 13: j/k move, a abandons after an in-page confirmation (no native
    dialog), the list re-renders in place and the next row is selected."""
    from playwright.sync_api import expect

    first = make_reviewable_task(requester, title="First question")
    second = make_reviewable_task(requester, title="Second question")
    login(page, live_server, "rita", "/review/")
    page.evaluate("window.__noReload = 1")
    page.keyboard.press("j")
    page.keyboard.press("j")
    expect(page.locator("tr.selected")).to_have_attribute("data-task-id", str(second.pk))
    page.keyboard.press("k")
    expect(page.locator("tr.selected")).to_have_attribute("data-task-id", str(first.pk))
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.keyboard.press("a")
    expect(page.locator("#queue-inline-title")).to_contain_text(f"Abandon #{first.pk}")
    expect(page.locator("#queue-inline-confirm")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator(f'tr[data-task-id="{first.pk}"]')).to_have_count(0)
    assert dialogs == []
    assert Task.objects.get(pk=first.pk).status == S.ABANDONED
    expect(page.locator("tr.selected")).to_have_attribute("data-task-id", str(second.pk))
    expect(page.locator("tr.selected")).to_be_focused()
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/tasks/{second.pk}/")
    assert page.evaluate("window.__noReload") == 1


def test_script_in_evidence_does_not_execute(
    page: Any, live_server: Any, reviewer: Any, requester: Any
) -> None:
    """U7: a tool result with <script> and <img onerror> renders as text."""
    from playwright.sync_api import expect

    payload = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned2 = 1">'
    task = make_reviewable_task(requester, title=payload)
    item = ToolEvidenceFactory(
        run=task.runs.get(), sequence=7, tool_name="fetch_url", title=payload, content=payload
    )
    snap = task.validations.get()
    snap.rendered_input = snap.rendered_input + "\n" + payload
    snap.save()
    login(page, live_server, "rita", f"/tasks/{task.pk}/")
    page.click(f"#ev-{item.pk} summary")
    expect(page.locator(f"#evidence-{item.pk}-content")).to_have_text(payload)
    expect(page.locator("#validator-input")).to_contain_text("<script>window.__pwned = 1</script>")
    page.wait_for_timeout(300)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.evaluate("typeof window.__pwned2") == "undefined"


def test_requester_submits_a_task_and_watches_it_progress(
    page: Any, live_server: Any, requester: Any
) -> None:
    """U4: submit a task, see its status and steps change live (polling) up to a final
    status, then give feedback, all without a full reload after submitting."""
    from playwright.sync_api import expect

    from evidence_app.validation.services import validation_run
    from tasks_app.runtime.attempts import attempt_run

    KnowledgeDocumentFactory(
        title="Training budget", body=FACT + " Unused budget does not carry over."
    )
    login(page, live_server, "alice", "/tasks/new/")
    page.fill("#id_request", "What is the annual training budget per employee?")
    page.click("#task-new-form button[type=submit]")
    page.wait_for_url(re.compile(r"/tasks/\d+/$"))
    task = Task.objects.get(owner=requester)
    expect(page.locator("#task-status")).to_have_text("Open")
    page.evaluate("window.__noReload = 'yes'")

    # What the worker does, step by step, while the page polls.
    in_worker_thread(attempt_run, task_id=task.pk)
    expect(page.locator("#task-status")).to_have_text("Validating", timeout=15_000)
    expect(page.locator("#evidence-panel")).to_contain_text("read_document")
    in_worker_thread(validation_run, task_id=task.pk, attempt_index=1)
    task.refresh_from_db()
    final = task.get_status_display()
    assert task.status in {S.AWAITING_FEEDBACK, S.NEEDS_REVIEW}
    expect(page.locator("#task-status")).to_have_text(final, timeout=15_000)
    expect(page.locator("#answer-panel")).to_contain_text("1,800")
    expect(page.locator("#progress")).to_have_count(0)  # polling stopped
    page.keyboard.press("s")  # keyboard shortcut on the task page, no dialog (issue 13)
    expect(page.locator("#task-status")).to_have_text("Closed")
    assert page.evaluate("window.__noReload") == "yes"
    assert page.errors == []


def test_shortcut_pressed_right_after_a_swap_stays_in_page(
    page: Any, live_server: Any, reviewer: Any, requester: Any
) -> None:
    """U3/U4: the task view is swapped into #main (as the progress poll does when the
    status changes) and "s" is pressed in the same tick, before htmx has bound the new
    content; the decision still goes through htmx, with no full page reload."""
    from playwright.sync_api import expect

    task = make_reviewable_task(requester)
    login(page, live_server, "rita", f"/tasks/{task.pk}/")
    expect(page.locator("#act-satisfied")).to_be_visible()
    page.evaluate("window.__noReload = 'kept'")
    page.evaluate(
        """() => new Promise((resolve) => {
          document.body.addEventListener("htmx:afterSwap", function once() {
            document.body.removeEventListener("htmx:afterSwap", once);
            document.dispatchEvent(new KeyboardEvent("keydown", {key: "s", bubbles: true}));
            resolve();
          });
          htmx.ajax("GET", location.pathname, {target: "#main", swap: "innerHTML"});
        })"""
    )
    expect(page.locator("#messages")).to_contain_text("satisfied")
    task.refresh_from_db()
    assert task.status == S.CLOSED
    assert page.evaluate("window.__noReload") == "kept"
    assert page.errors == []
