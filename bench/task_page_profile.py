"""Where the task page of a 10 MB task spends its queries and CPU (issue 48).

``python -m bench.task_page_profile [REQUESTS] [--mb MB] [--out PATH]`` builds the UI
benchmark's detail task (``MB`` MB of evidence in 500 results, default 10, its verdict
storing the rendered packet) under an owner of its own, then, as a reviewer through the
test client: the first request of this process (cold) and REQUESTS warm ones (default
30), each as wall time and this process's CPU (``time.process_time``); the statements
of one request with the line that sent each; a cProfile (CPU time) of the warm requests.
The task is deleted afterwards; nothing else in the bench database is touched.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from bench.common import percentile

OWNER = "bench_page_profile"


def _callers(connection: Any, lines: list[str]) -> Any:
    root = str(Path(__file__).resolve().parent.parent) + os.sep

    def wrapper(execute: Any, sql: str, *args: Any) -> Any:
        frames = [
            f
            for f in traceback.extract_stack()[:-1]
            if "site-packages" not in f.filename
            and "/bench/" not in f.filename
            and not f.filename.endswith("project/db.py")
        ]
        where = (
            f"{frames[-1].filename.removeprefix(root)}:{frames[-1].lineno} {frames[-1].name}"
            if frames
            else "(django)"
        )
        lines.append(f"{where}\n      {' '.join(sql.split())[:150]}")
        return execute(sql, *args)

    return wrapper


def run(requests: int, mb: float) -> str:
    from django.db import connection
    from django.test import Client
    from django.urls import reverse

    from bench import data
    from bench.ui import _evidence_task
    from tasks_app.models import Task

    owner = data.user(OWNER)
    reviewer = data.user("bench_reviewer", reviewer=True)
    Task.objects.filter(owner=owner).delete()
    task = _evidence_task(owner, mb, 500, title=f"Bench: {mb:g} MB of evidence")
    client = Client()
    client.force_login(reviewer)
    url = reverse("task_detail", args=[task.pk])
    out = [f"GET {url}: task page of a {mb:g} MB task (500 results), {connection.vendor}\n"]
    try:
        cpu0, wall0 = time.process_time(), time.perf_counter()
        first = client.get(url, secure=True)
        first_cpu, first_wall = time.process_time() - cpu0, time.perf_counter() - wall0
        if first.status_code != 200:
            raise RuntimeError(f"GET {url} -> {first.status_code}")
        for _ in range(2):
            client.get(url, secure=True)
        cpu, wall = [], []
        for _ in range(requests):
            c, w = time.process_time(), time.perf_counter()
            client.get(url, secure=True)
            cpu.append((time.process_time() - c) * 1000)
            wall.append((time.perf_counter() - w) * 1000)
        lines: list[str] = []
        with connection.execute_wrapper(_callers(connection, lines)):
            response = client.get(url, secure=True)
        profiler = cProfile.Profile(time.process_time)
        profiler.enable()
        for _ in range(requests):
            client.get(url, secure=True)
        profiler.disable()
    finally:
        Task.objects.filter(owner=owner).delete()
    out.append(
        f"first request of the process: wall {first_wall * 1000:.1f} ms, CPU "
        f"{first_cpu * 1000:.1f} ms\n"
        f"{requests} warm requests: wall p50 {statistics.median(wall):.1f} / p95 "
        f"{percentile(wall, 95):.1f} ms, CPU p50 {statistics.median(cpu):.1f} / p95 "
        f"{percentile(cpu, 95):.1f} ms\n"
        f"SQL statements per request: {len(lines)}; HTML {len(response.content) / 1000:.1f} KB;"
        f" load average {' / '.join(f'{x:.2f}' for x in os.getloadavg())}\n"
    )
    out.append("Statements of one request:\n")
    out += [f"{i:3d} {line}" for i, line in enumerate(lines, 1)]
    out.append(f"\nOur functions (cProfile, CPU time, {requests} requests), by cumulative time:\n")
    stream = io.StringIO()
    pstats.Stats(profiler, stream=stream).sort_stats("cumulative").print_stats(
        r"/(evidence_app|tasks_app|project)/", 40
    )
    text = stream.getvalue().replace(str(Path(__file__).resolve().parent.parent) + os.sep, "")
    text_lines = text.splitlines()
    start = next((i for i, line in enumerate(text_lines) if "ncalls" in line), 0)
    out.append("\n".join(text_lines[start:]).rstrip())
    for order, count in (("tottime", 30), ("cumulative", 50)):
        out.append(f"\ncProfile (CPU time) of {requests} warm requests, top {count} by {order}:\n")
        stream = io.StringIO()
        pstats.Stats(profiler, stream=stream).strip_dirs().sort_stats(order).print_stats(count)
        listing = stream.getvalue().splitlines()
        start = next((i for i, line in enumerate(listing) if "ncalls" in line), 0)
        out.append("\n".join(listing[start:]).rstrip())
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.task_page_profile")
    parser.add_argument("requests", nargs="?", type=int, default=30)
    parser.add_argument("--mb", type=float, default=10)
    parser.add_argument("--out", default="", help="write the profile here as well")
    args = parser.parse_args(argv)

    from bench.common import setup_django

    setup_django(bench_models=False)
    text = run(args.requests, args.mb)
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
