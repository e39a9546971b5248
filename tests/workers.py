"""A real Celery worker process against the pytest test database, for end-to-end tests
and drills (X1): the database and broker URLs a child process can use, the worker
itself, and a sender app for the same broker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from celery import Celery
from django.conf import settings
from django.db import connection


def database_url(*, application_name: str = "") -> str | None:
    """The test database as a URL a child process can use: PostgreSQL, or the SQLite file
    tests/conftest.py makes the test database (None only for an in-memory SQLite
    ``TEST_DATABASE_NAME``)."""
    db = connection.settings_dict
    if connection.vendor == "postgresql":
        auth = quote(db["USER"] or "")
        if db.get("PASSWORD"):
            auth += ":" + quote(db["PASSWORD"])
        url = f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
        if application_name:
            url += f"?application_name={quote(application_name)}"
        return url
    name = str(db["NAME"])
    if connection.vendor == "sqlite" and "memory" not in name and name != ":memory:":
        return f"sqlite:///{name}"
    return None


def redis_url() -> str | None:
    """The Redis broker: ``REDIS_URL`` (CI) or a redis ``CELERY_BROKER_URL``."""
    for var in ("REDIS_URL", "CELERY_BROKER_URL"):
        value = os.environ.get(var, "")
        if value.startswith(("redis://", "rediss://")):
            return value
    return None


def broker_env(*, redis: str | None, folder: Path) -> dict[str, str]:
    """Worker settings for Redis when available, else a filesystem broker in ``folder``."""
    return {"CELERY_BROKER_URL": redis or "filesystem://", "CELERY_BROKER_FOLDER": str(folder)}


def sender_app(*, name: str, redis: str | None, folder: Path) -> Celery:
    """A Celery app that sends to the same broker as a worker started with
    ``broker_env(redis=redis, folder=folder)``."""
    # Not the current app: shared_task jobs the code under test sends keep going to the
    # project app (and so to the test broker), not to this one.
    sender = Celery(name, broker=redis or "filesystem://", set_as_current=False)
    if redis is None:
        for sub in ("queue", "processed", "control"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
        sender.conf.broker_transport_options = {
            "data_folder_in": str(folder / "queue"),
            "data_folder_out": str(folder / "queue"),
            "processed_folder": str(folder / "processed"),
            "control_folder": str(folder / "control"),
            "store_processed": False,
        }
    return sender


def worker_queues(queue: str, purposes: tuple[str, ...] | None = None) -> list[str]:
    """The queues of a test worker whose own default queue is ``queue``: that one and one
    per purpose (all of them unless ``purposes`` says which), prefixed ``<queue>.``
    (``CELERY_QUEUE_PREFIX``), so the jobs its code sends (validation after an attempt,
    ...) come back to it and to no other worker."""
    from project.queues import PURPOSES

    return [queue, *(f"{queue}.{purpose}" for purpose in purposes or PURPOSES)]


class Worker:
    """A real Celery worker process, solo pool, consuming queues of its own (in CI the
    broker is shared with the rest of the suite, whose committed transactions may have
    queued jobs this worker must not pick up): ``queue`` and its purpose queues (all, or
    ``purposes``: a worker without ``maintenance`` runs no reaper sweep at start)."""

    app = "project"

    def __init__(
        self,
        *,
        env: dict[str, str],
        queue: str,
        log_path: Path,
        beat: bool = False,
        purposes: tuple[str, ...] | None = None,
    ):
        self.log_path = log_path
        args = [
            str(Path(sys.executable).with_name("celery")),
            "-A",
            self.app,
            "worker",
            "--pool=solo",
            "-Q",
            ",".join(worker_queues(queue, purposes)),
            "--loglevel=INFO",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            f"--hostname={log_path.stem}@test",
        ]
        if beat:
            args += ["-B", "--schedule-filename", str(log_path.with_suffix(".schedule"))]
        self._log = log_path.open("w")
        self.process = subprocess.Popen(
            args,
            cwd=settings.BASE_DIR,
            env={
                **os.environ,
                "DJANGO_SETTINGS_MODULE": "project.settings",
                "PYTHONUNBUFFERED": "1",
                # As in the test process (tests/conftest.py): no random audit draws, whose
                # extra webhook deliveries would differ from run to run.
                "AUDIT_RATE": "0",
                "AUDIT_REJECT_RATE": "0",
                **env,
                "CELERY_TASK_DEFAULT_QUEUE": queue,
                "CELERY_QUEUE_PREFIX": f"{queue}.",
            },
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL the whole worker (its beat thread and all): no chance to ack or clean up."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log.close()

    def output(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text()


def wait_for(check: Callable[[], Any], *, timeout: float, interval: float = 0.1) -> Any:
    """Poll ``check`` until it returns something truthy (returned) or ``timeout`` passes
    (None)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(interval)
    return None
