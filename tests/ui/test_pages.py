"""View tests for every page of the review UI, with the Django test client (U1–U7)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse

from tasks_app.models import Task
from tasks_app.workflow.states import TaskStatus as S
from tests.factories import TaskFactory, ToolEvidenceFactory
from tests.ui.conftest import FACT

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


def hx(target: str) -> dict[str, str]:
    return {**HX, "HTTP_HX_TARGET": target}


def test_pages_require_login(client: Any, review_task: Any) -> None:
    """U1: every page redirects an anonymous visitor to the login page."""
    for url in [
        reverse("home"),
        reverse("review_queue"),
        reverse("task_detail", args=[review_task.pk]),
        reverse("ops_index"),
    ]:
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))


def test_login_page_and_login_flow(client: Any, reviewer: Any) -> None:
    """U1: log in with a password, land on the home page, log out."""
    assert client.get(reverse("login")).status_code == 200
    response = client.post(reverse("login"), {"username": "rita", "password": "pw-123456"})
    assert response.status_code == 302
    page = client.get(reverse("home"), follow=True)
    assert page.redirect_chain == [(reverse("review_queue"), 302)]  # issue 13: the queue
    assert b"Review queue" in page.content  # reviewer navigation
    assert client.post(reverse("logout")).status_code == 302


def test_requester_cannot_open_review_queue_or_operator_pages(client: Any, requester: Any) -> None:
    """U1, A2: the queue is for reviewers; operator pages for operators."""
    client.force_login(requester)
    assert client.get(reverse("review_queue")).status_code == 403
    assert client.get(reverse("ops_index")).status_code == 403
    assert client.get(reverse("ops_charts")).status_code == 403
    assert b"Review queue" not in client.get(reverse("home")).content


def test_reviewer_cannot_open_operator_pages(client: Any, reviewer: Any) -> None:
    """U5: operator pages need the operators group."""
    client.force_login(reviewer)
    assert client.get(reverse("ops_templates")).status_code == 403


def test_requester_sees_only_own_tasks(client: Any, requester: Any, other_requester: Any) -> None:
    """U4, A2: my tasks lists mine; another person's task is a 404."""
    mine = TaskFactory(owner=requester, title="Mine")
    theirs = TaskFactory(owner=other_requester, title="Theirs")
    client.force_login(requester)
    page = client.get(reverse("home")).content.decode()
    assert "Mine" in page and "Theirs" not in page
    assert client.get(reverse("task_detail", args=[theirs.pk])).status_code == 404
    assert client.get(reverse("task_detail", args=[mine.pk])).status_code == 200
    assert (
        client.post(
            reverse("task_feedback", args=[theirs.pk]), {"action": "abandon", "version": 0}
        ).status_code
        == 404
    )


def test_queue_lists_needs_review_oldest_first_with_counts(
    client: Any, reviewer: Any, requester: Any
) -> None:
    """U1: only needs_review tasks, oldest first, counts per status."""
    from datetime import timedelta

    from django.utils import timezone

    now = timezone.now()
    newer = TaskFactory(owner=requester, title="Newer one", status=S.NEEDS_REVIEW, created_at=now)
    older = TaskFactory(
        owner=requester,
        title="Older one",
        status=S.NEEDS_REVIEW,
        created_at=now - timedelta(days=2),
    )
    TaskFactory(owner=requester, title="Still running", status=S.RUNNING)
    client.force_login(reviewer)
    page = client.get(reverse("review_queue")).content.decode()
    assert page.index("Older one") < page.index("Newer one")
    assert "Still running" not in page
    assert "Needs review: <b>2</b>" in page and "Running: <b>1</b>" in page
    assert f'data-task-id="{older.pk}"' in page and f'data-task-id="{newer.pk}"' in page


def test_queue_filters_by_verdict_category_claim_and_text(
    client: Any, reviewer: Any, review_task: Any, requester: Any
) -> None:
    """U1: filters use the latest verdict (subquery) and the claim."""
    plain = TaskFactory(owner=requester, title="No verdict yet", status=S.NEEDS_REVIEW)
    client.force_login(reviewer)
    url = reverse("review_queue")

    def ids(params: dict[str, str]) -> set[int]:
        response = client.get(url, params, **hx("queue-list"))
        assert response.status_code == 200
        return {t.pk for t in response.context["tasks"]}

    assert ids({}) == {review_task.pk, plain.pk}
    assert ids({"vstatus": "insufficient_evidence"}) == {review_task.pk}
    assert ids({"vstatus": "none"}) == {plain.pk}
    assert ids({"category": "unsupported_claim"}) == {review_task.pk}
    assert ids({"category": "refusal"}) == set()
    assert ids({"q": "verdict"}) == {plain.pk}
    client.post(reverse("task_claim", args=[plain.pk]), {"op": "claim"})
    assert ids({"claimed": "mine"}) == {plain.pk}
    assert ids({"claimed": "unclaimed"}) == {review_task.pk}


def test_queue_htmx_refresh_returns_only_the_list(
    client: Any, reviewer: Any, review_task: Any
) -> None:
    """U1: the polled/filtered list is a fragment, not a page; it keeps polling."""
    client.force_login(reviewer)
    response = client.get(reverse("review_queue"), **hx("queue-list"))
    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith('<div id="queue-list"')
    assert "<html" not in body and 'hx-trigger="every 10s"' in body
    assert "HX-Request" in response["Vary"]


def test_queue_paginates(client: Any, reviewer: Any, requester: Any) -> None:
    """U1: 50 per page."""
    Task.objects.bulk_create(
        [
            Task(owner=requester, title=f"T{i}", request="r", status=S.NEEDS_REVIEW)
            for i in range(60)
        ]
    )
    client.force_login(reviewer)
    first = client.get(reverse("review_queue"))
    assert len(first.context["tasks"]) == 50
    second = client.get(reverse("review_queue"), {"page": 2})
    assert len(second.context["tasks"]) == 10


def test_task_detail_shows_everything(client: Any, reviewer: Any, review_task: Any) -> None:
    """U2: request, rules, answer, verdict fields, rendered input, raw response,
    evidence, runs, timeline."""
    client.force_login(reviewer)
    response = client.get(reverse("task_detail", args=[review_task.pk]))
    page = response.content.decode()
    assert response.status_code == 200
    for text in [
        "What is the annual training budget per employee?",
        "Cite the handbook section.",
        "It is 1,800 EUR per employee per year",
        "Insufficient evidence",
        "Unsupported claim",
        "The section number is not in the evidence.",
        "cite the section",
        "handbook section 18 heading",
        "Quote the section heading.",
        "The amount is supported by R2",
        "offline:judge (offline stand-in, not an LLM)",
        "search_documents",
        "read_document",
        "Timeline",
        "Validating → <strong>Needs review</strong>",
        "You are a strict validator.",
        "&quot;status&quot;: &quot;insufficient_evidence&quot;",
    ]:
        assert text in page, text
    # The validator input is in the line-numbered viewer, exactly as stored.
    assert f'<span class="l">{FACT}\n</span>' in page
    # Evidence content is not in the first response: it loads on demand.
    assert page.count(FACT) == 1


def test_task_detail_htmx_navigation_returns_content_only(
    client: Any, reviewer: Any, review_task: Any
) -> None:
    """U1: moving from the queue to a task swaps #main, no full page."""
    client.force_login(reviewer)
    response = client.get(reverse("task_detail", args=[review_task.pk]), **hx("main"))
    body = response.content.decode()
    assert "<html" not in body and "task-actions" in body


def test_lazy_fragments_return_full_content(client: Any, reviewer: Any, review_task: Any) -> None:
    """U2: evidence content, transcript, sections and the input download."""
    client.force_login(reviewer)
    item = review_task.tool_evidence.get(sequence=1)
    response = client.get(reverse("evidence_content", args=[review_task.pk, item.pk]), **HX)
    assert FACT in response.content.decode() and "hx-disable" in response.content.decode()
    run = review_task.runs.get()
    transcript = client.get(
        reverse("run_transcript", args=[review_task.pk, run.pk]), **HX
    ).content.decode()
    assert "assistant" in transcript and "1,800 EUR" in transcript
    section = client.get(
        reverse("task_section", args=[review_task.pk, "request"]), **HX
    ).content.decode()
    assert "annual training budget" in section
    snap = review_task.validations.get()
    download = client.get(reverse("snapshot_download", args=[review_task.pk, snap.pk]))
    assert download["Content-Type"].startswith("text/plain")
    assert "attachment" in download["Content-Disposition"]
    assert download.content.decode() == snap.rendered_input
    system = client.get(
        reverse("snapshot_download", args=[review_task.pk, snap.pk]), {"part": "system"}
    )
    assert system.content.decode() == snap.system_prompt
    raw = client.get(
        reverse("snapshot_section", args=[review_task.pk, snap.pk, "raw"]), **HX
    ).content.decode()
    assert "insufficient_evidence" in raw
    viewer = client.get(
        reverse("snapshot_section", args=[review_task.pk, snap.pk, "input"]), **HX
    ).content.decode()
    assert 'class="viewer"' in viewer and FACT in viewer


def test_fragments_of_another_persons_task_are_404(
    client: Any, other_requester: Any, review_task: Any
) -> None:
    """A2, STYLE: a fragment URL checks permissions on its own."""
    client.force_login(other_requester)
    item = review_task.tool_evidence.first()
    snap = review_task.validations.get()
    run = review_task.runs.get()
    for url in [
        reverse("evidence_content", args=[review_task.pk, item.pk]),
        reverse("snapshot_download", args=[review_task.pk, snap.pk]),
        reverse("snapshot_section", args=[review_task.pk, snap.pk, "input"]),
        reverse("run_transcript", args=[review_task.pk, run.pk]),
        reverse("task_section", args=[review_task.pk, "answer"]),
        reverse("task_progress", args=[review_task.pk]),
    ]:
        assert client.get(url).status_code == 404, url


def test_untrusted_content_is_escaped_everywhere(
    client: Any, reviewer: Any, review_task: Any
) -> None:
    """U7: tool output, titles, arguments and answers with markup render as text."""
    payload = '<script>window.pwned = 1</script><img src=x onerror="window.pwned=2">'
    run = review_task.runs.get()
    item = ToolEvidenceFactory(
        run=run,
        sequence=9,
        tool_name="fetch_url",
        title=payload,
        url="https://x.test/?q=<b>",
        arguments={"url": payload},
        content=payload,
    )
    Task.objects.filter(pk=review_task.pk).update(final_answer=payload, title=payload)
    snap = review_task.validations.get()
    snap.rendered_input = payload
    snap.result = {**snap.result, "issues": [payload], "reasoning": payload}
    snap.save()
    client.force_login(reviewer)
    pages = [
        client.get(reverse("task_detail", args=[review_task.pk])).content.decode(),
        client.get(
            reverse("evidence_content", args=[review_task.pk, item.pk]), **HX
        ).content.decode(),
        client.get(reverse("review_queue")).content.decode(),
    ]
    for page in pages:
        assert "<script>window.pwned" not in page
        assert "<img src=x" not in page
    assert "&lt;script&gt;window.pwned = 1&lt;/script&gt;" in pages[0]
    assert "&lt;script&gt;window.pwned = 1&lt;/script&gt;" in pages[1]


def test_htmx_is_configured_safely_and_served_locally(client: Any, requester: Any) -> None:
    """U7: htmx from static (no CDN), no eval, no script tags from swaps, CSRF header on body."""
    client.force_login(requester)
    page = client.get(reverse("home")).content.decode()
    assert (
        '"allowScriptTags": false' in page
        and '"allowEval": false' in page
        and '"selfRequestsOnly": true' in page
    )
    # Every script comes from our own static files (a random CSRF token may spell "cdn",
    # so the script sources are checked, not the whole page).
    sources = re.findall(r'<script[^>]*\bsrc="([^"]*)"', page)
    assert any("/static/django_htmx/htmx-2" in src for src in sources)
    assert all(src.startswith("/static/") for src in sources), sources
    assert 'hx-headers=\'{"X-CSRFToken": "' in page
    assert "/static/js/app.js" in page


def test_raw_responses_and_schema_retry_failures_are_shown(
    client: Any, reviewer: Any, review_task: Any
) -> None:
    """U2, O4, V7: each raw response verbatim with its facts, and every schema-retry
    failure (stage, path, message) even when a later retry succeeded."""
    snap = review_task.validations.get()
    snap.raw_responses = [
        {"attempt": 1, "text": "not json <at all>", "input_tokens": 10},
        {"attempt": 2, "text": '{"status": "insufficient_evidence"}', "input_tokens": 12},
    ]
    snap.schema_errors = [
        {
            "stage": "json-parse",
            "path": "",
            "message": "Expecting value",
            "attempt": 1,
            "cumulative_retries": 1,
        },
    ]
    snap.schema_retry_count = 1
    snap.save()
    client.force_login(reviewer)
    page = client.get(reverse("task_detail", args=[review_task.pk])).content.decode()
    assert "not json &lt;at all&gt;" in page and "input_tokens: 12" in page
    assert (
        "Schema-retry failures (1)" in page and "json-parse" in page and "Expecting value" in page
    )


def test_queue_row_shows_the_first_validator_issue(
    client: Any, reviewer: Any, review_task: Any
) -> None:
    """U1: the first issue of the latest verdict is visible in the queue row."""
    client.force_login(reviewer)
    page = client.get(reverse("review_queue")).content.decode()
    assert "The section number is not in the evidence." in page


HUGE = "99999999999999999999999"


@pytest.mark.parametrize(
    "path",
    [
        f"/tasks/{HUGE}/",
        f"/tasks/{HUGE}/progress/",
        f"/ops/validations/{HUGE}/",
        f"/ops/requests/?task={HUGE}",
        f"/ops/tasks/{HUGE}/inputs/",
    ],
)
def test_an_id_too_large_for_the_database_is_a_404_not_a_500(
    client: Any, reviewer: Any, operator: Any, path: str
) -> None:
    """Issue 43, item 4: an id longer than a bigint was a 500 (OverflowError) for a
    reviewer on the task page and for an operator on the model requests; now a 404."""
    reviewer.groups.add(*operator.groups.all())
    client.force_login(reviewer)
    assert client.get(path).status_code == 404


def test_a_task_id_too_large_in_the_bulk_replay_filter_is_refused(
    client: Any, operator: Any
) -> None:
    """Issue 43, item 4: the bulk replay's task ids filter says the id is not one."""
    client.force_login(operator)
    response = client.get("/ops/replay/", {"task_ids": HUGE})
    assert response.status_code == 200
    assert "is not a task id" in response.content.decode()


def test_the_inputs_size_comes_from_its_stored_count_not_the_body(
    client: Any, operator: Any, review_task: Any
) -> None:
    """Issue 48: the task page and the inputs page show the rendered input's size from the
    count stored with it (no statement measures the body, which may be tens of MB); an
    input that was not stored shows as empty."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from evidence_app.templatetags.evidentia import chars

    snap = review_task.validations.get()
    assert snap.prompt_stored and snap.rendered_input_chars == len(snap.rendered_input) > 0
    client.force_login(operator)
    with CaptureQueriesContext(connection) as queries:
        page = client.get(reverse("task_detail", args=[review_task.pk])).content.decode()
        inputs = client.get(reverse("ops_task_inputs", args=[review_task.pk])).content.decode()
    assert f"input {chars(len(snap.rendered_input))}" in page
    assert chars(len(snap.rendered_input)) in inputs
    measured = [q["sql"] for q in queries if re.search(r'LENGTH\([^)]*"rendered_input"', q["sql"])]
    assert not measured
    type(snap).objects.filter(pk=snap.pk).update(
        rendered_input="", system_prompt="", prompt_stored=False
    )
    page = client.get(reverse("task_detail", args=[review_task.pk])).content.decode()
    assert f"input {chars(0)}" in page
