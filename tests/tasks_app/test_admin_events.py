"""The event log is append-only in the admin too (issue 11, S3)."""

from __future__ import annotations

import pytest
from django.test import Client

from tasks_app.models import TaskEvent
from tasks_app.workflow.states import TaskStatus as S
from tasks_app.workflow.transitions import Transition, task_transition
from tests import factories

pytestmark = pytest.mark.django_db


def test_superuser_cannot_change_or_delete_task_events_in_the_admin() -> None:
    admin_user = factories.UserFactory(username="root", is_staff=True, is_superuser=True)
    task = factories.TaskFactory()
    task_transition(Transition(task_id=task.pk, to_status=S.RUNNING, reason="test"))
    event = TaskEvent.objects.get(task=task)
    client = Client()
    client.force_login(admin_user)

    delete = client.post(f"/admin/tasks_app/taskevent/{event.pk}/delete/", {"post": "yes"})
    change = client.post(f"/admin/tasks_app/taskevent/{event.pk}/change/", {"reason": "rewritten"})
    bulk = client.post(
        "/admin/tasks_app/taskevent/",
        {"action": "delete_selected", "_selected_action": [event.pk], "post": "yes"},
    )

    assert delete.status_code == 403
    assert change.status_code == 403
    assert bulk.status_code in (200, 302, 403)
    event.refresh_from_db()
    assert TaskEvent.objects.filter(pk=event.pk).exists()
    assert event.reason == "test"
