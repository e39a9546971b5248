"""Celery jobs of the validator (X1, V2, V9). Thin: ids in, one service call.

``validate_attempt_job`` is sent by the runtime (by name) after an attempt produced an
answer. A redelivered or duplicated job finds the task no longer ``validating`` that
attempt, or the validation claimed, and does nothing: its result is ``duplicate``.
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.contrib.auth import get_user_model
from django.db import InterfaceError, OperationalError, connection

from evidence_app.models import ValidationSnapshot
from evidence_app.services import replay_validation, validation_attempt
from project.errors import first_line

log = logging.getLogger(__name__)


@shared_task(name="evidence_app.validate_attempt")
def validate_attempt_job(task_id: int, attempt_index: int) -> str:
    """Validate ``attempt_index`` of ``task_id`` and apply the V2 transition. Returns the
    verdict's status, ``no validation``, ``duplicate`` (a redelivery: nothing stored) or
    ``db_lost`` (the database connection was lost: one WARNING line; the reaper re-sends
    the job, issue 17)."""
    try:
        outcome = validation_attempt(task_id=int(task_id), attempt_index=int(attempt_index))
    except (OperationalError, InterfaceError) as exc:
        log.warning(
            "task %s attempt %s: db_lost: the validation lost its database connection (%s); "
            "the reaper re-sends it",
            task_id,
            attempt_index,
            first_line(exc),
        )
        connection.close()
        return "db_lost"
    return outcome.result


@shared_task(name="evidence_app.replay_validation")
def replay_validation_job(
    snapshot_id: int,
    template: str | None = None,
    model: str | None = None,
    user_id: int | None = None,
) -> int | None:
    """Replay one stored validation (V9); returns the replay snapshot's id."""
    snapshot = ValidationSnapshot.objects.filter(pk=snapshot_id).select_related("task").first()
    if snapshot is None:
        return None
    user = get_user_model().objects.filter(pk=user_id).first() if user_id else None
    replay = replay_validation(
        snapshot=snapshot, template=template or None, model=model or None, requested_by=user
    )
    return replay.pk
