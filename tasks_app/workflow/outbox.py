"""The transactional outbox: background jobs survive a broker outage.

``outbox_send`` records a job as an ``OutboxJob`` row in the caller's transaction and,
once that transaction commits, publishes it at once. When the broker does not answer,
the request still succeeds (its work committed): one WARNING line says so and the row
waits. The relay (``outbox_relay``, a maintenance job every
``OUTBOX_RELAY_INTERVAL_SECONDS`` and a pass at worker start) publishes waiting rows
oldest first; a row with a ``not_before`` time (a countdown) is published with it as
the job's ETA. Each publication locks its row (``skip_locked``) and marks it published
in the same transaction, so two relays, or a relay and the on-commit send, never send
one row twice; a crash between the publish and the commit may, and jobs are idempotent.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import timedelta
from functools import partial
from typing import Any

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from project.celery import app
from project.db import insert_new
from tasks_app.workflow.models import OutboxJob

log = logging.getLogger(__name__)

# Published rows are kept this long (what was sent when, for an incident), then purged.
KEEP_PUBLISHED = timedelta(days=1)
# The on-commit send gives up quickly (one reconnect after a broker restart): the
# request is waiting, and the relay sends the row when the broker is back.
QUICK_RETRY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.2}


def outbox_send(
    name: str,
    args: Sequence[Any],
    *,
    job_id: str,
    task_ref: int | None = None,
    countdown: float = 0,
) -> None:
    """Record job ``name(*args)`` under Celery id ``job_id`` in the current transaction
    and publish it after the commit (a rolled-back transaction sends nothing). With
    ``countdown`` the job runs no earlier than that many seconds from now, however late
    the relay publishes it."""
    not_before = timezone.now() + timedelta(seconds=countdown) if countdown > 0 else None
    row = OutboxJob(
        name=name, args=list(args), job_id=job_id, task_ref=task_ref, not_before=not_before
    )
    insert_new(row)
    transaction.on_commit(partial(_publish_after_commit, row.pk))


def _publish(row: OutboxJob, **options: Any) -> None:
    # By name, through the project's app whatever thread this runs in: its routes send
    # the job to its purpose's queue. A time not yet reached becomes the job's ETA (the
    # worker holds it until then); one already past is sent to run now.
    if row.not_before is not None and row.not_before > timezone.now():
        options["eta"] = row.not_before
    app.send_task(row.name, args=row.args, task_id=row.job_id, **options)


def _describe(row: OutboxJob) -> str:
    task = f"task {row.task_ref} " if row.task_ref is not None else ""
    return f"{task}job {row.name} {row.job_id}"


def _run_eagerly(pk: int) -> None:
    """``CELERY_TASK_ALWAYS_EAGER`` (tests, debugging): run the job here, now, outside
    any transaction as a worker would, once (the row is marked first)."""
    claimed = OutboxJob.objects.unpublished().filter(pk=pk)
    if claimed.update(published_at=timezone.now(), attempts=F("attempts") + 1):
        row = OutboxJob.objects.get(pk=pk)
        app.tasks[row.name].apply_async(args=row.args, task_id=row.job_id)


def _publish_after_commit(pk: int) -> None:
    """Publish one row now; never raises (the request that queued it has committed)."""
    if app.conf.task_always_eager:
        _run_eagerly(pk)
        return
    failed: OutboxJob | None = None
    error = ""
    try:
        with transaction.atomic():
            # Locked, or already published: the relay has it. Never a second copy.
            row = _take(pk)
            if row is None:
                return
            try:
                _publish(row, retry_policy=QUICK_RETRY)
            except Exception as exc:  # the broker is down: the relay sends it later
                failed, error = row, _short(exc)
                _untake(row, error)
    except Exception as exc:  # the database went away after the commit
        log.warning("outbox row %s not published (%s); the relay sends it", pk, _short(exc))
        return
    if failed is not None:
        log.warning(
            "%s not published (broker unreachable: %s); the outbox relay sends it when "
            "the broker is back",
            _describe(failed),
            error,
        )


def outbox_relay(*, batch: int = 100) -> int:
    """Publish waiting rows oldest first; stop at the first one the broker refuses (the
    rest would fail too, and keep their order). Returns how many were published."""
    if app.conf.task_always_eager:
        waiting = list(OutboxJob.objects.unpublished().order_by("pk").values_list("pk", flat=True))
        for pk in waiting:
            _run_eagerly(pk)
        return len(waiting)
    published = 0
    while True:
        with transaction.atomic():
            # skip_locked: a row another relay (or the on-commit send) is publishing is
            # theirs; waiting for it would only let both send it.
            rows = list(
                OutboxJob.objects.unpublished()
                .select_for_update(skip_locked=True)
                .order_by("pk")[:batch]
            )
            for row in rows:
                try:
                    _publish(row)
                except Exception as exc:
                    error = _short(exc)
                    _record_failure(row, error)
                    log.warning(
                        "outbox relay: %s not published (broker unreachable: %s); "
                        "%d waiting rows stay queued",
                        _describe(row),
                        error,
                        len(rows) - rows.index(row),
                    )
                    return published
                _mark_published(row)
                published += 1
        if len(rows) < batch:
            break
    if published:
        log.info("outbox relay published %d waiting jobs", published)
    return published


def outbox_purge(*, now: Any = None) -> int:
    """Delete rows published more than a day ago; returns how many."""
    cutoff = (now or timezone.now()) - KEEP_PUBLISHED
    deleted, _ = OutboxJob.objects.filter(published_at__lt=cutoff).delete()
    return deleted


def outbox_waiting_job_ids() -> set[str]:
    """Ids of jobs recorded but not yet published: the broker will hold them, so the
    reaper must not send them again."""
    return set(OutboxJob.objects.unpublished().values_list("job_id", flat=True))


# One statement: lock the row unless another publisher holds it, mark it
# published and read it; the mark commits only with the publication (same transaction).
_TAKE = (
    'UPDATE "tasks_app_outboxjob" SET "published_at" = %s, "attempts" = "attempts" + 1 '
    'WHERE "id" = (SELECT "id" FROM "tasks_app_outboxjob" WHERE "id" = %s AND '
    '"published_at" IS NULL FOR UPDATE SKIP LOCKED) '
    'RETURNING "id", "name", "args", "job_id", "task_ref", "not_before"'
)


def _take(pk: int) -> OutboxJob | None:
    """Lock, mark published and return row ``pk`` in one statement, or None when it is
    published already or another publisher holds it."""
    if connection.vendor != "postgresql":
        row = OutboxJob.objects.unpublished().select_for_update(skip_locked=True).filter(pk=pk)
        taken = row.first()
        if taken is not None:
            _mark_published(taken)
        return taken
    rows = list(OutboxJob.objects.raw(_TAKE, [timezone.now(), pk]))
    return rows[0] if rows else None


def _untake(row: OutboxJob, error: str) -> None:
    """The publication failed: the row waits again (the attempt and error recorded)."""
    OutboxJob.objects.filter(pk=row.pk).update(published_at=None, last_error=error)


def _mark_published(row: OutboxJob) -> None:
    OutboxJob.objects.filter(pk=row.pk).update(
        published_at=timezone.now(), attempts=F("attempts") + 1
    )


def _record_failure(row: OutboxJob, error: str) -> None:
    OutboxJob.objects.filter(pk=row.pk).update(attempts=F("attempts") + 1, last_error=error)


def _short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]
