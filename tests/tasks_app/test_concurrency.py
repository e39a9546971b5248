"""S3: concurrent feedback on one task: PostgreSQL row locks, or SQLite's one writer at a
time (the test database is a file, each thread has its own connection)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from project.errors import DomainError
from tasks_app.models import TaskEvent
from tasks_app.workflow import services
from tasks_app.workflow.states import TaskStatus as S
from tests.factories import TaskFactory, UserFactory


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("actions", [("satisfied", "abandon"), ("satisfied", "satisfied")])
def test_two_concurrent_feedback_actions_exactly_one_applies(actions: tuple[str, str]) -> None:
    """Two threads, two DB connections: one action wins, the other gets the domain
    error, exactly one TaskEvent is written."""
    user = UserFactory()
    task = TaskFactory(owner=user, status=S.NEEDS_REVIEW)
    barrier = threading.Barrier(len(actions))
    outcomes: list[str] = []
    lock = threading.Lock()

    def act(action: str) -> None:
        try:
            barrier.wait(timeout=10)
            services.task_apply_feedback(task_id=task.pk, actor=user, action=action)
            result = "ok"
        except DomainError as exc:
            result = f"refused: {exc.code}"
        finally:
            connection.close()
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=act, args=(a,)) for a in actions]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)

    assert sorted(outcomes) == ["ok", "refused: illegal_transition"]
    assert TaskEvent.objects.filter(task=task).count() == 1
    task.refresh_from_db()
    assert task.status in {S.CLOSED, S.ABANDONED}
