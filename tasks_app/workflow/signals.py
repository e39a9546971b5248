"""Signals of the task workflow: what follows a status change subscribes to it, and the
state machine (``tasks_app.workflow.transitions.task_transition``) knows nothing of its subscribers.

``task_transitioned`` is sent inside the transition's transaction, right after the task
row and its event row are written (and after the transition's ``on_applied``), with
``task``, ``from_status``, ``to_status``, ``actor_kind`` and ``reason``. What a receiver
writes commits or rolls back with the change, so no committed change misses it and a
refused one leaves nothing (the webhook deliveries are such an outbox); anything that
talks to the world outside the database waits for the commit
(``transaction.on_commit``). A receiver that raises refuses the whole change.
Receivers connect in ``AppConfig.ready``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import QuerySet
from django.dispatch import Signal

task_transitioned = Signal()

# Sent when a person reads something of tasks that tells their status or verdict (a task
# page or its fragments, a list row, the API), with ``user``, ``task_ids`` and
# ``channel`` (what was read, e.g. "GET /api/v1/tasks/5"). The audit stream records it:
# a judgement given after such a view is not blind. Sent outside any write; a receiver
# must not refuse the read.
task_seen = Signal()


def task_seen_by(user: Any, task_ids: Iterable[int] | QuerySet[Any], channel: str) -> None:
    """Tell the receivers of ``task_seen`` that ``user`` read ``task_ids`` via ``channel``.
    A queryset of tasks (a filtered list, every page of it) is passed on unevaluated:
    the receiver joins it with what it looks for instead of reading every id."""
    if not getattr(user, "is_authenticated", False):
        return
    ids: Any
    if isinstance(task_ids, QuerySet):
        ids = task_ids.order_by().values("pk")
    else:
        ids = sorted({int(pk) for pk in task_ids})
        if not ids:
            return
    task_seen.send(sender=None, user=user, task_ids=ids, channel=channel)
