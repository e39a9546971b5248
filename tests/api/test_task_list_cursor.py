"""The task lists' keyset cursor (issue 28 item 2): ``next`` links walk the list by
seeking past the last row's (created_at, id), beside the page numbers."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

from django.test import Client
from django.utils import timezone

from project.pagination import encode_cursor
from tasks_app.models import Task
from tasks_app.workflow.states import TaskStatus as S
from tests.factories import TaskFactory


def _walk(client: Client, url: str, between_pages: Any = None) -> tuple[list[int], int]:
    """Every id the ``next`` links lead through, from ``url``; calls ``between_pages``
    after each page. Returns (ids, pages)."""
    seen: list[int] = []
    pages = 0
    while url:
        response = client.get(url)
        assert response.status_code == 200, response.content
        body = response.json()
        seen += [item["id"] for item in body["items"]]
        pages += 1
        url = body["next"]
        if url and between_pages:
            between_pages()
    return seen, pages


def test_cursor_walks_every_task_once_while_tasks_are_inserted(
    rita: Client, requester: Any
) -> None:
    """Issue 28 item 2: newest first, tasks created between pages (some with the same
    created_at as listed ones) neither repeat a task nor skip one that existed at the
    start; every page but the last is full and the last says next = null."""
    start = timezone.now() - timedelta(days=1)
    for i in range(23):
        TaskFactory(owner=requester, created_at=start + timedelta(minutes=i // 3))
    before = list(Task.objects.order_by("-created_at", "-id").values_list("pk", flat=True))
    added: list[int] = []

    def insert() -> None:
        added.append(TaskFactory(owner=requester).pk)  # newer than every listed one

    seen, pages = _walk(rita, "/api/v1/tasks?limit=5", insert)
    assert seen == before
    assert pages == 5 and len(added) == 4


def test_cursor_in_ascending_order_shows_tasks_added_at_the_end_once(
    rita: Client, requester: Any
) -> None:
    """Issue 28 item 2: oldest first with a status filter, tasks inserted meanwhile at
    the end of the list are seen exactly once, after every task that was there."""
    start = timezone.now() - timedelta(days=1)
    for i in range(12):
        TaskFactory(
            owner=requester,
            status=(S.CLOSED, S.RUNNING)[i % 2],
            created_at=start + timedelta(minutes=i // 4),
        )
    before = list(
        Task.objects.filter(status=S.CLOSED)
        .order_by("created_at", "id")
        .values_list("pk", flat=True)
    )
    added: list[int] = []

    def insert() -> None:
        if len(added) < 2:
            added.append(TaskFactory(owner=requester, status=S.CLOSED).pk)

    seen, _ = _walk(rita, "/api/v1/tasks?ordering=created_at&status=closed&limit=4", insert)
    assert seen == before + added
    assert len(seen) == len(set(seen))


def test_offset_page_next_link_continues_by_cursor(rita: Client, requester: Any) -> None:
    """Issue 28 item 2: a page read by offset links to the rest by cursor (no offset in
    the link, the filters kept); the active list offers the cursor too."""
    for _ in range(9):
        TaskFactory(owner=requester, status=S.NEEDS_REVIEW)
    TaskFactory(owner=requester, status=S.CLOSED)
    expected = list(
        Task.objects.exclude(status=S.CLOSED).order_by("-id").values_list("pk", flat=True)
    )
    body = rita.get("/api/v1/tasks/active?ordering=-id&limit=4&offset=2").json()
    assert [item["id"] for item in body["items"]] == expected[2:6]
    query = parse_qs(urlsplit(body["next"]).query)
    assert "offset" not in query and query["ordering"] == ["-id"]
    rest, _ = _walk(rita, body["next"])
    assert rest == expected[6:]


class _Row:
    """A row as a forger would describe it: any values for created_at and id."""

    def __init__(self, created_at: str, pk: int) -> None:
        self.created_at = created_at
        self.id = pk


def test_a_bad_cursor_is_refused(rita: Client, requester: Any) -> None:
    """Issue 28 item 2: a forged cursor (not base64 JSON, a date at the calendar's edge,
    an id beyond a bigint, a date without a zone) answers 404 (issue 34 finding 4: well
    formed, as the document says, but no page of this list), one from another ordering or
    a cursor with an offset 422, and none of them a page; outside the documented format,
    422."""
    for _ in range(3):
        TaskFactory(owner=requester)
    first = rita.get("/api/v1/tasks?limit=1").json()
    cursor = parse_qs(urlsplit(first["next"]).query)["cursor"][0]
    forged = [
        encode_cursor(["-created_at", "-id"], _Row("0001-01-01T00:00:00+14:00", 1)),
        encode_cursor(["-created_at", "-id"], _Row("2026-01-01T00:00:00+00:00", 2**70)),
        encode_cursor(["-created_at", "-id"], _Row("2026-01-01T00:00:00", 1)),
    ]
    for url in (
        *[f"/api/v1/tasks?cursor={c}" for c in forged],
        "/api/v1/tasks?cursor=not-a-cursor",
    ):
        response = rita.get(url)
        assert response.status_code == 404, url
        assert "items" not in response.json()
    for url in (
        f"/api/v1/tasks?ordering=-id&cursor={cursor}",
        f"/api/v1/tasks?cursor={cursor}&offset=1",
        "/api/v1/tasks?cursor=no%20spaces",
    ):
        response = rita.get(url)
        assert response.status_code == 422, url
        assert "items" not in response.json()
    assert rita.get(f"/api/v1/tasks?cursor={cursor}&limit=1").status_code == 200
