"""What the API and the signed-in pages promise about caching and refusals (issue 34
item 5): ``Cache-Control: no-store`` on every API answer and every page a signed-in
person sees, and one 403 code, the documented ``permission_denied``."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from tasks_app.models import Feedback
from tasks_app.workflow.states import TaskStatus as S
from tests.api.test_tasks_api import post
from tests.factories import TaskFactory, ValidationSnapshotFactory

pytestmark = pytest.mark.django_db


@pytest.mark.finding(34, 5)
def test_api_answers_and_signed_in_pages_say_no_store(
    alice: Client, requester: Any, reviewer: Any
) -> None:
    """Issue 34 finding 5: before, only /account/, /admin/, /login/ and /ready said
    no-store; the task list, a task's page and every API answer (a task's answer and
    evidence) could be kept by a browser or a shared cache."""
    task = TaskFactory(owner=requester, final_answer="An answer")
    for url in ("/api/v1/tasks", f"/api/v1/tasks/{task.pk}", "/api/v1/me", "/api/v1/nope"):
        response = alice.get(url)
        assert "no-store" in response.get("Cache-Control", ""), (url, response.status_code)
    page = Client()
    page.force_login(requester)
    staff = Client()
    staff.force_login(reviewer)
    for client, url in ((page, "/"), (page, f"/tasks/{task.pk}/"), (staff, "/review/")):
        response = client.get(url)
        assert response.status_code == 200, url
        assert "no-store" in response["Cache-Control"], url
    assert "no-store" not in Client().get("/static/css/app.css").get("Cache-Control", "")


@pytest.mark.finding(34, 8)
def test_every_403_carries_the_documented_code(alice: Client, rita: Client, requester: Any) -> None:
    """Issue 34 finding 8: before, a domain refusal (undoing someone else's decision)
    answered ``forbidden`` while docs/api.md documents ``permission_denied``; now every
    403 says ``permission_denied``."""
    task = TaskFactory(owner=requester, status=S.NEEDS_REVIEW, attempt_count=1, version=3)
    ValidationSnapshotFactory(task=task, attempt_index=1, status="insufficient_evidence")
    post(rita, f"/api/v1/tasks/{task.pk}/feedback", {"action": "satisfied", "undo_seconds": 30})
    decision = Feedback.objects.get(task=task)
    refusals = [
        post(alice, f"/api/v1/tasks/{task.pk}/feedback/{decision.pk}/undo"),
        alice.get("/api/v1/stats/agreement"),
        alice.get("/api/v1/audits"),
    ]
    for response in refusals:
        assert response.status_code == 403, response.content
        assert response.json()["code"] == "permission_denied", response.content
