"""The validation claim on a task row (issues 16, 17): of two copies of a validation job
(a redelivery, a re-send) only the one that claims calls the validator model; the claim
is kept fresh while it runs and taken over once it was left for a lease period. The
columns are the task's, so their writes live here with the task; evidence_app's
validation calls them."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection
from django.db.models import Q
from django.utils import timezone

from project.db import Keeper
from tasks_app.workflow.models import Task
from tasks_app.workflow.states import TaskStatus

log = logging.getLogger(__name__)


def validation_claim(*, task_id: int, attempt_index: int) -> datetime | None:
    """Claim the validation of ``attempt_index`` before any model call: one
    conditional UPDATE, so of two copies of the job (a redelivery, a re-send) only one
    calls the validator model. Returns the claim's time stamp (None: not claimed). The
    job keeps its claim fresh while it runs (``ClaimKeeper``); a claim not refreshed for
    ``ATTEMPT_LEASE_SECONDS`` belonged to a job that died, and may be taken over at once,
    not after the job's hard time limit."""
    now = timezone.now()
    expired = now - timedelta(seconds=settings.ATTEMPT_LEASE_SECONDS)
    claimed = (
        Task.objects.filter(pk=task_id, status=TaskStatus.VALIDATING, attempt_count=attempt_index)
        .filter(Q(validation_claimed_at__isnull=True) | Q(validation_claimed_at__lt=expired))
        .update(validation_claimed_at=now)
    )
    return now if claimed == 1 else None


class ClaimKeeper(Keeper):
    """Refreshes a validation claim from a thread while the validator model is called,
    every third of ``ATTEMPT_LEASE_SECONDS``, fenced by the stamp it last
    wrote: once another job took the claim over, or the task moved on, it stops."""

    def __init__(self, *, task_id: int, attempt_index: int, stamp: datetime) -> None:
        self.task_id = task_id
        self.attempt_index = attempt_index
        self.stamp = stamp
        super().__init__(
            self.refresh,
            interval=max(1.0, settings.ATTEMPT_LEASE_SECONDS / 3),
            name="validation-claim",
            logger=log,
            subject=f"task {task_id} attempt {attempt_index}",
            what="the validation claim keeper",
        )

    def refresh(self) -> bool:
        """One refresh; False when the claim is no longer this job's."""
        now = timezone.now()
        kept = Task.objects.filter(
            pk=self.task_id,
            status=TaskStatus.VALIDATING,
            attempt_count=self.attempt_index,
            validation_claimed_at=self.stamp,
        ).update(validation_claimed_at=now)
        if kept:
            self.stamp = now
        return kept == 1


_CLAIM_AND_READ = (
    'UPDATE "tasks_app_task" SET "validation_claimed_at" = %s WHERE "id" = %s AND '
    '"status" = %s AND "attempt_count" = %s AND ("validation_claimed_at" IS NULL OR '
    '"validation_claimed_at" < %s) RETURNING *'
)


class Claimed(NamedTuple):
    """A claimed validation: the task, the claim's stamp and the value ``also`` read with
    it (None when not asked, or not read in the same statement: SQLite)."""

    task: Task
    stamp: datetime
    also: Any = None


def validation_claim_and_read(
    *, task_id: int, attempt_index: int, also: tuple[str, list[Any]] | None = None
) -> Claimed | None:
    """``validation_claim`` and the task read together: on PostgreSQL one
    ``UPDATE ... RETURNING`` (one statement less per validation), which also computes
    ``also`` (a scalar SQL expression with its parameters: what the caller reads right
    after the claim) when given. None when not claimed (the task is gone, moved on, or
    another job holds the claim)."""
    if connection.vendor != "postgresql":
        stamp = validation_claim(task_id=task_id, attempt_index=attempt_index)
        task = Task.objects.filter(pk=task_id).first() if stamp is not None else None
        return Claimed(task, stamp) if task is not None and stamp is not None else None
    now = timezone.now()
    expired = now - timedelta(seconds=settings.ATTEMPT_LEASE_SECONDS)
    sql = _CLAIM_AND_READ + (f", {also[0]} AS claimed_also" if also else "")
    params = [now, task_id, TaskStatus.VALIDATING, attempt_index, expired]
    rows = list(Task.objects.raw(sql, params + (also[1] if also else [])))
    if not rows:
        return None
    return Claimed(rows[0], now, getattr(rows[0], "claimed_also", None))


def validation_claim_release(task_id: int, attempt_index: int) -> None:
    """Release the validation claim; after a lost database connection, once more on a
    fresh one. If the database is still away the claim expires on its own."""
    for _ in range(2):
        try:
            Task.objects.filter(
                pk=task_id, status=TaskStatus.VALIDATING, attempt_count=attempt_index
            ).update(validation_claimed_at=None)
            return
        except (OperationalError, InterfaceError):
            if connection.in_atomic_block:
                return
            connection.close()
