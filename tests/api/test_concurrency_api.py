"""Feedback races over HTTP (S3, A3): two concurrent decisions, one wins."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from django.test import Client

from tasks_app.accounts.auth import api_token_create
from tasks_app.models import Feedback, TaskEvent
from tasks_app.workflow.states import TaskStatus as S
from tests.factories import TaskFactory, UserFactory


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("actions", [("satisfied", "abandon"), ("abandon", "abandon")])
def test_two_concurrent_feedback_calls_give_one_200_and_one_409(actions: tuple[str, str]) -> None:
    """Two threads, two connections, two HTTP requests at once: exactly one is applied
    (200), the other is refused with 409; one event and one feedback row are written."""
    user = UserFactory(username="alice")
    task = TaskFactory(owner=user, status=S.AWAITING_FEEDBACK)
    _, raw = api_token_create(user=user)
    barrier = threading.Barrier(len(actions))
    results: list[tuple[int, str]] = []
    lock = threading.Lock()

    def act(action: str) -> None:
        client = Client(headers={"Authorization": f"Bearer {raw}"})
        try:
            barrier.wait(timeout=10)
            response = client.post(
                f"/api/v1/tasks/{task.pk}/feedback",
                {"action": action},
                content_type="application/json",
            )
            outcome = (response.status_code, response.json().get("code", ""))
        finally:
            connection.close()
        with lock:
            results.append(outcome)

    threads = [threading.Thread(target=act, args=(a,)) for a in actions]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)

    assert sorted(results) == [(200, ""), (409, "illegal_transition")]
    assert TaskEvent.objects.filter(task=task).count() == 1
    assert Feedback.objects.filter(task=task).count() == 1
    task.refresh_from_db()
    assert task.status in {S.CLOSED, S.ABANDONED}
