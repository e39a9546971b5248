"""Pipeline overhead: tasks through real Celery workers with zero-latency scripted
models (3 tool calls, an answer, a validation each), against a no-op Celery round
trip on the same broker and the same worker count, in the same run.

The worker runs the production configuration (threads pool, pooled PostgreSQL
connections); the burst is repeated through prefork children (the configuration before
issue 16) for comparison. Two measurements, each against its no-op twin:

- latency (closed loop, one task at a time, idle workers): from just before the task
  is created to the commit of its last transition (``validating`` → ``awaiting_feedback``,
  its ``TaskEvent.at``, written by the worker). That is the per-task overhead: with
  zero-latency models everything is overhead (two broker hops, ~25 database writes,
  the agent loop, packet build, prompt render and judge parse). No-op: from just before
  ``send_task`` to the no-op's own clock reading in the worker.
- throughput (burst): N tasks sent at once; tasks/s from the first send to the last
  settled task. No-op: N no-op jobs sent at once, jobs/s to the last one run.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any
from unittest import mock

from celery import Celery
from django.conf import settings

from bench.common import (
    Figure,
    Target,
    bench_owner,
    cpu_ms_per,
    delete_tasks_of,
    kept_connection,
    require_redis,
    result,
    summary_ms,
    wait_for_tasks,
)
from bench.models import AGENT, JUDGE
from bench.procstat import cpu_seconds, descendants
from project.queues import PURPOSES
from tasks_app.models import KnowledgeDocument, Task, TaskEvent
from tasks_app.workflow import services
from tasks_app.workflow.states import TaskStatus

OWNER = "bench_pipeline"
SETTLED = {
    TaskStatus.AWAITING_FEEDBACK,
    TaskStatus.NEEDS_REVIEW,
    TaskStatus.FAILED,
    TaskStatus.CLOSED,
    TaskStatus.ABANDONED,
}
# How often the closed loop looks for the settled task. The figure comes from the
# worker's own timestamp, so polling only paces the loop; polling faster would steal CPU
# from the worker on a small machine.
LATENCY_POLL_S = float(os.environ.get("BENCH_POLL_SECONDS", "0.02"))
DOCS = [
    ("Bench overhead policy", "The pipeline overhead budget is 30 ms per task. " * 20),
    (
        "Bench broker notes",
        "Jobs go through the broker twice per task: attempt and validation. " * 20,
    ),
    ("Bench database notes", "Every tool result is stored the moment the tool returns. " * 20),
]


def ensure_documents() -> None:
    for i, (title, body) in enumerate(DOCS):
        KnowledgeDocument.objects.update_or_create(
            source_key=f"bench:doc:{i}", defaults={"title": title, "body": body}
        )


def owner() -> Any:
    return bench_owner(OWNER)


def cleanup() -> int:
    return delete_tasks_of(OWNER)


# The production worker configuration (bin/prod, docs/operations.md): the threads pool
# with pooled PostgreSQL connections. The previous one, prefork children each opening a
# connection per job (DB_CONN_MAX_AGE=0), is measured beside it for comparison.
PRODUCTION = "threads"
PREFORK = "prefork"
POOL_ENV = {
    PRODUCTION: {"DB_POOL_MAX_SIZE": "4", "DB_CONN_MAX_AGE": "0"},
    PREFORK: {"DB_POOL_MAX_SIZE": "0", "DB_CONN_MAX_AGE": "0"},
}


class Worker:
    """One Celery worker process (``pool``: threads or prefork, ``concurrency`` threads
    or children) on its own queue, or on ``queue`` shared with other processes (each
    then needs its own ``hostname``); ``env`` adds to or overrides its environment."""

    def __init__(
        self,
        *,
        broker_url: str,
        database_url: str,
        concurrency: int,
        log_path: Path,
        pool: str = PRODUCTION,
        queue: str = "",
        hostname: str = "",
        env: dict[str, str] | None = None,
    ) -> None:
        self.queue = queue or f"bench-{uuid.uuid4().hex[:10]}"
        self.hostname = hostname
        self.env = env or {}
        self.broker_url = broker_url
        self.database_url = database_url
        self.concurrency = concurrency
        self.log_path = log_path
        self.pool = pool
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Worker:
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "project.settings",
            "DATABASE_URL": self.database_url,
            "CELERY_BROKER_URL": self.broker_url,
            "CELERY_TASK_DEFAULT_QUEUE": self.queue,
            "CELERY_QUEUE_PREFIX": f"{self.queue}.",
            "BENCH_RESULT_BACKEND": self.broker_url,
            "AGENT_MODEL": AGENT,
            "VALIDATOR_MODEL": JUDGE,
            "MODEL_MAX_RETRIES": "0",
            "LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
            **POOL_ENV[self.pool],
            **self.env,
        }
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("w")
        self.process = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("celery")),
                "-A",
                "bench.worker",
                "worker",
                f"--pool={self.pool}",
                f"--concurrency={self.concurrency}",
                "-Q",
                ",".join([self.queue, *(f"{self.queue}.{p}" for p in PURPOSES)]),
                "--loglevel=WARNING",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                *([f"--hostname={self.hostname}"] if self.hostname else []),
            ],
            cwd=settings.BASE_DIR,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        return self

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self) -> str:
        try:
            return self.log_path.read_text()[-3000:]
        except OSError:
            return ""

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        self._log.close()


def _sender(broker_url: str) -> Celery:
    app = Celery("bench-sender", broker=broker_url, backend=broker_url, set_as_current=False)
    app.conf.update(task_ignore_result=False, broker_connection_retry_on_startup=True)
    return app


def _settled_at(task_ids: list[int]) -> dict[int, datetime]:
    """The time of each settled task's last transition (written by the worker)."""
    rows = TaskEvent.objects.filter(task_id__in=task_ids, to_status__in=SETTLED).values_list(
        "task_id", "at"
    )
    return {task_id: at for task_id, at in rows}


def _wait_settled(
    task_ids: list[int], worker: Worker, *, timeout: float, poll: float
) -> dict[int, datetime]:
    return wait_for_tasks(
        task_ids, _settled_at, [worker], timeout=timeout, poll=poll, what="settled"
    )


def _new_task(user: Any, i: int) -> Task:
    return services.task_create(
        owner=user,
        title=f"bench pipeline {i}",
        request=f"What is the pipeline overhead budget per task? (bench {i})",
        enqueue=False,
    )


def in_process(n: int) -> dict[str, Any]:
    """The work of ``n`` tasks without Celery: ``attempt_run`` then ``validation_run`` in
    this process (the validation job's send is skipped), with the bench models. Per task:
    wall time, SQL statements and the database's share of the time."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext, override_settings

    from evidence_app.validation.services import validation_run
    from tasks_app.runtime.attempts import attempt_run

    user = owner()
    samples, queries, commits = [], [], []
    with (
        override_settings(AGENT_MODEL=AGENT, VALIDATOR_MODEL=JUDGE),
        mock.patch("evidence_app.jobs.validate_attempt_job.delay_on_commit"),
    ):
        for i in range(n):
            started = time.perf_counter()
            with CaptureQueriesContext(connection) as captured:
                task = _new_task(user, i)
                attempt_run(task_id=task.pk, worker="bench-in-process")
                validation_run(task_id=task.pk, attempt_index=1)
            samples.append(time.perf_counter() - started)
            queries.append(len(captured))
            commits.append(sum(1 for q in captured.captured_queries if q["sql"] == "COMMIT"))
    return {
        **summary_ms(samples),
        "sql_statements_per_task": round(statistics.median(queries), 1),
        "commit_statements_per_task": statistics.median(commits),
    }


def commit_latency(n: int = 100) -> dict[str, Any]:
    """One tiny committed write per statement: the floor a transaction costs here
    (PostgreSQL waits for the WAL flush on every commit)."""
    from django.db import connection

    samples = []
    with connection.cursor() as cur:
        cur.execute("CREATE TABLE IF NOT EXISTS bench_commit_probe (x int)")
        for _ in range(n):
            started = time.perf_counter()
            cur.execute("INSERT INTO bench_commit_probe VALUES (1)")
            samples.append(time.perf_counter() - started)
        cur.execute("DROP TABLE bench_commit_probe")
    return summary_ms(samples)


def _noop_latency(app: Celery, queue: str, n: int) -> list[float]:
    samples = []
    for _ in range(n):
        sent = time.time()
        ran_at = app.send_task("bench.noop", queue=queue).get(timeout=30)
        samples.append(float(ran_at) - sent)
    return samples


def _noop_burst(app: Celery, queue: str, n: int) -> float:
    start = time.time()
    handles = [app.send_task("bench.noop", queue=queue) for _ in range(n)]
    last = max(float(h.get(timeout=120)) for h in handles)
    return last - start


def _phases(submitted: dict[int, float]) -> dict[str, dict[str, float]]:
    """Where each task's time went, from its transition times: queue wait until the
    attempt is claimed, the attempt, the hand-off to validation, validation."""
    events: dict[int, dict[str, float]] = {}
    for task_id, to_status, at in TaskEvent.objects.filter(task_id__in=list(submitted)).values_list(
        "task_id", "to_status", "at"
    ):
        events.setdefault(task_id, {})[to_status] = at.timestamp()
    phases: dict[str, list[float]] = {"submit_to_claimed": [], "attempt": [], "validation": []}
    for task_id, t0 in submitted.items():
        e = events.get(task_id, {})
        if {"running", "validating", "awaiting_feedback"} <= set(e):
            phases["submit_to_claimed"].append(e["running"] - t0)
            phases["attempt"].append(e["validating"] - e["running"])
            phases["validation"].append(e["awaiting_feedback"] - e["validating"])
    return {k: summary_ms(v) for k, v in phases.items() if v}


def _pipeline_latency(
    app: Celery, queue: str, worker: Worker, n: int
) -> tuple[list[float], list[int], dict[int, float]]:
    user = owner()
    samples, ids = [], []
    starts: dict[int, float] = {}
    # The tasks are created as a web process of the production profile creates them: on
    # a connection it keeps (pooled there), not a new one per task.
    with kept_connection():
        for i in range(n):
            submitted = time.time()
            task = _new_task(user, i)
            app.send_task("tasks_app.run_attempt", args=[task.pk], queue=queue)
            done = _wait_settled([task.pk], worker, timeout=60, poll=LATENCY_POLL_S)
            samples.append(done[task.pk].timestamp() - submitted)
            ids.append(task.pk)
            starts[task.pk] = submitted
    return samples, ids, starts


def _pipeline_burst(app: Celery, queue: str, worker: Worker, n: int) -> tuple[float, list[int]]:
    user = owner()
    tasks = [_new_task(user, i) for i in range(n)]
    start = time.time()
    for task in tasks:
        app.send_task("tasks_app.run_attempt", args=[task.pk], queue=queue)
    ids = [t.pk for t in tasks]
    done = _wait_settled(ids, worker, timeout=600, poll=0.05)
    return max(at.timestamp() for at in done.values()) - start, ids


def _measured_burst(app: Celery, worker: Worker, n: int) -> tuple[float, list[int], float]:
    """``_pipeline_burst`` of ``n`` tasks, and the worker processes' CPU (user + system,
    /proc) per task during it, in ms."""
    assert worker.process is not None
    pids = descendants(worker.process.pid)
    before = cpu_seconds(pids)
    wall, ids = _pipeline_burst(app, worker.queue, worker, n)
    return wall, ids, cpu_ms_per(before, cpu_seconds(pids), n)


def run(
    *,
    n_latency: int = 200,
    n_burst: int = 200,
    workers: int = 2,
    broker_url: str,
    database_url: str,
    log_dir: Path,
    warmup: int = 10,
    n_in_process: int = 30,
) -> dict[str, Any]:
    require_redis(broker_url, "pipeline")
    ensure_documents()
    cleanup()
    in_process(3)  # warm
    local = in_process(n_in_process)
    commit = commit_latency()
    cleanup()
    app = _sender(broker_url)
    try:
        with Worker(
            broker_url=broker_url,
            database_url=database_url,
            concurrency=workers,
            log_path=log_dir / "bench-worker.log",
        ) as worker:
            # Ready and warm: every child has run the no-op and whole tasks once.
            app.send_task("bench.noop", queue=worker.queue).get(timeout=60)
            _noop_latency(app, worker.queue, warmup)
            _pipeline_burst(app, worker.queue, worker, max(warmup, workers * 2))
            noop_lat = _noop_latency(app, worker.queue, n_latency)
            pipe_lat, lat_ids, starts = _pipeline_latency(app, worker.queue, worker, n_latency)
            phases = _phases(starts)
            noop_wall = _noop_burst(app, worker.queue, n_burst)
            pipe_wall, burst_ids, worker_cpu_ms = _measured_burst(app, worker, n_burst)
        # The same burst through the previous configuration, for comparison.
        with Worker(
            broker_url=broker_url,
            database_url=database_url,
            concurrency=workers,
            log_path=log_dir / "bench-worker-prefork.log",
            pool=PREFORK,
        ) as prefork:
            app.send_task("bench.noop", queue=prefork.queue).get(timeout=60)
            _pipeline_burst(app, prefork.queue, prefork, max(warmup, workers * 2))
            prefork_wall, prefork_ids, prefork_cpu_ms = _measured_burst(app, prefork, n_burst)
    finally:
        app.close()
    # What one no-op job costs the workers, the baseline of the CPU per task.
    noop_job_ms = noop_wall / n_burst * workers * 1000
    statuses: dict[str, int] = {}
    for status in Task.objects.filter(pk__in=lat_ids + burst_ids + prefork_ids).values_list(
        "status", flat=True
    ):
        statuses[status] = statuses.get(status, 0) + 1
    sample_task = Task.objects.filter(pk__in=lat_ids).first()
    per_task_rows = {}
    if sample_task is not None:
        per_task_rows = {
            "tool_evidence": sample_task.tool_evidence.count(),
            "runs": sample_task.runs.count(),
            "events": sample_task.events.count(),
            "validations": sample_task.validations.count(),
        }
    cleanup()

    noop = summary_ms(noop_lat)
    pipe = summary_ms(pipe_lat)
    noop_rate = n_burst / noop_wall
    pipe_rate = n_burst / pipe_wall
    figures = [
        Figure(
            "pipeline",
            "per-task overhead p50",
            pipe["p50_ms"],
            "ms",
            "no-op round trip p50",
            noop["p50_ms"],
        ),
        Figure(
            "pipeline",
            "per-task overhead p95",
            pipe["p95_ms"],
            "ms",
            "no-op round trip p95",
            noop["p95_ms"],
        ),
        *[
            Figure(
                "pipeline",
                f"  phase {label} p50",
                phases[key]["p50_ms"],
                "ms",
                "no-op round trip p50",
                noop["p50_ms"],
            )
            for key, label in (
                ("submit_to_claimed", "submit -> claimed"),
                ("attempt", "attempt (worker)"),
                ("validation", "validation incl. hop"),
            )
            if key in phases
        ],
        Figure(
            "pipeline",
            "  same work in-process, no broker, p50",
            local["p50_ms"],
            "ms",
            "no-op round trip p50",
            noop["p50_ms"],
        ),
        Figure(
            "pipeline",
            "  SQL statements per task (in-process)",
            local["sql_statements_per_task"],
            "",
            "",
            None,
            note=f"explicit COMMITs {local['commit_statements_per_task']}; the rest autocommit",
        ),
        Figure(
            "pipeline",
            "  PostgreSQL committed write p50",
            commit["p50_ms"],
            "ms",
            "no-op round trip p50",
            noop["p50_ms"],
        ),
        Figure(
            "pipeline",
            f"throughput ({workers} workers)",
            round(pipe_rate, 2),
            "tasks/s",
            "no-op throughput",
            round(noop_rate, 2),
            note="ratio < 1: a task costs 1/ratio no-op jobs",
        ),
        Figure(
            "pipeline",
            "worker CPU per task (burst)",
            round(worker_cpu_ms, 2),
            "ms",
            "no-op cost per job",
            round(noop_job_ms, 3),
            note=f"user+system of the worker processes, /proc; {PRODUCTION} pool",
        ),
        Figure(
            "pipeline",
            "  worker CPU per task, prefork (before)",
            round(prefork_cpu_ms, 2),
            "ms",
            "no-op cost per job",
            round(noop_job_ms, 3),
            note=f"{workers} prefork children, a connection per job; "
            f"{n_burst / prefork_wall:.1f} tasks/s",
        ),
        Figure(
            "pipeline",
            "amortised cost per task",
            round(pipe_wall / n_burst * workers * 1000, 2),
            "ms·worker",
            "no-op cost per job",
            round(noop_job_ms, 3),
        ),
    ]
    ratio_p50 = pipe["p50_ms"] / noop["p50_ms"] if noop["p50_ms"] else float("inf")
    targets = [
        Target(
            "pipeline",
            "per-task overhead p50 < 10x no-op round trip p50",
            f"{ratio_p50:.1f}x ({pipe['p50_ms']:.1f} ms vs {noop['p50_ms']:.2f} ms)",
            ratio_p50 < 10,
        ),
        Target(
            "pipeline",
            "per-task overhead p50 < 30 ms",
            f"{pipe['p50_ms']:.1f} ms",
            pipe["p50_ms"] < 30,
        ),
        Target(
            "pipeline",
            "SQL statements per task <= 35 (issue 48)",
            f"{local['sql_statements_per_task']:g}",
            local["sql_statements_per_task"] <= 35,
        ),
        Target(
            "pipeline",
            "worker CPU per task <= 5x a no-op job (issue 48)",
            f"{worker_cpu_ms / noop_job_ms:.1f}x ({worker_cpu_ms:.1f} ms vs {noop_job_ms:.2f} ms)",
            worker_cpu_ms <= 5 * noop_job_ms,
        ),
        Target(
            "pipeline",
            "worker CPU per task <= 30 ms (issue 16)",
            f"{worker_cpu_ms:.1f} ms",
            worker_cpu_ms <= 30,
        ),
    ]
    details = {
        "n_latency": n_latency,
        "n_burst": n_burst,
        "workers": workers,
        "broker": broker_url.split("@")[-1],
        "latency": {"pipeline": pipe, "noop": noop},
        "phases": phases,
        "in_process": local,
        "postgres_committed_write": commit,
        "worker_configuration": f"{PRODUCTION} pool x{workers}, {POOL_ENV[PRODUCTION]}",
        "worker_cpu_ms_per_task": round(worker_cpu_ms, 2),
        "prefork": {
            "worker_cpu_ms_per_task": round(prefork_cpu_ms, 2),
            "tasks_per_s": round(n_burst / prefork_wall, 2),
            "env": POOL_ENV[PREFORK],
        },
        "burst": {
            "pipeline_wall_s": round(pipe_wall, 3),
            "noop_wall_s": round(noop_wall, 3),
            "pipeline_tasks_per_s": round(pipe_rate, 2),
            "noop_jobs_per_s": round(noop_rate, 2),
        },
        "final_statuses": statuses,
        "rows_per_task": per_task_rows,
        "model_calls_per_task": {"agent": 4, "judge": 1},
        "sql_statements_per_task": local["sql_statements_per_task"],
        "celery_jobs_per_task": 2,
    }
    return result(figures=figures, targets=targets, details=details)
