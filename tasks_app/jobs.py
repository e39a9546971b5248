"""Celery jobs of the agent runtime. Thin: ids in, one service call.

Enqueued through the outbox (``tasks_app.workflow.services.attempt_enqueue``); a redelivered
or duplicated job finds the attempt already claimed (``lease_held``) or finished
(``duplicate``) and does nothing, or takes over an attempt whose lease expired.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.conf import settings

from project.queues import ATTEMPTS, MAINTENANCE, VALIDATION, WEBHOOKS, PeriodicJob
from tasks_app.api.idempotency import idempotency_purge
from tasks_app.intake.otlp.assembly import otlp_due_traces, otlp_trace_assemble
from tasks_app.intake.otlp.ingest import OTLP_ASSEMBLE_JOB
from tasks_app.notifications.webhooks import (
    DELIVER_WEBHOOKS_JOB,
    webhook_send_pending,
    webhook_sweep,
)
from tasks_app.runtime.attempts import attempt_run
from tasks_app.runtime.reaper import attempt_reap
from tasks_app.workflow.outbox import outbox_purge, outbox_relay
from tasks_app.workflow.services import (
    APPLY_DECISION_JOB,
    RUN_ATTEMPT_JOB,
    decision_apply,
    decision_apply_due,
)


@shared_task(name=RUN_ATTEMPT_JOB, bind=True)
def run_attempt_job(self: Any, task_id: int) -> str:
    """Run the next attempt of ``task_id`` if it is runnable (open/needs_revision), or
    take over its running attempt whose lease expired. Returns the task's
    status after the attempt, ``taken_over``, or why nothing was done: ``duplicate``,
    ``lease_held``, ``lease_lost``, ``db_lost`` (``tasks_app.runtime.attempts.JobResult``)."""
    outcome = attempt_run(task_id=int(task_id), worker=str(self.request.hostname or ""))
    return outcome.result


@shared_task(name=APPLY_DECISION_JOB, bind=True)
def apply_decision_job(self: Any, feedback_id: int) -> str:
    """Apply a person's decision when its undo window closes; a redelivered job
    finds it applied or undone (``done``). Published early (a clock ahead of ours), it
    comes back when due; in eager mode the sweep applies it instead."""
    outcome = decision_apply(feedback_id=int(feedback_id))
    if outcome == "not_due" and not self.app.conf.task_always_eager:
        self.apply_async(args=[feedback_id], countdown=1.0)
    return outcome


@shared_task(name="tasks_app.apply_due_decisions")
def apply_due_decisions_job() -> list[int]:
    """Periodic (Celery beat): apply the pending decisions whose window has closed and
    whose job was lost."""
    return decision_apply_due()


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


@shared_task(name="tasks_app.relay_outbox")
def relay_outbox_job() -> int:
    """Periodic (Celery beat) and at worker start: publish the jobs recorded while the
    broker was down, oldest first."""

    return outbox_relay()


@shared_task(name=OTLP_ASSEMBLE_JOB, bind=True)
def otlp_assemble_traces_job(self, trace_pks: list[int]) -> dict[str, int]:
    """Turn complete OTLP traces into attempts; the ones still receiving spans are looked
    at again when their quiet period has passed. Each trace is submitted once:
    a duplicate job finds it done."""
    outcomes: dict[str, int] = {}
    waiting: list[tuple[int, float]] = []
    for trace_pk in trace_pks:
        outcome = otlp_trace_assemble(trace_pk=int(trace_pk))
        outcomes[outcome.outcome] = outcomes.get(outcome.outcome, 0) + 1
        if outcome.outcome in ("wait", "retry"):
            waiting.append((int(trace_pk), outcome.wait_seconds))
    if waiting and not self.app.conf.task_always_eager:
        # In eager mode (tests, debugging) the maintenance sweep picks them up instead of
        # an in-process loop of countdowns.
        self.apply_async(
            args=[[pk for pk, _ in waiting]], countdown=max(0.5, max(w for _, w in waiting))
        )
    return outcomes


@shared_task(name="tasks_app.otlp_sweep")
def otlp_sweep_job() -> list[int]:
    """Periodic: assemble complete traces whose job was lost (a broker restart), fairly
    across accounts; a trace that fails is counted and retried later, never raised."""
    done = []
    for trace_pk in otlp_due_traces():
        if otlp_trace_assemble(trace_pk=trace_pk).outcome == "submitted":
            done.append(trace_pk)
    return done


@shared_task(name=DELIVER_WEBHOOKS_JOB)
def deliver_webhooks_job(endpoint_id: int, task_id: int | None) -> str:
    """Send the pending webhook deliveries of one (endpoint, task) pair, in order.
    A duplicate finds them claimed or sent and does nothing."""

    return webhook_send_pending(
        endpoint_id=int(endpoint_id), task_id=None if task_id is None else int(task_id)
    )


@shared_task(name="tasks_app.sweep_webhooks")
def sweep_webhooks_job() -> int:
    """Periodic (Celery beat): re-send jobs for due deliveries whose job was lost, and
    forget Idempotency-Key responses older than their time to live and outbox rows
    published more than a day ago."""

    idempotency_purge()
    outbox_purge()
    return len(webhook_sweep())


# Where each job goes (project.queues.register_routes, in TasksAppConfig.ready).
JOB_ROUTES = {
    RUN_ATTEMPT_JOB: ATTEMPTS,
    "tasks_app.reap_attempts": MAINTENANCE,
    "tasks_app.relay_outbox": MAINTENANCE,
    # A complete OTLP trace becomes an attempt and goes to validation: finishing work.
    OTLP_ASSEMBLE_JOB: VALIDATION,
    "tasks_app.otlp_sweep": MAINTENANCE,
    # A decision whose undo window closed: it closes the task or queues the next attempt.
    APPLY_DECISION_JOB: MAINTENANCE,
    "tasks_app.apply_due_decisions": MAINTENANCE,
    # Slow outbound calls never hold up the other queues (the delivery and the sweep).
    "*webhook*": WEBHOOKS,
}


# What Celery beat sends, to the maintenance queue (project.celery.register_periodic, in
# TasksAppConfig.ready).
PERIODIC_JOBS = {
    # The reaper recovers attempts whose worker died (stale heartbeat).
    "reap-stale-attempts": PeriodicJob(
        "tasks_app.reap_attempts", lambda: settings.REAPER_INTERVAL_SECONDS
    ),
    # Jobs recorded while the broker was down (the outbox).
    "relay-outbox": PeriodicJob(
        "tasks_app.relay_outbox", lambda: settings.OUTBOX_RELAY_INTERVAL_SECONDS
    ),
    # OTLP traces whose assembly job was lost.
    "otlp-sweep": PeriodicJob(
        "tasks_app.otlp_sweep", lambda: max(float(settings.OTLP_TRACE_QUIET_SECONDS), 5.0)
    ),
    # Webhook deliveries whose job was lost (broker down at commit time, worker killed
    # mid-send) are sent again; old Idempotency-Key responses are dropped.
    "sweep-webhooks": PeriodicJob(
        "tasks_app.sweep_webhooks", lambda: settings.WEBHOOK_SWEEP_INTERVAL_SECONDS
    ),
    # Decisions whose undo window closed and whose job was lost.
    "apply-due-decisions": PeriodicJob(
        "tasks_app.apply_due_decisions", lambda: settings.REAPER_INTERVAL_SECONDS
    ),
}
