"""Liveness of workers and beat, written by the processes themselves.

- A worker (each ``celery worker`` process, however many) starts a daemon thread when it
  is ready that writes a ``ServiceHeartbeat`` row (kind ``worker``, its host name, the
  queues it consumes and the ids of the jobs it holds) every ``OPS_HEARTBEAT_SECONDS``,
  and deletes it on a clean stop.
- Beat writes its row (kind ``beat``) whenever it sends a scheduled job; its schedule
  includes ``project.queue_heartbeat`` to every queue in ``WORKER_QUEUES`` each
  ``OPS_HEARTBEAT_SECONDS``, so a live beat is never silent for long.
- That heartbeat job, taken off queue *q* by a worker, writes a ``queue`` row for *q*:
  proof that something really consumes it (delayed by a backlog, hence informational).

Where the rows are kept is registered by an app (``register_store``); that app's
readiness checks read them and ``/metrics`` reports their ages.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from celery import shared_task
from celery.worker import state
from django.conf import settings
from django.db import close_old_connections, connection

from project.queues import consumed_queues, worker_queues

log = logging.getLogger(__name__)

QUEUE_HEARTBEAT_JOB = "project.queue_heartbeat"

_stop = threading.Event()
_beat_process = {"active": False, "last": 0.0}


# Where heartbeats are written: the app that keeps them registers its functions in
# AppConfig.ready (tasks_app: ServiceHeartbeat rows).
_store: dict[str, Callable[..., Any]] = {}


def register_store(*, record: Callable[..., Any], forget: Callable[..., Any]) -> None:
    """``record(kind=, name=, queues=, detail=)`` writes a heartbeat, ``forget(kind=,
    name=)`` removes one."""
    _store.update(record=record, forget=forget)


def _record(kind: str, name: str, queues: list[str] | None = None, **detail: Any) -> None:
    _store["record"](kind=kind, name=name, queues=queues or [], detail=detail)


def worker_job_ids() -> list[str]:
    """Ids of the jobs this worker holds: received (prefetched) and not finished, running
    ones included. The reaper tells a job a dead worker held from one a live worker runs
    by this list."""

    return sorted({str(r.id) for r in list(state.reserved_requests) if getattr(r, "id", None)})


def start_worker_heartbeat(sender: Any = None, **_: Any) -> None:
    """``worker_ready`` (``sender``: the worker's consumer): write this worker's row now
    and every OPS_HEARTBEAT_SECONDS."""
    consumer = sender
    # Host name and pid: two processes given the same node name (a mistake Celery only
    # warns about) must not hide each other behind one row.
    hostname = str(getattr(consumer, "hostname", "") or f"worker@{os.uname().nodename}")
    hostname = f"{hostname} pid {os.getpid()}"
    queues = consumed_queues(consumer)
    interval = settings.OPS_HEARTBEAT_SECONDS
    _stop.clear()

    def beat() -> None:
        while not _stop.is_set():
            try:
                close_old_connections()
                _record("worker", hostname, queues, pid=os.getpid(), jobs=worker_job_ids())
            except Exception:  # the database is down: /ready says so; keep trying
                log.warning("worker heartbeat could not be written", exc_info=True)
            finally:
                connection.close()
            _stop.wait(interval)

    threading.Thread(target=beat, name="evidentia-heartbeat", daemon=True).start()
    _stop_hostname["name"] = hostname


_stop_hostname: dict[str, str] = {}


def stop_worker_heartbeat(**_: Any) -> None:
    """``worker_shutdown``: stop writing and remove the row, so /ready notices at once."""
    _stop.set()
    name = _stop_hostname.pop("name", None)
    if name is None:
        return
    try:
        _store["forget"](kind="worker", name=name)
    except Exception:
        log.warning("worker heartbeat row could not be removed", exc_info=True)
    finally:
        connection.close()


def mark_beat_process(**_: Any) -> None:
    """``beat_init`` / ``beat_embedded_init``: this process runs the scheduler."""
    _beat_process["active"] = True
    record_beat()


def record_beat(**_: Any) -> None:
    """``before_task_publish`` in the beat process: beat is alive and sending. Written at
    most once a second."""
    if not _beat_process["active"]:
        return
    now = time.monotonic()
    if now - _beat_process["last"] < 1.0:
        return
    _beat_process["last"] = now
    try:
        close_old_connections()
        _record("beat", "beat", pid=os.getpid())
    except Exception:
        log.warning("beat heartbeat could not be written", exc_info=True)


def heartbeat_schedule() -> dict[str, dict[str, Any]]:
    """Beat entries: the heartbeat job to every queue in WORKER_QUEUES."""
    interval = float(settings.OPS_HEARTBEAT_SECONDS)
    return {
        f"ops-heartbeat-{queue}": {
            "task": QUEUE_HEARTBEAT_JOB,
            "schedule": interval,
            "args": [queue],
            # A heartbeat stuck behind a backlog is worthless once the next is due.
            "options": {"queue": queue, "expires": interval * 4},
        }
        for queue in worker_queues()
    }


@shared_task(name=QUEUE_HEARTBEAT_JOB, ignore_result=True)
def queue_heartbeat_job(queue: str) -> None:
    """Sent by beat to ``queue``: a worker took it off that queue just now."""
    _record("queue", str(queue))
