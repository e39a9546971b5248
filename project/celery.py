"""The Celery app. Broker defaults to kombu's filesystem transport (no server needed)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import redis.exceptions
from celery import Celery, signals
from django.conf import settings
from kombu import Queue
from kombu.transport import redis as kombu_redis

from project.heartbeats import (
    heartbeat_schedule,
    mark_beat_process,
    record_beat,
    start_worker_heartbeat,
    stop_worker_heartbeat,
)
from project.logs import on_before_publish, on_job_end, on_job_start
from project.queues import (
    PeriodicJob,
    add_periodic,
    all_queue_names,
    periodic_schedule,
    route_job,
)
from project.warmup import freeze_startup_objects

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

app = Celery("evidentia")
app.config_from_object("django.conf:settings", namespace="CELERY")


def soft_time_limit(limit: int) -> float:
    """The soft limit (the job may clean up) a tenth before the hard one, and at least a
    second before it: 1620 s for 1800 s, 9 s for 10 s."""
    return min(limit * 0.9, limit - 1)


def configure(app: Celery) -> None:
    """Apply the delivery guarantees every job relies on."""

    transport_options: dict[str, object] = {
        # Redis redelivers an unacked job only after this; it must exceed the job's
        # time limit or a live job is handed to a second worker.
        "visibility_timeout": settings.CELERY_VISIBILITY_TIMEOUT,
    }
    if settings.CELERY_BROKER_URL.startswith("filesystem://"):
        folder = settings.CELERY_BROKER_FOLDER
        for sub in ("queue", "processed", "control"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
        transport_options.update(
            data_folder_in=str(folder / "queue"),
            data_folder_out=str(folder / "queue"),
            processed_folder=str(folder / "processed"),
            # kombu keeps its exchange table here; its default is ./control in the cwd.
            control_folder=str(folder / "control"),
            store_processed=False,
        )
    app.conf.update(
        broker_transport_options=transport_options,
        result_backend_transport_options={"visibility_timeout": settings.CELERY_VISIBILITY_TIMEOUT},
        # A killed worker's job comes back: ack only after the job ran, and reject
        # (requeue) when the child process dies instead of acking it.
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        # A broker blip must not kill the attempts in flight: their result is
        # written to the database, fenced by the lease, whatever happens to the ack; a
        # job whose ack is lost is delivered again and finds its work done.
        worker_cancel_long_running_tasks_on_connection_loss=False,
        broker_connection_retry_on_startup=True,
        task_time_limit=settings.CELERY_TASK_TIME_LIMIT,
        task_soft_time_limit=soft_time_limit(settings.CELERY_TASK_TIME_LIMIT),
        task_ignore_result=True,
        task_always_eager=settings.CELERY_TASK_ALWAYS_EAGER,
        worker_hijack_root_logger=False,
        timezone="UTC",
        # A worker started without -Q consumes all of these (bin/run-dev).
        task_queues=[Queue(name) for name in all_queue_names()],
        task_routes=(route_job,),
        # Each app's periodic jobs (register_periodic, in its AppConfig.ready) and the
        # heartbeats; `-B` on the worker (bin/run-dev) or a separate `celery beat`
        # (Procfile) sends them.
        beat_schedule=beat_schedule(),
    )


def beat_schedule() -> dict[str, dict[str, Any]]:
    return {**periodic_schedule(), **heartbeat_schedule()}


def register_periodic(jobs: Mapping[str, PeriodicJob]) -> None:
    """Schedule an app's periodic jobs (called in its ``AppConfig.ready``, after this
    module configured the app): beat entry name -> the job, its interval and queue."""
    add_periodic(jobs)
    app.conf.beat_schedule = beat_schedule()


def guard_restore_on_lost_connection() -> None:
    """Keep a worker alive when its Redis connection drops while it holds unacknowledged
    jobs (seen in the chaos drill). On a lost connection Celery closes the
    channel; kombu's Redis channel then builds a client from a connection that no longer
    exists, to put the held jobs back in the queue or, after the reconnect, to
    acknowledge a job that finished: ``AttributeError: 'NoneType' object has no attribute
    'hostname'`` / ``'client'`` (kombu 5.7, as in celery/kombu#582), which Celery reports
    as an "Unrecoverable error": the worker exits (with honcho, every process stops).
    Guarded, that channel raises a connection error instead, which kombu already handles
    (nothing restored, the ack skipped and logged): the jobs stay in Redis'
    unacknowledged set, those still running finish (their result is in the database; a
    later redelivery finds the work done) and the reaper re-sends any that no live worker
    lists. A clean shutdown, connection up, still puts prefetched jobs back at once."""

    original = kombu_redis.Channel._connparams
    if getattr(original, "evidentia_guarded", False):
        return

    def _connparams(self: Any, asynchronous: bool = False) -> Any:
        if self.connection is None or self.connection.client is None:
            raise redis.exceptions.ConnectionError(
                "this channel's broker connection was closed (connection lost)"
            )
        return original(self, asynchronous)

    _connparams.evidentia_guarded = True  # type: ignore[attr-defined]
    setattr(kombu_redis.Channel, "_connparams", _connparams)  # noqa: B010


def _before_publish(**kwargs: Any) -> None:
    on_before_publish(**kwargs)
    record_beat()


def _connect_operations_signals() -> None:
    """Heartbeats (project.heartbeats) and log context (project.logs)."""
    signals.worker_ready.connect(start_worker_heartbeat)
    # After the worker's start (threads pool: this process; prefork: each child).
    signals.worker_ready.connect(freeze_startup_objects)
    signals.worker_process_init.connect(freeze_startup_objects)
    signals.worker_shutdown.connect(stop_worker_heartbeat)
    signals.beat_init.connect(mark_beat_process)
    signals.beat_embedded_init.connect(mark_beat_process)
    signals.before_task_publish.connect(_before_publish)
    signals.task_prerun.connect(on_job_start)
    signals.task_postrun.connect(on_job_end)


configure(app)
guard_restore_on_lost_connection()
_connect_operations_signals()
app.autodiscover_tasks(related_name="jobs")
# The heartbeat job lives in project/heartbeats.py (imported above): not an app's jobs.
