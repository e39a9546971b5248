"""The task page with a 20,000-step attempt (issue 26, the trace tree): server response
time and first contentful paint in Chromium, beside the same task page without steps.

    .venv/bin/python -m bench.trace_tree [STEPS [LOADS]]      # SQLite (a bench file)
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench .venv/bin/python -m bench.trace_tree

The attempt is a team of four nodes and a synthesis (five runs); each run made
``steps / 10`` model calls, each followed by one tool call, as the recorder writes them
(a request snapshot and the model's message, a tool result and its message), so 20,000
steps are 10,000 model calls, 10,000 tool calls and 20,000 transcript messages. The
baseline is a task built the same way with no steps (its five runs only).

Server time: one GET of the task page with the Django test client in this process, warm
(two requests first), median of ``requests``. First paint: Chromium (Playwright, the
system Chromium) loads the page from a live server started in this process and reads
``performance.getEntriesByName('first-contentful-paint')``, and the navigation's
``responseEnd`` (server response as the browser saw it), median of ``requests`` loads.
Target: the page with 20,000 steps paints within 1.5x of the page without steps.
Prints figures; asserts nothing.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

STEPS = 20_000
RUNS = 5  # four team nodes and the synthesis
TARGET_RATIO = 1.5
CHROMIUM = "/usr/bin/chromium"
# How the benchmarks and the browser tests start it: no GPU, no background traffic.
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def build_trace_task(owner: Any, *, steps: int, title: str = "Bench trace task") -> Any:
    """A needs_review task whose attempt 1 is a team of four nodes and a synthesis with
    ``steps`` steps in all (half model calls, half tool calls), written with bulk inserts
    (COPY on PostgreSQL, ``bulk_create`` elsewhere) in a few seconds."""
    from django.db import transaction
    from django.utils import timezone

    from bench import data
    from bench.ui import analyze
    from tasks_app.models import LLMRequestSnapshot, Run, RunMessage, Task, content_digest

    started = timezone.now() - timedelta(hours=1)
    with transaction.atomic():
        task = Task.objects.create(
            owner=owner,
            title=title,
            request="Compare the travel policies of every region.",
            rules="Cite the evidence.",
            status="needs_review",
            attempt_count=1,
            version=3,
            final_answer="Bench answer citing the evidence [R1].",
        )
        runs = []
        for i in range(RUNS):
            synthesis = i == RUNS - 1
            runs.append(
                Run.objects.create(
                    task=task,
                    attempt_index=1,
                    kind="synthesis" if synthesis else "team_node",
                    node_id="" if synthesis else f"region-{i}",
                    node_role="" if synthesis else f"Researcher of region {i}",
                    graph_index=i,
                    model_name="bench:agent",
                    status="completed",
                    finish_reason="stop",
                    output_text=f"Output of run {i}.",
                    input_tokens=0,
                    output_tokens=0,
                    cost=Decimal(0),
                    cost_currency="USD",
                    started_at=started,
                    finished_at=started + timedelta(minutes=30),
                    duration_ms=1_800_000,
                )
            )
        per_run = steps // (2 * RUNS)
        for r, run in enumerate(runs):
            calls, tools, messages = [], [], []
            for i in range(per_run):
                at = started + timedelta(milliseconds=(r * per_run + i) * 20)
                calls.append(_call_row(run.pk, i, at))
                messages.append(_message_row(run.pk, 2 * i, "assistant", f"Step {i}: reading.", at))
                content = data.text_of(300, r * per_run + i)
                tools.append(
                    {
                        "run_id": run.pk,
                        "task_id": task.pk,
                        "attempt_index": 1,
                        "sequence": i,
                        "tool_name": "read_document",
                        "tool_call_id": f"call-{r}-{i}",
                        "arguments": {"document_id": i},
                        "content": content,
                        "content_chars": len(content),
                        "content_sha256": content_digest("read_document", content),
                        "title": f"Document {i}",
                        "created_at": at + timedelta(milliseconds=5),
                    }
                )
                messages.append(
                    _message_row(run.pk, 2 * i + 1, "tool", content, at + timedelta(milliseconds=5))
                )
            data.bulk_insert(LLMRequestSnapshot, calls)
            data.bulk_insert(data.ToolEvidence, tools)
            data.bulk_insert(RunMessage, messages)
    # Planner statistics and the visibility map, as autovacuum leaves them on a live
    # database (VACUUM only outside a transaction: in the tests, ANALYZE alone).
    analyze()
    return task


def _call_row(run_id: int, i: int, at: Any) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "iteration": i,
        "provider": "bench",
        "model_name": "bench:agent",
        "message_count": 2 * i + 2,
        "tool_names": ["read_document"],
        "message_chars": 400 * (i + 1),
        "tool_schema_chars": 200,
        "latency_ms": 800 + i % 400,
        "input_tokens": 100 * (i + 1),
        "output_tokens": 40,
        "cost": Decimal("0.0001"),
        "cost_currency": "USD",
        "created_at": at,
    }


def _message_row(run_id: int, index: int, role: str, content: str, at: Any) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "index": index,
        "role": role,
        "content": content,
        "payload": {},
        "created_at": at,
    }


def server_ms(client: Any, url: str, requests: int) -> float:
    for _ in range(2):
        client.get(url, secure=True)
    times = []
    for _ in range(requests):
        started = time.perf_counter()
        response = client.get(url, secure=True)
        times.append((time.perf_counter() - started) * 1000)
        if response.status_code != 200:
            raise RuntimeError(f"GET {url} -> {response.status_code}")
    return statistics.median(times)


# The paint entry can be queued after the load event: wait for it (buffered observer).
FIGURES_JS = """() => new Promise((resolve) => {
  const done = (fcp) => {
    const nav = performance.getEntriesByType('navigation')[0];
    resolve({fcp, responseEnd: nav.responseEnd, nodes: document.getElementsByTagName('*').length});
  };
  new PerformanceObserver((list) => {
    const entry = list.getEntriesByName('first-contentful-paint')[0];
    if (entry) done(entry.startTime);
  }).observe({type: 'paint', buffered: true});
  setTimeout(() => done(null), 10000);
})"""


def paint_ms(base_url: str, session_cookie: str, path: str, requests: int) -> dict[str, float]:
    """Median first contentful paint and response end of ``requests`` cold loads."""
    from playwright.sync_api import sync_playwright

    fcp, response_end, nodes = [], [], 0
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        for _ in range(requests + 1):  # the first load warms the server and the cache
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            host = base_url.split("//", 1)[1].split(":")[0]
            context.add_cookies(
                [{"name": "sessionid", "value": session_cookie, "domain": host, "path": "/"}]
            )
            page = context.new_page()
            response = page.goto(base_url + path, wait_until="load")
            if response is None or response.status != 200 or not page.url.endswith(path):
                raise RuntimeError(f"GET {path} -> {page.url} {response and response.status}")
            figures = page.evaluate(FIGURES_JS)
            fcp.append(figures["fcp"])
            response_end.append(figures["responseEnd"])
            nodes = figures["nodes"]
            context.close()
        browser.close()
    return {
        "fcp_ms": statistics.median(fcp[1:]),
        "response_end_ms": statistics.median(response_end[1:]),
        "dom_nodes": nodes,
    }


def measure(*, steps: int = STEPS, requests: int = 5, browser: bool = True) -> dict[str, Any]:
    """Build the two tasks, time both pages, delete the tasks; returns the figures
    (printed by ``main``)."""
    from bench import data

    reviewer = data.user("bench-trace-reviewer", reviewer=True)
    started = time.perf_counter()
    big = build_trace_task(reviewer, steps=steps, title="Bench trace: 20,000 steps")
    build_s = time.perf_counter() - started
    small = build_trace_task(reviewer, steps=0, title="Bench trace: no steps")
    try:
        return _measure_pages(reviewer, big, small, steps, build_s, requests, browser=browser)
    finally:
        big.delete()  # the runs, calls, tool calls and messages cascade
        small.delete()


def _measure_pages(
    reviewer: Any, big: Any, small: Any, steps: int, build_s: float, requests: int, *, browser: bool
) -> dict[str, Any]:
    from django.contrib.auth import SESSION_KEY
    from django.test import Client
    from django.urls import reverse

    client = Client()
    client.force_login(reviewer)
    out: dict[str, Any] = {"steps": steps, "build_s": round(build_s, 1)}
    for name, task in (("without steps", small), ("with steps", big)):
        url = reverse("task_detail", args=[task.pk])
        out[name] = {"server_ms": round(server_ms(client, url, requests), 1), "url": url}
    if browser and os.path.exists(CHROMIUM):
        session = client.cookies["sessionid"].value
        assert client.session[SESSION_KEY]
        with live_server() as base_url:
            for name in ("without steps", "with steps"):
                out[name] |= paint_ms(base_url, session, out[name]["url"], requests)
    return out


class live_server:  # noqa: N801 (a context manager used like a function)
    """Django's live server thread (the test runner's) on a free port, static files
    served, for the duration of the ``with`` block. An in-memory SQLite database (the
    test suite's) is shared with the server's threads, as Django's live server tests do;
    the caller makes no query of its own while the browser runs."""

    def __enter__(self) -> str:
        from django.contrib.staticfiles.handlers import StaticFilesHandler
        from django.db import connections
        from django.test.testcases import LiveServerThread

        shared = {
            conn.alias: conn
            for conn in connections.all()
            if conn.vendor == "sqlite" and conn.is_in_memory_db()
        }
        for conn in shared.values():
            conn.inc_thread_sharing()
        self.shared = shared
        self.thread = LiveServerThread(
            "localhost", StaticFilesHandler, connections_override=shared, port=0
        )
        self.thread.daemon = True
        self.thread.start()
        self.thread.is_ready.wait()
        if self.thread.error:
            raise self.thread.error
        return f"http://localhost:{self.thread.port}"

    def __exit__(self, *exc: object) -> None:
        self.thread.terminate()
        for conn in self.shared.values():
            conn.dec_thread_sharing()


def report(figures: dict[str, Any], vendor: str) -> list[str]:
    """One line per figure: with the steps, the baseline without them, their ratio."""
    base, big = figures["without steps"], figures["with steps"]
    lines = [
        f"trace tree on {vendor}: {figures['steps']:,} steps built in {figures['build_s']} s",
        f"  {'figure (median)':<34} {'steps':>9} {'baseline':>9} {'ratio':>6}",
    ]
    rows = [("server response, test client (ms)", "server_ms")]
    if "fcp_ms" in big:
        rows += [
            ("response end, Chromium (ms)", "response_end_ms"),
            ("first contentful paint (ms)", "fcp_ms"),
            ("DOM elements at load", "dom_nodes"),
        ]
    for label, key in rows:
        ratio = big[key] / base[key] if base[key] else float("nan")
        lines.append(f"  {label:<34} {big[key]:>9.0f} {base[key]:>9.0f} {ratio:>6.2f}")
    if "fcp_ms" in big:
        ratio = big["fcp_ms"] / base["fcp_ms"]
        verdict = "MET" if ratio <= TARGET_RATIO else "MISSED"
        lines.append(f"  first paint within {TARGET_RATIO}x of the page without steps: {verdict}")
    else:
        lines.append(f"  first paint not measured (browser=False, or no Chromium at {CHROMIUM})")
    return lines


def main(argv: list[str]) -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    os.environ.setdefault("DEBUG", "0")
    os.environ.setdefault("SECRET_KEY", "bench-only-secret-key-not-for-production-use-0123456789")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    # The live server speaks plain HTTP on localhost.
    os.environ.setdefault("SECURE_SSL_REDIRECT", "0")
    os.environ.setdefault("SESSION_COOKIE_SECURE", "0")
    var = Path(__file__).resolve().parent.parent / "var" / "bench-trace"
    os.environ.setdefault("EVIDENTIA_VAR_DIR", str(var))
    if not os.environ.get("DATABASE_URL"):  # a fresh SQLite file of its own
        var.mkdir(parents=True, exist_ok=True)
        (var / "evidentia.sqlite3").unlink(missing_ok=True)
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from bench.common import ensure_database

    ensure_database(os.environ.get("DATABASE_URL", ""))
    call_command("migrate", verbosity=0)
    steps = int(argv[0]) if argv else STEPS
    requests = int(argv[1]) if len(argv) > 1 else 5
    figures = measure(steps=steps, requests=requests)
    print("\n".join(report(figures, connection.vendor)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
