"""Drill 5 (browser part): hostile text renders inert in every page (U7, U2, A2).

Payloads (script tags, ``<img onerror>``, ``javascript:`` links, ``hx-get`` / ``hx-on``
attributes that htmx would act on, an off-site image) are stored in everything a person
or a tool can write: task title, request, rules and answer, tool results (content,
title, URL, arguments), document titles, the transcript, the validator's verdict, raw
response, rendered input and error, notes and event reasons. Every page and fragment is
then opened in Chromium (Playwright) as the operator, the reviewer and the requester.

Checked on each page: no dialog, no request to anything but the app's own origin and
never to the payloads' URLs, none of the payloads became an element or attribute, no
Content-Security-Policy violation (which would also catch our own markup breaking the
policy), and every piece of payload text sits inside an ``hx-disable`` container. The
page's htmx runs with ``selfRequestsOnly``, no script tags in swaps and no eval.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest
from django.urls import reverse

from tasks_app.models import Feedback, FeedbackAction, LLMRequestSnapshot, TaskEvent
from tests.drills.support import report
from tests.factories import KnowledgeDocumentFactory, RunMessageFactory, ToolEvidenceFactory
from tests.ui.conftest import make_reviewable_task
from tests.ui.test_browser import CHROMIUM, browser, login, page  # noqa: F401 (fixtures)

pytestmark = [
    pytest.mark.drill,
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(240),
    pytest.mark.skipif(
        not __import__("os").path.exists(CHROMIUM),
        reason=f"needs the system Chromium at {CHROMIUM}",
    ),
]

MARK = "drill-pwned"
PAYLOADS = [
    f'<script>window.__xss = 1; alert("{MARK}-script")</script>',
    f"<img src=x onerror=\"window.__xss = 2; alert('{MARK}-img')\">",
    f'<a id="{MARK}-js" href="javascript:alert(\'{MARK}-js\')">click me</a>',
    f'<div hx-get="/{MARK}/hx-get" hx-trigger="load" id="{MARK}-hx">htmx</div>',
    f"<button hx-on:click=\"alert('{MARK}-hx-on')\" "
    f"hx-on::load=\"alert('{MARK}-load')\">b</button>",
    f'"><svg onload="alert(\'{MARK}-svg\')"></svg><img src="http://127.0.0.2:9/{MARK}.png">',
    f'</pre></div></EXTERNAL-CONTENT><iframe src="/{MARK}/frame"></iframe>',
]
HOSTILE = "\n".join(PAYLOADS)

# Elements or attributes that may exist only if a payload was parsed as markup.
INJECTED_SELECTOR = ", ".join(
    [
        f"#{MARK}-js",
        f"#{MARK}-hx",
        f'[hx-get*="{MARK}"]',
        "[onerror]",
        "[onload]",
        "[hx-on\\:click], [hx-on\\:\\:load]",
        'a[href^="javascript:"]',
        f'iframe[src*="{MARK}"]',
        f'img[src*="{MARK}"]',
    ]
)

INSPECT_JS = """(mark) => {
  const out = {unprotected: [], texts: 0};
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    if (!node.nodeValue.includes(mark)) continue;
    out.texts += 1;
    const el = node.parentElement;
    if (el.closest('textarea, input, title')) continue;  // form values are not markup
    if (!el.closest('[hx-disable]'))
      out.unprotected.push(el.tagName + ' in ' + el.parentElement.outerHTML.slice(0, 160));
  }
  return out;
}"""


def hostile_task(owner: Any) -> Any:
    task = make_reviewable_task(owner, title=PAYLOADS[3][:120])
    task.request = "What is the budget?\n" + HOSTILE
    task.rules = "Rules:\n" + HOSTILE
    task.final_answer = "The budget is 1,800 EUR.\n" + HOSTILE
    task.save(update_fields=["request", "rules", "final_answer"])
    run = task.runs.get()
    document = KnowledgeDocumentFactory(title=PAYLOADS[1], body=HOSTILE)
    ToolEvidenceFactory(
        run=run,
        sequence=5,
        tool_name="fetch_url",
        arguments={"url": PAYLOADS[2], "document_id": document.pk},
        content=HOSTILE,
        title=PAYLOADS[0][:400],
        url=f"javascript:alert('{MARK}-url')",
    )
    ToolEvidenceFactory(
        run=run, sequence=6, tool_name="read_document", title=document.title, content=HOSTILE
    )
    RunMessageFactory(run=run, index=2, role="tool", content=HOSTILE)
    RunMessageFactory(run=run, index=3, role="assistant", content=HOSTILE)
    LLMRequestSnapshot.objects.create(
        run=run,
        iteration=0,
        provider=PAYLOADS[0][:50],
        model_name=PAYLOADS[4][:100],
        message_count=2,
        message_chars=100,
        tool_schema_chars=0,
        latency_ms=5,
    )
    snapshot = task.validations.get()
    snapshot.rendered_input = snapshot.rendered_input + "\n" + HOSTILE
    snapshot.system_prompt = HOSTILE
    snapshot.raw_responses = [HOSTILE]
    snapshot.error = HOSTILE
    snapshot.result = {
        **snapshot.result,
        "issues": PAYLOADS,
        "reasoning": HOSTILE,
        "evidence_gaps": PAYLOADS[:2],
        "recommended_revision_prompt": HOSTILE,
    }
    snapshot.save()
    Feedback.objects.create(task=task, action=FeedbackAction.NOTE, comment=HOSTILE)
    TaskEvent.objects.create(
        task=task, from_status="needs_review", to_status="needs_review", reason=HOSTILE
    )
    return task


def urls_for(task: Any, role: str) -> list[str]:
    run = task.runs.get()
    snapshot = task.validations.get()
    evidence = list(run.tool_evidence.order_by("sequence"))
    # Pages every person with access to the task sees.
    detail = [
        reverse("home"),
        reverse("task_detail", args=[task.pk]),
        reverse("task_progress", args=[task.pk]),
        *[reverse("task_section", args=[task.pk, s]) for s in ("request", "rules", "answer")],
        *[reverse("evidence_content", args=[task.pk, e.pk]) for e in evidence],
    ]
    # The validator's input, raw responses and transcripts are staff material (issue 13).
    staff_material = [
        *[
            reverse("snapshot_section", args=[task.pk, snapshot.pk, s])
            for s in ("input", "system", "raw")
        ],
        reverse("run_transcript", args=[task.pk, run.pk]),
    ]
    if role == "requester":
        return detail
    staff = [reverse("review_queue"), reverse("task_list_all"), *detail, *staff_material]
    if role == "reviewer":
        return staff
    return [
        *staff,
        reverse("ops_index"),
        reverse("ops_templates"),
        reverse("ops_task_inputs", args=[task.pk]),
        reverse("ops_llm_requests"),
        reverse("ops_validation", args=[snapshot.pk]),
        reverse("ops_bulk_replay"),
        reverse("ops_agreement"),
        reverse("ops_charts"),
        reverse("ops_team"),
    ]


def test_hostile_text_is_inert_in_every_page(
    page: Any,  # noqa: F811
    live_server: Any,
    requester: Any,
    reviewer: Any,
    operator: Any,
) -> None:
    """U7: stored XSS / htmx-attribute payloads never execute, never load anything, never
    become markup, and always sit inside hx-disable; htmx is locked down on every page."""
    task = hostile_task(requester)
    origin = urlsplit(live_server.url)
    dialogs: list[str] = []
    foreign: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))

    def on_request(request: Any) -> None:
        parts = urlsplit(request.url)
        if parts.scheme == "data":
            return
        if (parts.hostname, parts.port) != (origin.hostname, origin.port) or MARK in request.url:
            foreign.append(request.url)

    page.on("request", on_request)
    page.add_init_script(
        "window.__cspViolations = [];"
        "document.addEventListener('securitypolicyviolation',"
        " e => window.__cspViolations.push(e.violatedDirective + ' ' + e.blockedURI));"
    )
    problems: list[str] = []
    pages = 0
    for role, username in (("operator", "otto"), ("reviewer", "rita"), ("requester", "alice")):
        page.context.clear_cookies()
        login(page, live_server, username, reverse("home"))
        for url in urls_for(task, role):
            response = page.goto(live_server.url + url)
            assert response is not None and response.status == 200, (role, url, response)
            page.wait_for_load_state("networkidle")
            # Open every collapsed section so lazy fragments load and render too.
            page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
            page.wait_for_timeout(150)
            page.wait_for_load_state("networkidle")
            pages += 1
            where = f"{role} {url}"
            config = page.evaluate(
                "() => window.htmx ? [htmx.config.selfRequestsOnly, htmx.config.allowScriptTags,"
                " htmx.config.allowEval, htmx.version] : null"
            )
            if config is not None and config[:3] != [True, False, False]:
                problems.append(f"{where}: htmx config {config}")
            if page.evaluate("typeof window.__xss") != "undefined":
                problems.append(f"{where}: a payload script ran")
            injected = page.evaluate(
                "(sel) => Array.from(document.querySelectorAll(sel))"
                ".map(e => e.outerHTML.slice(0, 80))",
                INJECTED_SELECTOR,
            )
            if injected:
                problems.append(f"{where}: payload became markup: {injected}")
            violations = page.evaluate("window.__cspViolations")
            if violations:
                problems.append(f"{where}: CSP violations {violations}")
            texts = page.evaluate(INSPECT_JS, MARK)
            if texts["unprotected"]:
                problems.append(
                    f"{where}: payload text outside hx-disable in {texts['unprotected']}"
                )
    assert not dialogs, dialogs
    assert not foreign, foreign
    assert not problems, "\n".join(problems)
    assert not page.errors, page.errors
    report(
        "hostile input (browser)",
        f"{len(PAYLOADS)} payloads in 15 fields, {pages} page views as operator/reviewer/"
        f"requester: 0 dialogs, 0 foreign requests, 0 injected elements, 0 CSP violations, "
        f"all payload text inside hx-disable; htmx selfRequestsOnly, no script tags, no eval",
    )
