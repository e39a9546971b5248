"""The queues by purpose and where each job goes: names only, no Celery app,
so the app (project.celery), the heartbeats and the health checks can all use them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from django.conf import settings

# One queue per purpose. Finishing work (validation) never waits behind a
# backlog of starting work (attempts), slow outbound calls (webhooks) never hold up
# either, and the reaper (maintenance) runs on time whatever the backlog. The
# production profile (Procfile) runs a worker per group; `make run` one worker for all.
ATTEMPTS = "attempts"
VALIDATION = "validation"
WEBHOOKS = "webhooks"
MAINTENANCE = "maintenance"
PURPOSES = (ATTEMPTS, VALIDATION, WEBHOOKS, MAINTENANCE)

# Job name (or glob) -> purpose, registered by each app in ``AppConfig.ready``
# (``register_routes``). A job not listed goes to CELERY_TASK_DEFAULT_QUEUE, which the
# maintenance worker consumes too.
_ROUTES: dict[str, str] = {}


def register_routes(routes: Mapping[str, str]) -> None:
    """Send each job named (or matched by a glob such as ``*webhook*``) to the queue of
    its purpose."""
    for name, purpose in routes.items():
        if purpose not in PURPOSES:
            raise ValueError(f"job {name!r}: unknown queue purpose {purpose!r}")
    _ROUTES.update(routes)


@dataclass(frozen=True)
class PeriodicJob:
    """A job Celery beat sends every ``every()`` seconds (read when the schedule is built,
    so a setting changed in a test counts) to the queue of its purpose. A run not picked
    up within an interval is dropped: the next one is as good."""

    job: str
    every: Callable[[], float]
    purpose: str = MAINTENANCE

    def beat_entry(self) -> dict[str, Any]:
        interval = float(self.every())
        return {
            "task": self.job,
            "schedule": interval,
            "options": {"queue": queue_name(self.purpose), "expires": interval},
        }


# Beat entry name -> periodic job, registered by each app in ``AppConfig.ready``
# (``project.celery.register_periodic``, which rebuilds the beat schedule).
_PERIODIC: dict[str, PeriodicJob] = {}


def add_periodic(jobs: Mapping[str, PeriodicJob]) -> None:
    for name, job in jobs.items():
        if job.purpose not in PURPOSES:
            raise ValueError(f"periodic job {name!r}: unknown queue purpose {job.purpose!r}")
    _PERIODIC.update(jobs)


def periodic_schedule() -> dict[str, dict[str, Any]]:
    """Celery beat's entries for the periodic jobs the apps registered."""
    return {name: job.beat_entry() for name, job in _PERIODIC.items()}


def route_job(name: str, *args: Any, **kwargs: Any) -> dict[str, str] | None:
    """Celery's router (``task_routes``): the queue of a job's purpose, the exact name
    first, then the globs; None (the default queue) for a job no app routes."""
    purpose = _ROUTES.get(name)
    if purpose is None:
        globs = (p for pattern, p in _ROUTES.items() if fnmatchcase(name, pattern))
        purpose = next(globs, None)
    return None if purpose is None else {"queue": queue_name(purpose)}


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
    """The queues some worker must consume (readiness, heartbeats, metrics):
    ``WORKER_QUEUES`` when set, else every queue of ``all_queue_names()``."""
    return list(settings.WORKER_QUEUES) or all_queue_names()


def consumed_queues(consumer: object) -> list[str]:
    """The queue names a starting worker consumes (``worker_ready``'s sender)."""
    try:
        return sorted(q.name for q in consumer.task_consumer.queues)  # type: ignore[attr-defined]
    except AttributeError:
        return sorted(consumer.app.amqp.queues.consume_from or {})  # type: ignore[attr-defined]
