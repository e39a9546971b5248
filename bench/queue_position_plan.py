"""The task page's queue position query under ``EXPLAIN (ANALYZE, BUFFERS)`` (issue 48).

``python -m bench.queue_position_plan [--out PATH]`` reads the bench database as it is
(after ``python -m bench --only ui`` it holds the UI benchmark's tasks) and, for the
first, the middle and the last task of the unfiltered review queue, runs the keyset
query of ``evidence_app.review.queue_selectors`` (position, total, neighbours in one
statement; PostgreSQL only) three times, then once more under ``EXPLAIN (ANALYZE,
BUFFERS)``, and prints the plan with the time of the last plain run and the position
the task page would show. Nothing is written to the database.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path


def run() -> str:
    from django.db import connection

    from evidence_app.review import queue_selectors
    from tasks_app.models import Task

    if connection.vendor != "postgresql":
        raise SystemExit("the keyset query is PostgreSQL's: set DATABASE_URL")
    queued = Task.objects.needs_review().order_by("created_at", "id").values_list("pk", flat=True)
    n = queued.count()
    if not n:
        raise SystemExit("no task in needs_review: run python -m bench --only ui first")
    query = queue_selectors._keyset_query()
    out = [f"{n:,} tasks in needs_review; load average {os.getloadavg()}\n", query.sql, ""]
    for name, task_id in (
        ("first", queued[0]),
        ("middle", queued[n // 2]),
        ("last", queued[n - 1]),
    ):
        params = list(query.params)
        for i in query.slots:
            params[i] = task_id
        with connection.cursor() as cur:
            for _ in range(3):
                started = time.perf_counter()
                cur.execute(query.sql, params)
                cur.fetchall()
            ms = (time.perf_counter() - started) * 1000
            cur.execute("EXPLAIN (ANALYZE, BUFFERS) " + query.sql, params)
            plan = [row[0] for row in cur.fetchall()]
        position = queue_selectors.queue_position(None, {}, task_id)
        out += [
            f"== {name} task {task_id}: {ms:.2f} ms (third plain run); "
            f"position {position['position']:,} of {position['total']:,}",
            *plan,
            "",
        ]
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="also write the text here")
    args = parser.parse_args()
    from bench.common import setup_django

    setup_django(bench_models=False)
    text = run()
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
