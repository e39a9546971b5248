"""The queues by purpose and where each job goes (issue 16): names only, no Celery app,
so the app (project.celery), the heartbeats and the health checks can all use them."""

from __future__ import annotations

from django.conf import settings

# One queue per purpose (issue 16). Finishing work (validation) never waits behind a
# backlog of starting work (attempts), slow outbound calls (webhooks) never hold up
# either, and the reaper (maintenance) runs on time whatever the backlog. The
# production profile (Procfile) runs a worker per group; `make run` one worker for all.
ATTEMPTS = "attempts"
VALIDATION = "validation"
WEBHOOKS = "webhooks"
MAINTENANCE = "maintenance"
PURPOSES = (ATTEMPTS, VALIDATION, WEBHOOKS, MAINTENANCE)

# Job name (or glob) -> purpose. A job not listed goes to CELERY_TASK_DEFAULT_QUEUE,
# which the maintenance worker consumes too.
ROUTES = {
    "tasks_app.run_attempt": ATTEMPTS,
    "evidence_app.validate_attempt": VALIDATION,
    "evidence_app.replay_validation": VALIDATION,
    # Changing the judge: a candidate's comparison (in slices) and its shadow verdicts.
    "evidence_app.judge_comparison": VALIDATION,
    "evidence_app.shadow_validation": VALIDATION,
    "tasks_app.reap_attempts": MAINTENANCE,
    "tasks_app.relay_outbox": MAINTENANCE,
    # A complete OTLP trace becomes an attempt and goes to validation: finishing work.
    "tasks_app.otlp_assemble_traces": VALIDATION,
    "tasks_app.otlp_sweep": MAINTENANCE,
    # A decision whose undo window closed: it closes the task or queues the next attempt.
    "tasks_app.apply_decision": MAINTENANCE,
    "tasks_app.apply_due_decisions": MAINTENANCE,
    # Recertifying the auto-accept thresholds (issue 38): periodic bookkeeping.
    "evidence_app.certify_thresholds": MAINTENANCE,
    "*webhook*": WEBHOOKS,
}


def queue_name(purpose: str) -> str:
    """The broker queue of a purpose, with the deployment's CELERY_QUEUE_PREFIX."""
    if purpose not in PURPOSES:
        raise ValueError(f"unknown queue purpose {purpose!r} (one of {', '.join(PURPOSES)})")
    return settings.CELERY_QUEUE_PREFIX + purpose


def all_queue_names() -> list[str]:
    """Every queue a worker for all purposes consumes: the default queue, then one per
    purpose (``celery worker -Q`` takes them comma-separated)."""
    return [settings.CELERY_TASK_DEFAULT_QUEUE, *(queue_name(p) for p in PURPOSES)]


def worker_queues() -> list[str]:
    """The queues some worker must consume (issue 18: readiness, heartbeats, metrics):
    ``WORKER_QUEUES`` when set, else every queue of ``all_queue_names()``."""
    return list(settings.WORKER_QUEUES) or all_queue_names()


def consumed_queues(consumer: object) -> list[str]:
    """The queue names a starting worker consumes (``worker_ready``'s sender)."""
    try:
        return sorted(q.name for q in consumer.task_consumer.queues)  # type: ignore[attr-defined]
    except AttributeError:
        return sorted(consumer.app.amqp.queues.consume_from or {})  # type: ignore[attr-defined]
