"""Drill 7: load. 50 concurrent API clients create and poll tasks for 60 s against
gunicorn (gthread workers, production settings, loopback only) on the test database:
zero 5xx, zero transport errors; p50/p95/p99 latency and throughput reported.

Too slow for CI: marked ``drill_slow`` (``make drills`` runs it; ``make test`` leaves it
out). ``DRILL_LOAD_SECONDS`` / ``DRILL_LOAD_CLIENTS`` shorten or shrink it.
"""

from __future__ import annotations

import os
import random
import secrets
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

import httpx
import pytest
from django.conf import settings

from tasks_app.accounts.auth import api_token_create
from tasks_app.models import Task
from tests.drills.support import database_url, report, wait_for
from tests.factories import UserFactory

pytestmark = [
    pytest.mark.drill,
    pytest.mark.drill_slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(300),
]

SECONDS = float(os.environ.get("DRILL_LOAD_SECONDS", "60"))
CLIENTS = int(os.environ.get("DRILL_LOAD_CLIENTS", "50"))
MAX_REQUESTS_PER_CLIENT = 5000  # the loop is bounded even if the clock misbehaves


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_gunicorn(tmp_path: Path, db_url: str, port: int, log: IO[str]) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "project.settings",
        "DATABASE_URL": db_url,
        "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1",
        # Plain http on loopback: no redirect to https, no HSTS, cookies not needed.
        "SECURE_SSL_REDIRECT": "0",
        "SECURE_HSTS_SECONDS": "0",
        "EVIDENTIA_VAR_DIR": str(tmp_path),
        "CELERY_BROKER_URL": "filesystem://",
        "CELERY_BROKER_FOLDER": str(tmp_path / "broker"),
        "LOG_LEVEL": "WARNING",
    }
    return subprocess.Popen(
        [
            str(Path(sys.executable).with_name("gunicorn")),
            "project.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "3",
            "--worker-class",
            "gthread",
            "--threads",
            "8",
            "--timeout",
            "60",
            "--log-level",
            "warning",
        ],
        cwd=settings.BASE_DIR,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def client_loop(
    base: str, token: str, deadline: float, samples: list[tuple[str, int, float]], seed: int
) -> None:
    rng = random.Random(seed)
    mine: list[int] = []
    local: list[tuple[str, int, float]] = []
    with httpx.Client(
        base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=30
    ) as client:
        for _ in range(MAX_REQUESTS_PER_CLIENT):
            if time.monotonic() >= deadline:
                break
            roll = rng.random()
            started = time.monotonic()
            try:
                if roll < 0.2 or not mine:
                    kind = "create"
                    response = client.post(
                        "/api/v1/tasks", json={"request": f"Load drill question {rng.random()}"}
                    )
                    if response.status_code == 201:
                        mine.append(response.json()["id"])
                elif roll < 0.8:
                    kind = "poll"
                    response = client.get(f"/api/v1/tasks/{rng.choice(mine)}")
                else:
                    kind = "list"
                    response = client.get("/api/v1/tasks", params={"limit": 20})
                status = response.status_code
            except httpx.HTTPError:
                kind, status = "error", 0
            local.append((kind, status, time.monotonic() - started))
    samples.extend(local)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def test_fifty_clients_for_sixty_seconds_get_no_5xx(tmp_path: Path) -> None:
    """A1/A3 under load: 50 clients creating and polling tasks for 60 s against gunicorn
    get no 5xx and no transport error."""
    db_url = database_url()
    assert db_url is not None
    users = [UserFactory(username=f"load{i:02d}") for i in range(10)]
    tokens = [api_token_create(user=u, name="load")[1] for u in users]
    port = free_port()
    log = (tmp_path / "gunicorn.log").open("w")
    server = start_gunicorn(tmp_path, db_url, port, log)
    base = f"http://127.0.0.1:{port}"
    try:

        def up() -> bool:
            try:
                return httpx.get(f"{base}/api/v1/health", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        assert wait_for(up, timeout=30, interval=0.3), (tmp_path / "gunicorn.log").read_text()
        samples: list[tuple[str, int, float]] = []
        deadline = time.monotonic() + SECONDS
        threads = [
            threading.Thread(
                target=client_loop, args=(base, tokens[i % len(tokens)], deadline, samples, i)
            )
            for i in range(CLIENTS)
        ]
        started = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=SECONDS + 60)
        elapsed = time.monotonic() - started
    finally:
        server.terminate()
        server.wait(timeout=20)
        log.close()
    server_log = (tmp_path / "gunicorn.log").read_text()
    statuses: dict[int, int] = {}
    for _, status, _ in samples:
        statuses[status] = statuses.get(status, 0) + 1
    errors = statuses.get(0, 0)
    five_xx = sum(n for s, n in statuses.items() if s >= 500)
    latencies = [d for _, s, d in samples if s]
    assert samples and five_xx == 0 and errors == 0, (statuses, server_log[-3000:])
    assert set(statuses) <= {200, 201}, statuses
    created = Task.objects.count()
    p50, p95, p99 = (percentile(latencies, f) * 1000 for f in (0.5, 0.95, 0.99))
    by_kind = {
        kind: statistics.median([d for k, _, d in samples if k == kind]) * 1000
        for kind in ("create", "poll", "list")
        if any(k == kind for k, _, _ in samples)
    }
    report(
        "load",
        f"{CLIENTS} clients x {elapsed:.0f}s on gunicorn (3 workers x 8 threads): "
        f"{len(samples)} requests ({len(samples) / elapsed:.0f}/s), {created} tasks created, "
        f"0 5xx, 0 errors; latency p50 {p50:.0f} ms, p95 {p95:.0f} ms, p99 {p99:.0f} ms "
        f"(median create {by_kind.get('create', 0):.0f} / poll {by_kind.get('poll', 0):.0f} / "
        f"list {by_kind.get('list', 0):.0f} ms)",
    )
