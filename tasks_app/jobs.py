"""Celery jobs of the agent runtime (SPEC X1, S4, S5). Thin: ids in, one service call.

Enqueued with ``delay_on_commit`` (``tasks_app.services.attempt_enqueue``); a
redelivered or duplicated job finds the attempt already claimed or finished and does
nothing.
"""

from __future__ import annotations

from celery import shared_task

from tasks_app.attempts import attempt_reap, attempt_run


@shared_task(name="tasks_app.run_attempt", bind=True)
def run_attempt_job(self, task_id: int) -> str:  # type: ignore[no-untyped-def]
    """Run the next attempt of ``task_id`` if it is runnable (open/needs_revision)."""
    task = attempt_run(task_id=int(task_id), worker=str(self.request.hostname or ""))
    return task.status if task is not None else "skipped"


@shared_task(name="tasks_app.reap_attempts")
def reap_attempts_job() -> dict[str, list[int]]:
    """Periodic (Celery beat): recover attempts whose worker stopped heartbeating."""
    report = attempt_reap()
    return {
        "requeued": report.requeued,
        "failed": report.failed,
        "reenqueued": report.reenqueued,
        "revalidated": report.revalidated,
    }
