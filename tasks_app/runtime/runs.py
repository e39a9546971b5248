"""Runs and the processes that run them: the one writer of ``Run.status`` and the
heartbeats of background processes (project.heartbeats)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from project.dbturn import db_turn
from tasks_app.runtime.models import Run, RunStatus, ServiceHeartbeat
from tasks_app.workflow.fence import Fence, fenced_update

RUN_END_STATUSES = frozenset({RunStatus.COMPLETED, RunStatus.FAILED})


def run_finish(*, run: Run, status: str, fence: Fence | None = None, **values: Any) -> Run:
    """The one writer of ``Run.status``: end ``run`` as ``completed`` or
    ``failed`` with its final columns (``values``: finish_reason, output_text, error,
    finished_at, ...). With ``fence`` the write holds the attempt's lease (one statement
    on PostgreSQL) and raises ``LeaseLost``, writing nothing, when the lease is gone;
    without, it is one UPDATE (the recorder's bookkeeping after a lost lease, an external
    agent's run, the reaper's verdict on a dead worker's run)."""
    if status not in RUN_END_STATUSES:
        raise ValueError(f"a run ends completed or failed, not {status!r}")
    fields = {"status": status, **values}
    if fence is not None:
        if connection.vendor == "postgresql":
            fenced_update(fence, Run, run.pk, fields)
        else:
            with fence.write():
                Run.objects.filter(pk=run.pk).update(**fields)
    else:
        with db_turn():
            Run.objects.filter(pk=run.pk).update(**fields)
    for name, value in fields.items():
        setattr(run, name, value)
    return run


# --- Heartbeats of background processes --------------------------------------


@transaction.atomic
def heartbeat_record(
    *, kind: str, name: str, queues: list[str], detail: dict[str, Any] | None = None
) -> None:
    """Upsert the liveness row of a worker, beat or queue round trip (project.heartbeats)."""
    now = timezone.now()
    ServiceHeartbeat.objects.update_or_create(
        kind=kind,
        name=name[:200],
        defaults={"queues": queues, "detail": detail or {}, "seen_at": now},
    )
    # Rows of processes that died without a clean shutdown: gone after a day.
    ServiceHeartbeat.objects.filter(seen_at__lt=now - timedelta(days=1)).delete()


@transaction.atomic
def heartbeat_forget(*, kind: str, name: str) -> None:
    """Remove a row on a clean stop, so readiness reflects it at once."""
    ServiceHeartbeat.objects.filter(kind=kind, name=name).delete()
