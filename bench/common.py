"""Shared helpers: percentiles, figures with their baseline and ratio, targets, tables."""

from __future__ import annotations

import math
import os
import platform
import signal
import socket
import statistics
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection


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
