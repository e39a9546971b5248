"""The Celery app. Broker defaults to kombu's filesystem transport (no server needed)."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

app = Celery("evidentia")
app.config_from_object("django.conf:settings", namespace="CELERY")


def configure(app: Celery) -> None:
    """Apply the delivery guarantees every job relies on (X1, S4)."""
    from django.conf import settings

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
        worker_cancel_long_running_tasks_on_connection_loss=True,
        broker_connection_retry_on_startup=True,
        task_time_limit=settings.CELERY_TASK_TIME_LIMIT,
        task_soft_time_limit=max(settings.CELERY_TASK_TIME_LIMIT - 30, 5),
        task_ignore_result=True,
        task_always_eager=settings.CELERY_TASK_ALWAYS_EAGER,
        worker_hijack_root_logger=False,
        timezone="UTC",
        # The reaper recovers attempts whose worker died (stale heartbeat); `-B` on the
        # worker (bin/run-dev) or a separate `celery beat` runs it.
        beat_schedule={
            "reap-stale-attempts": {
                "task": "tasks_app.reap_attempts",
                "schedule": float(settings.REAPER_INTERVAL_SECONDS),
            }
        },
    )


configure(app)
app.autodiscover_tasks(related_name="jobs")
