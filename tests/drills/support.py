"""Shared pieces of the drills: the summary line, database and broker URLs for worker
processes, and a real Celery worker started against the test database."""

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

from django.conf import settings
from django.db import connection


def report(name: str, figure: str) -> None:
    """One summary line per drill: printed, and written to ``$DRILLS_REPORT`` (the file
    ``bin/drills`` prints at the end)."""
    line = f"{name}: {figure}"
    print(f"\nDRILL {line}")
    path = os.environ.get("DRILLS_REPORT")
    if path:
        # A later report of the same drill replaces the earlier one (pytest-django runs
        # a module's transactional tests after the others, so a module may report twice).
        with open(path, "a+", encoding="utf-8") as fh:
            fh.seek(0)
            lines = [x for x in fh.read().splitlines() if not x.startswith(f"{name}: ")]
            fh.seek(0)
            fh.truncate()
            fh.write("".join(x + "\n" for x in [*lines, line]))


def database_url(*, application_name: str = "") -> str | None:
    """The test database as a URL a child process can use (None for in-memory SQLite)."""
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


class Worker:
    """A real Celery worker process (``celery -A tests.drills.worker_app worker``), solo
    pool, consuming one queue of its own, with the drill models registered."""

    def __init__(self, *, env: dict[str, str], queue: str, log_path: Path, beat: bool = False):
        self.log_path = log_path
        args = [
            str(Path(sys.executable).with_name("celery")),
            "-A",
            "tests.drills.worker_app",
            "worker",
            "--pool=solo",
            "-Q",
            queue,
            "--loglevel=INFO",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            f"--hostname={log_path.stem}@drill",
        ]
        if beat:
            args += ["-B", "--schedule-filename", str(log_path.with_suffix(".schedule"))]
        self._log = log_path.open("w")
        self.process = subprocess.Popen(
            args,
            cwd=settings.BASE_DIR,
            env={**os.environ, **env, "CELERY_TASK_DEFAULT_QUEUE": queue},
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

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
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(interval)
    return None
