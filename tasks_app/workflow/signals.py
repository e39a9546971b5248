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

from django.dispatch import Signal

task_transitioned = Signal()
