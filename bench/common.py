"""Shared helpers: the bench's setup (environment, database, Django), its owner accounts
and the wait for a burst's tasks, percentiles, figures with their baseline and ratio,
targets, tables."""

from __future__ import annotations

import math
import os
import platform
import signal
import socket
import statistics
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from django.conf import settings
from django.db import close_old_connections, connection

BENCH_DIR = Path(__file__).resolve().parent
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/bench"
DEFAULT_BROKER_URL = "redis://127.0.0.1:6379/5"


def configure_environment() -> None:
    """Production-like settings (DEBUG off) on the bench database and broker."""
    os.environ.setdefault("DATABASE_URL", DEFAULT_DATABASE_URL)
    os.environ.setdefault("CELERY_BROKER_URL", DEFAULT_BROKER_URL)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    os.environ.setdefault("DEBUG", "0")
    os.environ.setdefault("SECRET_KEY", "bench-only-secret-key-not-for-production-use-0123456789")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ.setdefault("EVIDENTIA_VAR_DIR", str(BENCH_DIR.parent / "var" / "bench"))


def setup_django(*, bench_models: bool = True) -> None:
    """What an entry point of the bench does first: the environment
    (``configure_environment``), the bench database created if absent, Django set up,
    the migrations applied and, unless ``bench_models`` is false, the bench's
    zero-latency models registered."""
    configure_environment()
    ensure_database(os.environ["DATABASE_URL"])
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    if bench_models:
        from bench.models import register_bench_models

        register_bench_models()


def require_redis(broker_url: str, benchmark: str) -> None:
    """The benchmarks that start workers measure them on Redis, the production broker."""
    if not broker_url.startswith(("redis://", "rediss://")):
        raise RuntimeError(f"the {benchmark} benchmark needs a Redis broker (CELERY_BROKER_URL)")


def bench_owner(username: str) -> Any:
    """The account a benchmark creates its tasks under (created once)."""
    from django.contrib.auth import get_user_model

    user, _ = get_user_model().objects.get_or_create(username=username)
    return user


def delete_tasks_of(username: str) -> int:
    """Delete the tasks of a benchmark's owner (and what hangs off them); how many."""
    from tasks_app.models import Task

    qs = Task.objects.filter(owner__username=username)
    count = qs.count()
    qs.delete()
    return count


class Process(Protocol):
    """A process a benchmark started (a worker, ``bin/prod``)."""

    def alive(self) -> bool: ...

    def log_tail(self) -> str: ...


def wait_for_tasks(
    task_ids: list[int],
    done_at: Callable[[list[int]], dict[int, datetime]],
    processes: Sequence[Process],
    *,
    timeout: float,
    poll: float,
    what: str,
) -> dict[int, datetime]:
    """Poll ``done_at`` (task id -> when it was done, for the done ones) until every task
    of ``task_ids`` is done; RuntimeError with the processes' logs when ``timeout``
    passes or one of them died first."""
    deadline = time.monotonic() + timeout
    while True:
        close_old_connections()
        done = done_at(task_ids)
        if len(done) == len(task_ids):
            return done
        dead = [p for p in processes if not p.alive()]
        if time.monotonic() > deadline or dead:
            tails = "\n".join(p.log_tail() for p in processes)
            raise RuntimeError(
                f"{len(task_ids) - len(done)} of {len(task_ids)} tasks not {what} "
                f"({len(dead)} of {len(processes)} worker processes dead); worker logs:\n{tails}"
            )
        time.sleep(poll)


@contextmanager
def kept_connection() -> Iterator[None]:
    """This process keeps its database connection through the block, as a web process of
    the production profile keeps its pooled ones. Without it, ``DB_CONN_MAX_AGE=0`` (the
    default) makes every poll's ``close_old_connections`` close it, and the next task
    this process creates opens a new connection inside the measured time."""
    saved = connection.settings_dict["CONN_MAX_AGE"]
    connection.settings_dict["CONN_MAX_AGE"] = None
    connection.close()
    try:
        yield
    finally:
        connection.settings_dict["CONN_MAX_AGE"] = saved
        connection.close()


def cpu_ms_per(before: dict[int, float], after: dict[int, float], count: int) -> float:
    """The CPU seconds the processes spent between two ``procstat.cpu_seconds`` readings,
    per item of ``count``, in ms."""
    return sum(after.get(p, 0.0) - before.get(p, 0.0) for p in after) / count * 1000


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank-interpolated percentile (p in 0..100) of a non-empty list."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    k = (len(ordered) - 1) * p / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def summary_ms(samples_s: list[float]) -> dict[str, float]:
    """p50/p95/mean/min/max in milliseconds of samples given in seconds."""
    ms = [s * 1000.0 for s in samples_s]
    return {
        "n": len(ms),
        "p50_ms": round(percentile(ms, 50), 3),
        "p95_ms": round(percentile(ms, 95), 3),
        "mean_ms": round(statistics.fmean(ms), 3) if ms else float("nan"),
        "min_ms": round(min(ms), 3) if ms else float("nan"),
        "max_ms": round(max(ms), 3) if ms else float("nan"),
    }


def ratio(value: float | None, baseline: float | None) -> float | None:
    if value is None or baseline in (None, 0) or baseline != baseline:  # NaN check
        return None
    return round(value / baseline, 2)


@dataclass
class Figure:
    """One measured figure with the baseline measured in the same run."""

    benchmark: str
    name: str
    value: float
    unit: str
    baseline_name: str = ""
    baseline: float | None = None
    note: str = ""

    @property
    def ratio(self) -> float | None:
        return ratio(self.value, self.baseline)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ratio": self.ratio}


@dataclass
class Target:
    """A stated goal and whether this run met it."""

    benchmark: str
    target: str
    measured: str
    met: bool

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def result(
    *, figures: list[Figure], targets: list[Target], details: dict[str, Any]
) -> dict[str, Any]:
    return {
        "figures": [f.as_dict() for f in figures],
        "targets": [t.as_dict() for t in targets],
        "details": details,
    }


@contextmanager
def stopwatch() -> Iterator[Callable[[], float]]:
    """``with stopwatch() as elapsed: ...; elapsed()`` in seconds (perf_counter)."""
    start = time.perf_counter()
    end: list[float] = []
    yield lambda: (end[0] if end else time.perf_counter()) - start
    end.append(time.perf_counter())


def repeat(fn: Callable[[], Any], times: int) -> list[float]:
    """Wall times in seconds of ``times`` calls of ``fn``."""
    samples = []
    for _ in range(times):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return samples


def machine() -> dict[str, Any]:
    """A short description of this machine, for the results file."""
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem_gb = None
    try:
        with open("/proc/meminfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("MemTotal"):
                    mem_gb = round(int(line.split()[1]) / 1024 / 1024, 1)
                    break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gb": mem_gb,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def fmt(value: float | None, unit: str = "") -> str:
    if value is None or value != value:
        return "-"
    if abs(value) >= 100:
        text = f"{value:,.0f}"
    elif abs(value) >= 10:
        text = f"{value:.1f}"
    else:
        text = f"{value:.2f}"
    return f"{text} {unit}".strip()


def table(rows: list[list[str]], headers: list[str]) -> str:
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    line = "  ".join(h.ljust(widths[i]) for i, h in enumerate(headers))
    out = [line, "  ".join("-" * w for w in widths)]
    for row in rows:
        out.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)))
    return "\n".join(out)


def ensure_database(url: str) -> None:
    """Create the PostgreSQL database of ``url`` if it does not exist."""
    if not url.startswith(("postgres://", "postgresql://")):
        return
    import dj_database_url
    import psycopg
    from psycopg import sql

    db = dj_database_url.parse(url)
    params = {
        "host": db.get("HOST") or "127.0.0.1",
        "port": db.get("PORT") or 5432,
        "user": db.get("USER") or "postgres",
        "password": db.get("PASSWORD") or None,
        "dbname": "postgres",
        "autocommit": True,
    }
    with psycopg.connect(**{k: v for k, v in params.items() if v is not None}) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [db["NAME"]]
        ).fetchone()
        if not exists:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(db["NAME"])))
            print(f"bench: created database {db['NAME']}")


def free_port() -> int:
    """A TCP port on loopback that nothing listens on now (for a server the bench starts)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def backend_pids() -> set[int]:
    """The PostgreSQL server processes of this database's other sessions (their CPU is
    the database's share)."""
    with connection.cursor() as cur:
        cur.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()"
        )
        return {int(row[0]) for row in cur.fetchall()}


class ProdProcesses:
    """``bin/prod`` with some of its process groups, started as its own session (so that
    stopping it stops every gunicorn and celery process under it), its output in
    ``log_path``; the latency and intake benchmarks run the production profile so."""

    def __init__(self, *, log_path: Path, env: dict[str, str]) -> None:
        self.log_path = log_path
        self.env = env
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, groups: list[str]) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("w")
        self.process = subprocess.Popen(
            [str(Path(settings.BASE_DIR) / "bin" / "prod"), *groups],
            cwd=settings.BASE_DIR,
            env=self.env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self) -> str:
        try:
            return self.log_path.read_text()[-3000:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        self._log.close()
