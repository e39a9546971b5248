"""Readiness checks: database, broker, migrations, workers per queue, beat (issue 18).

Each check returns a ``Check`` (name, ok, detail) and never raises. ``/ready``,
``manage.py check_health`` and the operator overview run the same ``run_checks()``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from project.celery import worker_queues

__all__ = ["Check", "run_checks"]


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    duration_ms: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "ok": self.ok,
            "detail": self.detail,
            "duration_ms": self.duration_ms,
        }


def check_database() -> tuple[bool, str]:
    timeout_ms = int(settings.OPS_CHECK_TIMEOUT_SECONDS * 1000)
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # The probe must answer within its own deadline even if the server hangs.
            cursor.execute(f"SET LOCAL statement_timeout = {timeout_ms}")
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return True, f"{connection.vendor} reachable"


def check_migrations() -> tuple[bool, str]:
    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if plan:
        names = ", ".join(f"{m.app_label}.{m.name}" for m, _ in plan[:5])
        more = f" and {len(plan) - 5} more" if len(plan) > 5 else ""
        return False, f"{len(plan)} migration(s) not applied: {names}{more}"
    return True, "all migrations applied"


def check_broker() -> tuple[bool, str]:
    url = settings.CELERY_BROKER_URL
    if url.startswith("filesystem://"):
        folder = Path(settings.CELERY_BROKER_FOLDER) / "queue"
        if folder.is_dir():
            return True, f"filesystem broker folder {folder} present"
        return False, f"filesystem broker folder {folder} missing"
    from kombu import Connection

    timeout = settings.OPS_CHECK_TIMEOUT_SECONDS
    with Connection(
        url,
        connect_timeout=timeout,
        transport_options={"socket_timeout": timeout, "socket_connect_timeout": timeout},
    ) as conn:
        conn.ensure_connection(max_retries=0, timeout=timeout)
        conn.default_channel  # noqa: B018 - opening a channel proves the broker answers
    return True, f"{_safe_url(url)} reachable"


def check_workers() -> tuple[bool, str]:
    from tasks_app.models import ServiceHeartbeat

    cutoff = timezone.now() - timedelta(seconds=settings.OPS_WORKER_MAX_AGE_SECONDS)
    rows = ServiceHeartbeat.objects.filter(
        kind=ServiceHeartbeat.Kind.WORKER, seen_at__gte=cutoff
    ).values_list("name", "queues")
    consumers: dict[str, list[str]] = {q: [] for q in worker_queues()}
    for name, queues in rows:
        for queue in queues or []:
            if queue in consumers:
                consumers[queue].append(name)
    missing = [q for q, names in consumers.items() if not names]
    if missing:
        return False, (
            f"no worker consuming {', '.join(missing)} seen in the last "
            f"{settings.OPS_WORKER_MAX_AGE_SECONDS} s"
        )
    return True, "; ".join(f"{q}: {len(n)} worker(s)" for q, n in consumers.items())


def check_beat() -> tuple[bool, str]:
    from tasks_app.models import ServiceHeartbeat

    row = ServiceHeartbeat.objects.filter(kind=ServiceHeartbeat.Kind.BEAT).first()
    if row is None:
        return False, "beat has never run"
    age = (timezone.now() - row.seen_at).total_seconds()
    if age > settings.OPS_BEAT_MAX_AGE_SECONDS:
        return False, f"beat last ran {age:.0f} s ago (limit {settings.OPS_BEAT_MAX_AGE_SECONDS} s)"
    return True, f"beat last ran {age:.0f} s ago"


def _safe_url(url: str) -> str:
    """The broker URL without its password."""
    from kombu.utils.url import maybe_sanitize_url

    return str(maybe_sanitize_url(url))


CHECKS: tuple[tuple[str, Callable[[], tuple[bool, str]]], ...] = (
    ("database", check_database),
    ("migrations", check_migrations),
    ("broker", check_broker),
    ("workers", check_workers),
    ("beat", check_beat),
)
# Checks that read the database are pointless once it is down.
NEEDS_DATABASE = {"migrations", "workers", "beat"}


def run_checks() -> list[Check]:
    """Every readiness check, in order; a failure names its check and says why."""
    results: list[Check] = []
    database_ok = True
    for name, check in CHECKS:
        if name == "beat" and not settings.OPS_REQUIRE_BEAT:
            continue
        started = time.monotonic()
        if name in NEEDS_DATABASE and not database_ok:
            ok, detail = False, "skipped: the database is unreachable"
        else:
            try:
                ok, detail = check()
            except DatabaseError as exc:
                ok, detail = False, f"{type(exc).__name__}: {_first_line(exc)}"
                connection.close()  # a broken connection must not poison the next request
            except Exception as exc:  # any dependency error is a failed check, never a 500
                ok, detail = False, f"{type(exc).__name__}: {_first_line(exc)}"
        if name == "database":
            database_ok = ok
        results.append(Check(name, ok, detail, int((time.monotonic() - started) * 1000)))
    return results


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "no message"
