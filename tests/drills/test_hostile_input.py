"""Drill 5 (HTTP part): hostile request bodies, paths and query strings get a 4xx with
the one error shape, never a 500 and never a half-written change (A3).

Covered: a 50 MB body (413, on the API and on a page), malformed JSON, wrong types,
integers far beyond 64 bits (body, path and query), invalid UTF-8, unknown enum values.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from tasks_app.accounts.auth import api_token_create
from tasks_app.models import Feedback, Task, TaskEvent
from tasks_app.workflow.states import TaskStatus as S
from tests.drills.support import report
from tests.factories import TaskFactory

pytestmark = [pytest.mark.drill, pytest.mark.django_db]

HUGE = 10**30
FIFTY_MB = 50 * 1024 * 1024


@pytest.fixture
def api(requester: Any) -> Client:
    raw = api_token_create(user=requester, name="hostile")[1]
    return Client(headers={"Authorization": f"Bearer {raw}"}, raise_request_exception=False)


@pytest.fixture
def task(requester: Any) -> Task:
    return TaskFactory(owner=requester, status=S.NEEDS_REVIEW)


def post_raw(client: Client, url: str, body: bytes, content_type: str = "application/json") -> Any:
    return client.generic("POST", url, data=body, content_type=content_type)


def hostile_api_requests(task: Task) -> list[tuple[str, str, str, bytes | None]]:
    """(label, method, url, body) for requests that must all get a 4xx."""
    fb = f"/api/v1/tasks/{task.pk}/feedback"
    return [
        ("malformed JSON", "POST", "/api/v1/tasks", b'{"request": "x",'),
        ("JSON array instead of object", "POST", "/api/v1/tasks", b"[1, 2, 3]"),
        ("empty body", "POST", "/api/v1/tasks", b""),
        ("request is a number", "POST", "/api/v1/tasks", b'{"request": 42}'),
        ("request is an object", "POST", "/api/v1/tasks", b'{"request": {"$gt": ""}}'),
        ("plan is a string", "POST", "/api/v1/tasks", b'{"request": "x", "plan": "team"}'),
        (
            "unknown validation policy",
            "POST",
            "/api/v1/tasks",
            b'{"request": "x", "validation_policy": "sometimes"}',
        ),
        ("unknown feedback action", "POST", fb, b'{"action": "explode"}'),
        ("action is a list", "POST", fb, b'{"action": ["satisfied"]}'),
        (
            "huge expected_version",
            "POST",
            fb,
            json.dumps({"action": "satisfied", "expected_version": HUGE}).encode(),
        ),
        (
            "negative expected_version",
            "POST",
            fb,
            b'{"action": "satisfied", "expected_version": -1}',
        ),
        ("float expected_version", "POST", fb, b'{"action": "satisfied", "expected_version": 1.5}'),
        ("NaN in JSON", "POST", fb, b'{"action": "satisfied", "expected_version": NaN}'),
        (
            "deeply nested JSON",
            "POST",
            "/api/v1/tasks",
            b'{"request": "x", "plan": ' + b"[" * 5000 + b"]" * 5000 + b"}",
        ),
        ("invalid UTF-8", "POST", "/api/v1/tasks", b'{"request": "\xff\xfe\xc3\x28"}'),
        ("lone surrogate escape", "POST", "/api/v1/tasks", b'{"request": "\\ud800"}'),
        ("NUL in request", "POST", "/api/v1/tasks", b'{"request": "a\\u0000b"}'),
        ("huge task id in path", "GET", f"/api/v1/tasks/{HUGE}", None),
        (
            "huge task id in feedback path",
            "POST",
            f"/api/v1/tasks/{HUGE}/feedback",
            b'{"action": "satisfied"}',
        ),
        ("huge run id", "GET", f"/api/v1/runs/{HUGE}/messages", None),
        ("huge evidence id", "GET", f"/api/v1/evidence/{HUGE}", None),
        ("huge validation id", "GET", f"/api/v1/validations/{HUGE}", None),
        ("huge limit", "GET", f"/api/v1/tasks?limit={HUGE}", None),
        ("huge offset", "GET", f"/api/v1/tasks?offset={HUGE}", None),
        ("negative offset", "GET", "/api/v1/tasks?offset=-5", None),
        ("unknown status filter", "GET", "/api/v1/tasks?status=exploded", None),
        ("unknown ordering", "GET", "/api/v1/tasks?ordering=password", None),
        ("bool filter not a bool", "GET", "/api/v1/tasks?is_open=maybe", None),
        ("wrong content type", "POST", "/api/v1/tasks", b"request=x"),
    ]


def test_hostile_api_input_gets_4xx_and_changes_nothing(api: Client, task: Task) -> None:
    """A3: every hostile request gets a 4xx JSON error; none is a 500; the task, its
    events and feedback are untouched."""
    before = (task.status, task.version, TaskEvent.objects.count(), Task.objects.count())
    failures = []
    cases = hostile_api_requests(task)
    for label, method, url, body in cases:
        if method == "GET":
            response = api.get(url)
        elif label == "wrong content type":
            response = post_raw(api, url, body or b"", "application/x-www-form-urlencoded")
        else:
            response = post_raw(api, url, body or b"")
        ok = 400 <= response.status_code < 500
        if ok and response.get("Content-Type", "").startswith("application/json"):
            ok = "detail" in response.json()
        if not ok:
            failures.append(f"{label}: {response.status_code} {response.content[:200]!r}")
    # Django decodes an invalid UTF-8 query string with replacement characters: a search
    # for "\ufffd\ufffd" is harmless, so only a 5xx would be wrong here.
    response = api.get("/api/v1/tasks?q=%ff%fe")
    if response.status_code >= 500:
        failures.append(f"invalid UTF-8 in query: {response.status_code}")
    assert not failures, "\n".join(failures)
    task.refresh_from_db()
    after = (task.status, task.version, TaskEvent.objects.count(), Task.objects.count())
    assert before == after and not Feedback.objects.exists()
    report("hostile input (API)", f"{len(cases)} hostile requests, 0 5xx, 0 changes")


def test_fifty_megabyte_bodies_get_413(api: Client, requester: Any, task: Task) -> None:
    """A3: a 50 MB body is refused with 413 before anything is parsed or written, on the
    API and on a page form post."""
    big_json = b'{"request": "' + b"a" * FIFTY_MB + b'"}'
    response = post_raw(api, "/api/v1/tasks", big_json)
    assert response.status_code == 413 and response.json()["code"] == "request_too_large"

    page = Client(raise_request_exception=False)
    page.force_login(requester)
    form = b"request=" + b"a" * FIFTY_MB
    response = page.generic(
        "POST", "/tasks/new/", data=form, content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 413
    response = page.generic(
        "POST",
        f"/tasks/{task.pk}/notes/",
        data=b"comment=" + b"b" * FIFTY_MB,
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 413
    assert Task.objects.count() == 1 and not Feedback.objects.exists()
    report("hostile input (50 MB)", "API 413, task form 413, note form 413, nothing written")


def test_hostile_page_input_gets_4xx(requester: Any, task: Task) -> None:
    """A3/U3: page URLs and forms refuse hostile values with a 4xx, never a 500."""
    page = Client(raise_request_exception=False)
    page.force_login(requester)
    failures = []
    checks = [
        ("huge task id", "get", f"/tasks/{HUGE}/", None),
        ("huge task id progress", "get", f"/tasks/{HUGE}/progress/", None),
        ("huge evidence id", "get", f"/tasks/{task.pk}/evidence/{HUGE}/", None),
        ("huge run id", "get", f"/tasks/{task.pk}/runs/{HUGE}/transcript/", None),
        ("huge snapshot id", "get", f"/tasks/{task.pk}/validations/{HUGE}/input/", None),
        ("unknown section", "get", f"/tasks/{task.pk}/sections/password/", None),
        (
            "huge version",
            "post",
            f"/tasks/{task.pk}/feedback/",
            {"action": "satisfied", "version": str(HUGE)},
        ),
        (
            "unknown action",
            "post",
            f"/tasks/{task.pk}/feedback/",
            {"action": "explode", "version": "1"},
        ),
        ("huge token id", "post", f"/account/tokens/{HUGE}/revoke/", {}),
    ]
    for label, method, url, data in checks:
        response = getattr(page, method)(url, data or {})
        # A refused form may re-render the page with the message (200) or answer 4xx.
        if response.status_code >= 500:
            failures.append(f"{label}: {response.status_code}")
    assert not failures, "\n".join(failures)
    task.refresh_from_db()
    assert task.status == S.NEEDS_REVIEW
