"""Readiness checks: the database, migrations and broker here; the apps
register theirs (tasks_app: workers per queue, beat) in ``AppConfig.ready``.

Each check returns a ``Check`` (name, ok, detail) and never raises. ``/ready``,
``manage.py check_health`` and the operator overview run the same ``run_checks()``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.migrations.executor import MigrationExecutor
from kombu import Connection
from kombu.utils.url import maybe_sanitize_url

__all__ = ["Check", "register_check", "run_checks"]


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

    timeout = settings.OPS_CHECK_TIMEOUT_SECONDS
    with Connection(
        url,
        connect_timeout=timeout,
        transport_options={"socket_timeout": timeout, "socket_connect_timeout": timeout},
    ) as conn:
        conn.ensure_connection(max_retries=0, timeout=timeout)
        conn.default_channel  # noqa: B018 - opening a channel proves the broker answers
    return True, f"{_safe_url(url)} reachable"


def _safe_url(url: str) -> str:
    """The broker URL without its password."""

    return str(maybe_sanitize_url(url))


@dataclass(frozen=True)
class _Registered:
    check: Callable[[], tuple[bool, str]]
    needs_database: bool
    when: Callable[[], bool]


# The checks of this module; the apps add theirs (workers, beat) in AppConfig.ready.
_checks: dict[str, _Registered] = {}


def register_check(
    name: str,
    check: Callable[[], tuple[bool, str]],
    *,
    needs_database: bool = True,
    when: Callable[[], bool] = lambda: True,
) -> None:
    """Add (or replace, by name) a readiness check, run after those registered before
    it; one that ``needs_database`` is skipped as failed while the database is down, one
    whose ``when`` says False is left out."""
    _checks[name] = _Registered(check, needs_database, when)


register_check("database", check_database, needs_database=False)
register_check("migrations", check_migrations)
register_check("broker", check_broker, needs_database=False)


def run_checks() -> list[Check]:
    """Every readiness check, in order; a failure names its check and says why."""
    results: list[Check] = []
    database_ok = True
    for name, registered in list(_checks.items()):
        if not registered.when():
            continue
        started = time.monotonic()
        if registered.needs_database and not database_ok:
            ok, detail = False, "skipped: the database is unreachable"
        else:
            try:
                ok, detail = registered.check()
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
