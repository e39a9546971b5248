"""Issue 16: the production profile (``make prod``: Procfile run by honcho) starts web,
a worker per queue group and beat on PostgreSQL and Redis, and runs a task end to end."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.conf import settings
from django.db import connection

from tasks_app.accounts.auth import api_token_create
from tests.factories import UserFactory
from tests.workers import database_url, redis_url, wait_for

PROCESSES = ("web", "attempts", "validation", "webhooks", "maintenance", "beat")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def other_connections() -> int:
    """Sessions on the test database other than this one."""
    with connection.cursor() as cur:
        cur.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()"
        )
        return int(cur.fetchone()[0])


@pytest.mark.postgres(reason="bin/prod runs on PostgreSQL only (pooled connections)")
@pytest.mark.django_db(transaction=True)
def test_make_prod_runs_a_task_end_to_end(tmp_path: Path) -> None:
    """Issue 16: bin/prod on free loopback ports, the test database and a Redis queue
    prefix of its own: every Procfile process starts, a task created over the API is
    answered and validated (awaiting_feedback), and SIGTERM stops every process."""
    redis = redis_url()
    if redis is None:
        pytest.skip("the production profile needs Redis (REDIS_URL)")
    db_url = database_url()
    assert db_url is not None
    user = UserFactory(username="prod-smoke")
    token = api_token_create(user=user, name="smoke")[1]
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": db_url,
        "CELERY_BROKER_URL": redis,
        "CELERY_QUEUE_PREFIX": f"prod-{uuid.uuid4().hex[:8]}.",
        "CELERY_TASK_DEFAULT_QUEUE": f"prod-{uuid.uuid4().hex[:8]}",
        "PORT": str(port),
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "0",
        "SECURE_HSTS_SECONDS": "0",
        "EVIDENTIA_VAR_DIR": str(tmp_path),
        "ATTEMPTS_CONCURRENCY": "8",
        "VALIDATION_CONCURRENCY": "4",
        "WEBHOOKS_CONCURRENCY": "2",
        "DB_POOL_MAX_SIZE": "3",
        "WEB_WORKERS": "1",
        "ATTEMPTS_PROCESSES": "1",
        "VALIDATION_PROCESSES": "1",
        "LOG_LEVEL": "INFO",
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    log_path = tmp_path / "prod.log"
    log = log_path.open("w")
    process = subprocess.Popen(
        [str(Path(settings.BASE_DIR) / "bin" / "prod")],
        cwd=settings.BASE_DIR,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {token}"}
    try:

        def up() -> bool:
            try:
                return httpx.get(f"{base}/api/v1/health", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        assert wait_for(up, timeout=90, interval=0.5), log_path.read_text()[-4000:]
        for name in ("attempts", "validation", "maintenance"):
            assert wait_for(lambda n=name: f"{n}." in _ready(log_path), timeout=60), (
                log_path.read_text()[-4000:]
            )
        created = httpx.post(
            f"{base}/api/v1/tasks",
            json={"request": "What is the annual training budget per employee?"},
            headers=headers,
            timeout=10,
        )
        assert created.status_code == 201, created.text
        task_id = created.json()["id"]

        def settled() -> Any:
            body = httpx.get(f"{base}/api/v1/tasks/{task_id}", headers=headers, timeout=10).json()
            return body if body["status"] not in ("open", "running", "validating") else None

        body = wait_for(settled, timeout=90, interval=0.5)
        assert body is not None, log_path.read_text()[-4000:]
        assert body["status"] in ("awaiting_feedback", "needs_review"), body
        text = log_path.read_text()
        for name in PROCESSES:
            assert f"{name}." in text or f"{name} " in text, f"no output from {name}"
        # The attempt ran on the attempts worker and the verdict on the validation worker.
        assert "tasks_app.run_attempt" in _lines_of(text, "attempts")
        assert "evidence_app.validate_attempt" in _lines_of(text, "validation")
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        log.close()
        # The profile's connections are gone before the test database is flushed.
        wait_for(lambda: other_connections() == 0, timeout=15)
    assert process.returncode is not None


def _ready(log_path: Path) -> str:
    return "\n".join(
        line for line in log_path.read_text().splitlines() if " ready." in line or "ready" in line
    )


def _lines_of(text: str, process: str) -> str:
    """honcho prefixes each line with the process name and its index: "attempts.1 |"."""
    return "\n".join(line for line in text.splitlines() if f" {process}.1 " in line[:40])
