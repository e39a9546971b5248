"""Shared pieces of the drills: the summary line, and a real Celery worker (with the
drill models registered) started against the test database."""

from __future__ import annotations

import os

from tests import workers
from tests.workers import database_url, redis_url, wait_for

__all__ = ["Worker", "database_url", "redis_url", "report", "wait_for"]


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


class Worker(workers.Worker):
    """A real worker whose process registers the drill models (``drill:slow``, ...)."""

    app = "tests.drills.worker_app"
