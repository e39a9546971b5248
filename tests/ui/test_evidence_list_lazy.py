"""A long evidence list loads page by page, with a search within it (U2; issue 39)."""

from __future__ import annotations

import html
from typing import Any

import pytest
from django.db.models import F
from django.urls import reverse

from evidence_app.review.lists import PAGE_SIZE, TRANSCRIPT_PAGE_SIZE
from evidence_app.review.task_detail import EVIDENCE_INLINE_ITEMS
from tasks_app.models import RunMessage, ToolEvidence
from tests.ui.conftest import make_reviewable_task

pytestmark = pytest.mark.django_db


def _add_results(task: Any, count: int) -> list[Any]:
    run = task.runs.get()
    ToolEvidence.objects.bulk_create(
        ToolEvidence(
            run=run,
            task=task,
            attempt_index=1,
            sequence=100 + i,
            tool_name="read_document",
            title=f"Document {i}",
            content=("needle " if i % 100 == 7 else "") + f"result {i} " * 10,
            content_chars=100,
        )
        for i in range(count)
    )
    return list(task.tool_evidence.order_by("attempt_index", "run_id", "sequence"))


def test_detail_lists_a_first_page_and_loads_the_next_pages_on_request(
    client: Any, reviewer: Any, requester: Any, other_requester: Any
) -> None:
    """Issue 39: the first EVIDENCE_INLINE_ITEMS results inline, then a "more" row
    that loads PAGE_SIZE results and a "more" row of its own, never the whole rest;
    other requesters get 404."""
    task = make_reviewable_task(requester)
    ordered = _add_results(task, PAGE_SIZE + 150)
    total = len(ordered)
    client.force_login(reviewer)
    page = client.get(reverse("task_detail", args=[task.pk])).content.decode()
    assert page.count('<details id="ev-') == EVIDENCE_INLINE_ITEMS
    assert f"{total} tool results" in page
    url = reverse("evidence_list", args=[task.pk])
    assert f"{url}?offset={EVIDENCE_INLINE_ITEMS}" in page
    assert f"Show the next {PAGE_SIZE} results ({total - EVIDENCE_INLINE_ITEMS} left)" in page
    assert f'id="ev-{ordered[EVIDENCE_INLINE_ITEMS].pk}"' not in page

    second = client.get(
        url, {"offset": EVIDENCE_INLINE_ITEMS}, HTTP_HX_REQUEST="true"
    ).content.decode()
    assert second.count('<details id="ev-') == PAGE_SIZE
    assert f'id="ev-{ordered[EVIDENCE_INLINE_ITEMS].pk}"' in second
    assert f'id="ev-{ordered[EVIDENCE_INLINE_ITEMS + PAGE_SIZE].pk}"' not in second
    left = total - EVIDENCE_INLINE_ITEMS - PAGE_SIZE
    assert f"?offset={EVIDENCE_INLINE_ITEMS + PAGE_SIZE}" in second
    assert f"Show the next {left} results ({left} left)" in second

    last = client.get(
        url, {"offset": EVIDENCE_INLINE_ITEMS + PAGE_SIZE}, HTTP_HX_REQUEST="true"
    ).content.decode()
    assert last.count('<details id="ev-') == left
    assert f'id="ev-{ordered[-1].pk}"' in last
    assert "Show the next" not in last
    assert reverse("evidence_content", args=[task.pk, ordered[-1].pk]) in last

    client.force_login(other_requester)
    assert client.get(url).status_code == 404


def test_search_within_the_evidence_list_pages_the_matches(
    client: Any, reviewer: Any, requester: Any
) -> None:
    """Issue 39: a search lists only the results that contain the words, with their
    number and their R labels, in pages of PAGE_SIZE."""
    task = make_reviewable_task(requester)
    ordered = _add_results(task, 1000)
    matches = [e for e in ordered if "needle" in e.content]
    client.force_login(reviewer)
    url = reverse("evidence_list", args=[task.pk])
    body = client.get(url, {"q": "needle"}, HTTP_HX_REQUEST="true").content.decode()
    assert body.count('<details id="ev-') == len(matches) == 10
    assert all(f'id="ev-{e.pk}"' in body for e in matches)
    assert "10 tool results contain “needle”" in body
    assert 'hx-swap-oob="true"' in body
    none = client.get(url, {"q": "no such words"}, HTTP_HX_REQUEST="true").content.decode()
    assert '<details id="ev-' not in none
    assert "No tool result contains “no such words”" in none
    by_title = client.get(url, {"q": "Document 999"}, HTTP_HX_REQUEST="true").content.decode()
    assert by_title.count('<details id="ev-') == 1


def test_transcript_is_paged_and_searchable(client: Any, reviewer: Any, requester: Any) -> None:
    """Issue 39: a run's transcript loads TRANSCRIPT_PAGE_SIZE messages with a "more"
    row and a search box; a search returns the matching messages only; requesters get
    403 (staff material)."""
    task = make_reviewable_task(requester)
    run = task.runs.get()
    RunMessage.objects.bulk_create(
        RunMessage(run=run, index=10 + i, role="tool", content=f"message {i} " + "x" * 20)
        for i in range(TRANSCRIPT_PAGE_SIZE * 2)
    )
    client.force_login(reviewer)
    url = reverse("run_transcript", args=[task.pk, run.pk])
    first = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert first.count('<pre class="text" hx-disable>') == TRANSCRIPT_PAGE_SIZE + 1  # + output
    assert 'name="q"' in first
    total = TRANSCRIPT_PAGE_SIZE * 2 + 2
    assert f"{total} messages" in first
    assert f"?offset={TRANSCRIPT_PAGE_SIZE}" in first
    rest = client.get(
        url, {"offset": TRANSCRIPT_PAGE_SIZE}, HTTP_HX_REQUEST="true"
    ).content.decode()
    assert 'name="q"' not in rest
    assert rest.count("<li>") == TRANSCRIPT_PAGE_SIZE
    found = client.get(url, {"q": "message 123"}, HTTP_HX_REQUEST="true").content.decode()
    assert found.count("<li>") == 1
    assert "1 message contains “message 123”" in found
    client.force_login(requester)
    assert client.get(url).status_code == 403


def test_evidence_rows_give_the_markup_of_the_django_template(requester: Any) -> None:
    """Issue 39: the Evidence list's rows, rendered by Jinja2 for speed, give the markup
    of evidence_app/_evidence_items.html (labels, errors, titles, URLs, markup escaped)."""
    from django.template.loader import render_to_string
    from django.test.html import parse_html

    from evidence_app.review.rows import evidence_rows

    task = make_reviewable_task(requester)
    run = task.runs.get()
    ToolEvidence.objects.create(
        run=run,
        task=task,
        attempt_index=1,
        sequence=9,
        tool_name="fetch_url",
        arguments={"url": "https://x.test/<b>"},
        url="https://x.test/<b>",
        title='A "title" <i>',
        is_error=True,
        content="<script>1</script>" * 900,
    )
    items = list(
        task.tool_evidence.without_content().annotate(size=F("content_chars")).order_by("sequence")
    )
    labels = {items[0].pk: "R1"}
    django = render_to_string(
        "evidence_app/_evidence_items.html",
        {"items": items, "task": task, "evidence_labels": labels},
    )
    jinja = str(evidence_rows(items, task_id=task.pk, labels=labels))
    assert parse_html(html.unescape(jinja)) == parse_html(html.unescape(django))
    assert "<script>" not in jinja and "&lt;i&gt;" in jinja
