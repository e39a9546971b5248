"""Real model latency (issue 16): a backlog of tasks through the production worker
configuration (``bin/prod attempts validation``: the Procfile's workers, run by honcho,
pooled connections) on PostgreSQL and Redis, with scripted models that sleep
``latency_ms`` per call (``calls`` calls per task: the agent's tool calls and answer, and
the judge).

Every figure is printed beside its bound measured in the same run:

- **CPU bound** = cores / CPU-seconds per task, where CPU-seconds are the worker
  processes' and their PostgreSQL backends' user+system time over the run (from /proc),
  divided by the tasks run. No configuration can beat it.
- **Little's law**: throughput = tasks in flight / time per task. The in-flight count is
  sampled (tasks ``running`` or ``validating``), the time per task measured per task
  (claimed to settled), so the two sides are both measured.

Targets: sustained throughput >= 80 % of the CPU bound with >= 100 tasks in flight, and
under the backlog the first verdicts arrive while later tasks still wait (time to first
verdict < 10 % of the backlog's drain time).
"""

from __future__ import annotations

import os
import secrets
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

from celery import Celery
from django.contrib.auth import get_user_model
from django.db import close_old_connections, connection

from bench.common import (
    Figure,
    ProdProcesses,
    Target,
    backend_pids,
    free_port,
    percentile,
    result,
)
from bench.models import LATENCY_AGENT, LATENCY_JUDGE
from bench.pipeline import SETTLED, ensure_documents
from bench.procstat import cpu_seconds, descendants
from tasks_app.models import Task, TaskEvent
from tasks_app.workflow import services
from tasks_app.workflow.states import TaskStatus

OWNER = "bench_latency"


def _owner() -> Any:
    user, _ = get_user_model().objects.get_or_create(username=OWNER)
    return user


def cleanup() -> None:
    Task.objects.filter(owner__username=OWNER).delete()


# --- the profile -----------------------------------------------------------------------


class Profile(ProdProcesses):
    """``bin/prod attempts validation`` with the bench's Celery app (its models)."""

    def __init__(
        self,
        *,
        broker_url: str,
        database_url: str,
        log_path: Path,
        latency_ms: int,
        calls: int,
        pool: str,
        attempts_concurrency: int,
        validation_concurrency: int,
        attempts_processes: int,
        validation_processes: int,
        db_pool: int,
    ) -> None:
        self.prefix = f"bench-lat-{uuid.uuid4().hex[:8]}."
        self.calls_key = f"bench:calls:{uuid.uuid4().hex[:8]}"
        self.broker_url = broker_url
        env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "CELERY_BROKER_URL": broker_url,
            "CELERY_QUEUE_PREFIX": self.prefix,
            "CELERY_TASK_DEFAULT_QUEUE": self.prefix + "default",
            "CELERY_APP": "bench.worker",
            "AGENT_MODEL": LATENCY_AGENT,
            "VALIDATOR_MODEL": LATENCY_JUDGE,
            "MODEL_MAX_RETRIES": "0",
            "BENCH_MODEL_LATENCY_MS": str(latency_ms),
            "BENCH_MODEL_CALLS": str(calls),
            "BENCH_CALLS_KEY": self.calls_key,
            "BENCH_RESULT_BACKEND": "",
            "WORKER_POOL": pool,
            "ATTEMPTS_CONCURRENCY": str(attempts_concurrency),
            "VALIDATION_CONCURRENCY": str(validation_concurrency),
            "DB_POOL_MAX_SIZE": str(db_pool),
            "DB_CONN_MAX_AGE": "0",
            "ATTEMPTS_PROCESSES": str(attempts_processes),
            "VALIDATION_PROCESSES": str(validation_processes),
            "PORT": str(free_port()),
            "SECRET_KEY": os.environ.get("SECRET_KEY") or secrets.token_urlsafe(50),
            "LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
        }
        env.pop("DJANGO_SETTINGS_MODULE", None)
        super().__init__(log_path=log_path, env=env)

    def __enter__(self) -> Profile:
        self.start(["attempts", "validation"])
        return self

    def model_calls(self) -> dict[str, int]:
        import redis

        client = redis.Redis.from_url(self.broker_url)
        try:
            raw = client.hgetall(self.calls_key)
        finally:
            client.close()
        return {k.decode(): int(v) for k, v in raw.items()}

    def reset_calls(self) -> None:
        import redis

        client = redis.Redis.from_url(self.broker_url)
        try:
            client.delete(self.calls_key)
        finally:
            client.close()

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self.reset_calls()


def _sender(broker_url: str) -> Celery:
    app = Celery("bench-latency-sender", broker=broker_url, set_as_current=False)
    app.conf.update(task_ignore_result=True, broker_connection_retry_on_startup=True)
    return app


def _create(user: Any, n: int, tag: str) -> list[int]:
    return [
        services.task_create(
            owner=user,
            title=f"bench latency {tag} {i}",
            request=f"What is the pipeline overhead budget per task? (latency {tag} {i})",
            enqueue=False,
        ).pk
        for i in range(n)
    ]


def _send(app: Celery, queue: str, ids: list[int]) -> dict[int, float]:
    sent = {}
    with app.producer_or_acquire() as producer:
        for task_id in ids:
            sent[task_id] = time.time()
            app.send_task("tasks_app.run_attempt", args=[task_id], queue=queue, producer=producer)
    return sent


def _events(ids: list[int]) -> tuple[dict[int, float], dict[int, float]]:
    """(settled time, first claimed time) per task, from the workers' TaskEvents."""
    settled: dict[int, float] = {}
    claimed: dict[int, float] = {}
    rows = TaskEvent.objects.filter(task_id__in=ids).values_list("task_id", "to_status", "at")
    for task_id, to_status, at in rows:
        ts = at.timestamp()
        if to_status in SETTLED:
            settled[task_id] = max(settled.get(task_id, 0.0), ts)
        elif to_status == TaskStatus.RUNNING:
            claimed[task_id] = min(claimed.get(task_id, ts), ts)
    return settled, claimed


def _wait(ids: list[int], profile: Profile, timeout: float, on_poll: Any = None) -> None:
    deadline = time.monotonic() + timeout
    while True:
        close_old_connections()
        if on_poll:
            on_poll()
        done = Task.objects.filter(pk__in=ids, status__in=SETTLED).count()
        if done == len(ids):
            return
        if time.monotonic() > deadline or not profile.alive():
            raise RuntimeError(
                f"{len(ids) - done} of {len(ids)} tasks not settled (profile alive: "
                f"{profile.alive()}); log:\n{profile.log_tail()}"
            )
        time.sleep(0.5)


class _Sampler:
    """Every 0.5 s: tasks in flight (running/validating) and PostgreSQL sessions."""

    def __init__(self, ids: list[int]) -> None:
        self.ids = ids
        self.samples: list[tuple[float, int, int]] = []

    def __call__(self) -> None:
        with connection.cursor() as cur:
            cur.execute(
                "SELECT count(*) FROM tasks_app_task WHERE id = ANY(%s) AND status IN "
                "('running', 'validating')",
                [self.ids],
            )
            in_flight = int(cur.fetchone()[0])
            cur.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid()"
            )
            sessions = int(cur.fetchone()[0])
        self.samples.append((time.time(), in_flight, sessions))


def run(
    *,
    backlog: int = 1000,
    latency_ms: int = 300,
    calls: int = 4,
    warmup: int = 20,
    pool: str = "threads",
    attempts_concurrency: int = 100,
    validation_concurrency: int = 50,
    attempts_processes: int = 1,
    validation_processes: int = 1,
    db_pool: int = 10,
    broker_url: str,
    database_url: str,
    log_dir: Path,
) -> dict[str, Any]:
    if not broker_url.startswith(("redis://", "rediss://")):
        raise RuntimeError("the latency benchmark needs a Redis broker (CELERY_BROKER_URL)")
    if not database_url.startswith(("postgres://", "postgresql://")):
        raise RuntimeError("the latency benchmark needs PostgreSQL (DATABASE_URL)")
    ensure_documents()
    cleanup()
    user = _owner()
    cores = os.cpu_count() or 2
    app = _sender(broker_url)
    profile = Profile(
        broker_url=broker_url,
        database_url=database_url,
        log_path=log_dir / "bench-latency.log",
        latency_ms=latency_ms,
        calls=calls,
        pool=pool,
        attempts_concurrency=attempts_concurrency,
        validation_concurrency=validation_concurrency,
        attempts_processes=attempts_processes,
        validation_processes=validation_processes,
        db_pool=db_pool,
    )
    queue = profile.prefix + "attempts"
    try:
        with profile:
            # Ready and warm: the workers answer a few whole tasks.
            warm = _create(user, warmup, "warmup")
            _send(app, queue, warm)
            _wait(warm, profile, timeout=180)
            # One task alone: the unloaded time per task (model latency + overhead).
            alone = _create(user, 1, "alone")
            alone_sent = _send(app, queue, alone)
            _wait(alone, profile, timeout=60)
            alone_settled, _ = _events(alone)
            unloaded_s = alone_settled[alone[0]] - alone_sent[alone[0]]

            ids = _create(user, backlog, "backlog")
            close_old_connections()
            time.sleep(1.0)
            assert profile.process is not None
            worker_pids = descendants(profile.process.pid)
            backends = backend_pids()
            cpu_before = cpu_seconds(worker_pids | backends)
            profile.reset_calls()
            sampler = _Sampler(ids)
            started = time.time()
            sent = _send(app, queue, ids)
            _wait(ids, profile, timeout=max(600, backlog * 2.0), on_poll=sampler)
            ended = time.time()
            backends_after = backend_pids()
            cpu_after = cpu_seconds(worker_pids | backends | backends_after)
            calls_seen = profile.model_calls()
            thread_note = _thread_count(worker_pids)
    finally:
        app.close()

    settled, claimed = _events(ids)
    cpu_s = sum(cpu_after.get(p, 0.0) - cpu_before.get(p, 0.0) for p in cpu_after)
    cpu_per_task = cpu_s / backlog
    cpu_bound = cores / cpu_per_task if cpu_per_task else float("inf")

    done_times = sorted(settled[i] for i in ids)
    t10 = percentile(done_times, 10)
    t90 = percentile(done_times, 90)
    sustained = 0.8 * backlog / (t90 - t10) if t90 > t10 else float("nan")
    window = [s for s in sampler.samples if t10 <= s[0] <= t90] or sampler.samples
    in_flight = statistics.fmean(s[1] for s in window)
    peak_sessions = max((s[2] for s in sampler.samples), default=0)
    in_service = [settled[i] - claimed[i] for i in ids if t10 <= settled[i] <= t90 and i in claimed]
    service_s = statistics.fmean(in_service) if in_service else float("nan")
    little = in_flight / service_s if service_s else float("nan")
    to_verdict = [settled[i] - sent[i] for i in ids]
    first = min(done_times) - started
    drain = max(done_times) - started

    attempts = sum(Task.objects.filter(pk__in=ids).values_list("attempt_count", flat=True))
    from evidence_app.models import ValidationSnapshot
    from tasks_app.models import LLMRequestSnapshot

    validations = ValidationSnapshot.objects.filter(task_id__in=ids).count()
    recorded_agent = LLMRequestSnapshot.objects.filter(run__task_id__in=ids).count()
    agent_calls = calls_seen.get("agent", 0)
    judge_calls = calls_seen.get("judge", 0)
    statuses: dict[str, int] = {}
    for status in Task.objects.filter(pk__in=ids).values_list("status", flat=True):
        statuses[status] = statuses.get(status, 0) + 1
    cleanup()

    config = (
        f"{pool} pool, attempts {attempts_processes}x{attempts_concurrency}, validation "
        f"{validation_processes}x{validation_concurrency}, DB pool {db_pool}/process"
    )
    figures = [
        Figure(
            "latency",
            "sustained throughput (10-90 % of backlog)",
            round(sustained, 2),
            "tasks/s",
            "CPU bound: cores / CPU-s per task",
            round(cpu_bound, 2),
            note=config,
        ),
        Figure(
            "latency",
            "  same, by Little's law",
            round(little, 2),
            "tasks/s",
            "measured throughput",
            round(sustained, 2),
            note=f"{in_flight:.0f} in flight / {service_s:.2f} s per task",
        ),
        Figure(
            "latency",
            "  tasks in flight (mean, steady)",
            round(in_flight, 1),
            "",
            "needed for the CPU bound",
            round(cpu_bound * unloaded_s, 1),
            note="bound x unloaded time per task",
        ),
        Figure(
            "latency",
            "  CPU per task (workers + PostgreSQL)",
            round(cpu_per_task * 1000, 1),
            "ms",
            "",
            None,
            note=f"{cpu_s:.1f} CPU-s for {backlog} tasks on {cores} cores",
        ),
        Figure(
            "latency",
            "  time per task, unloaded",
            round(unloaded_s * 1000, 1),
            "ms",
            "model time alone",
            float(latency_ms * calls),
            note=f"{calls} calls x {latency_ms} ms",
        ),
        Figure(
            "latency",
            f"time to verdict p50 (backlog {backlog})",
            round(percentile(to_verdict, 50) * 1000, 1),
            "ms",
            "backlog drain time",
            round(drain * 1000, 1),
        ),
        Figure(
            "latency",
            f"time to verdict p95 (backlog {backlog})",
            round(percentile(to_verdict, 95) * 1000, 1),
            "ms",
            "backlog drain time",
            round(drain * 1000, 1),
        ),
        Figure(
            "latency",
            "time to first verdict",
            round(first * 1000, 1),
            "ms",
            "backlog drain time",
            round(drain * 1000, 1),
        ),
        Figure(
            "latency",
            "  model calls per attempt (agent)",
            round(agent_calls / attempts, 2) if attempts else 0,
            "",
            "recorded request snapshots per attempt",
            round(recorded_agent / attempts, 2) if attempts else None,
            note=f"{agent_calls} calls, {attempts} attempts",
        ),
        Figure(
            "latency",
            "  validator calls per validation",
            round(judge_calls / validations, 2) if validations else 0,
            "",
            "",
            None,
            note=f"{judge_calls} calls, {validations} validations",
        ),
        Figure(
            "latency",
            "  PostgreSQL sessions (peak)",
            peak_sessions,
            "",
            "worker threads",
            attempts_processes * attempts_concurrency
            + validation_processes * validation_concurrency,
            note=thread_note,
        ),
    ]
    targets = [
        Target(
            "latency",
            "throughput >= 80% of CPU bound with >= 100 tasks in flight",
            f"{sustained:.1f} vs bound {cpu_bound:.1f} tasks/s "
            f"({sustained / cpu_bound:.0%}), {in_flight:.0f} in flight",
            sustained >= 0.8 * cpu_bound and in_flight >= 100,
        ),
        Target(
            "latency",
            "time to first verdict < 10% of backlog drain time",
            f"{first:.1f} s vs {drain:.1f} s ({first / drain:.1%})",
            first < 0.1 * drain,
        ),
    ]
    details = {
        "config": config,
        "backlog": backlog,
        "latency_ms": latency_ms,
        "calls_per_task": calls,
        "cores": cores,
        "cpu_seconds": round(cpu_s, 2),
        "cpu_per_task_ms": round(cpu_per_task * 1000, 2),
        "cpu_bound_tasks_per_s": round(cpu_bound, 2),
        "sustained_tasks_per_s": round(sustained, 2),
        "littles_law_tasks_per_s": round(little, 2),
        "in_flight_mean": round(in_flight, 1),
        "service_time_s": round(service_s, 3),
        "unloaded_time_per_task_s": round(unloaded_s, 3),
        "time_to_verdict_p50_s": round(percentile(to_verdict, 50), 2),
        "time_to_verdict_p95_s": round(percentile(to_verdict, 95), 2),
        "first_verdict_s": round(first, 2),
        "drain_s": round(drain, 2),
        "wall_s": round(ended - started, 2),
        "model_calls": {
            "agent": agent_calls,
            "judge": judge_calls,
            "attempts": attempts,
            "validations": validations,
            "agent_recorded": recorded_agent,
        },
        "peak_postgres_sessions": peak_sessions,
        "final_statuses": statuses,
    }
    return result(figures=figures, targets=targets, details=details)


def _thread_count(pids: set[int]) -> str:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("Threads:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return f"{len(pids)} processes, {total} OS threads"
