"""Shared fixtures. A test marked ``postgres(reason=...)`` needs what only PostgreSQL does;
on SQLite it is skipped with that reason."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.db import connection

from tests import factories


def postgres_reason(item: Any) -> str | None:
    """What SQLite cannot do that the test needs: ``reason=`` (or the first argument) of
    its ``postgres`` marker; None when it has none. A marker without a reason is a usage
    error, on both backends, so no test is skipped without saying why."""
    marker = item.get_closest_marker("postgres")
    if marker is None:
        return None
    reason = marker.kwargs.get("reason", marker.args[0] if marker.args else "")
    if not isinstance(reason, str) or not reason.strip():
        raise pytest.UsageError(
            f"{item.nodeid}: @pytest.mark.postgres needs reason=..., what SQLite cannot do "
            "that the test needs (e.g. full-text search, pg_terminate_backend)"
        )
    return reason.strip()


# The browser tests' Chromium (tests/ui/test_browser.py); CI installs it.
CHROMIUM = "/usr/bin/chromium"


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    chromium = Path(CHROMIUM).exists()
    for item in items:
        if not chromium and item.get_closest_marker("browser") is not None:
            item.add_marker(
                pytest.mark.skip(
                    reason=f"browser tests need the system Chromium at {CHROMIUM} "
                    "(apt-get install chromium)"
                )
            )
        reason = postgres_reason(item)
        if reason is not None and connection.vendor != "postgresql":
            item.add_marker(
                pytest.mark.skip(
                    reason=f"needs PostgreSQL: {reason} (running on {connection.vendor}; "
                    "set DATABASE_URL=postgres://... to run it)"
                )
            )


@pytest.fixture(scope="session")
def django_db_modify_db_settings(
    django_db_modify_db_settings_parallel_suffix: None, tmp_path_factory: Any
) -> None:
    """On SQLite the test database is a file in this run's temporary folder, not Django's
    default in-memory database: a worker process started by a test shares it as ``make
    run``'s worker shares ``var/evidentia.sqlite3``, and threads get their own connections
    with the locking of a real SQLite file (WAL, one writer at a time). An explicit
    ``TEST_DATABASE_NAME`` still wins."""
    from django.conf import settings

    for db in settings.DATABASES.values():
        if db["ENGINE"] == "django.db.backends.sqlite3" and not db["TEST"].get("NAME"):
            db["TEST"]["NAME"] = str(tmp_path_factory.mktemp("db") / "test.sqlite3")


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True, scope="session")
def _isolated_broker(tmp_path_factory: Any) -> Iterator[Path]:
    """Jobs the code under test enqueues (``delay_on_commit``) go to a throwaway
    filesystem broker, never to the developer's ``var/broker`` or to the Redis that CI
    and the real-worker tests share; a test that needs a worker sends through its own app
    (``tests.workers.sender_app``). Celery connects lazily, so re-pointing the app before
    the first test is enough. Celery prefers the ``CELERY_BROKER_URL`` environment
    variable to every setting but the read/write URLs, so those are what change; the
    environment stays as it is for the sender apps and worker processes (issue 11)."""
    from django.test.utils import override_settings

    from project.celery import app, configure

    folder = tmp_path_factory.mktemp("broker")
    with override_settings(CELERY_BROKER_URL="filesystem://", CELERY_BROKER_FOLDER=folder):
        app.conf.broker_read_url = app.conf.broker_write_url = "filesystem://"
        configure(app)
        try:
            yield folder
        finally:
            app.conf.broker_read_url = app.conf.broker_write_url = None


@pytest.fixture(autouse=True)
def _project_celery_app_is_current() -> None:
    """``shared_task`` jobs resolve to Celery's *current* app: a test (or the bench code
    it runs) that builds another app must not leave that app current, or every job sent
    after it goes to that app's broker instead of the test broker (issue 11)."""
    from project.celery import app

    app.set_current()


@pytest.fixture(autouse=True)
def _fresh_metric_tallies() -> None:
    """/metrics keeps running totals by row id per process. SQLite hands out the ids of
    rows an earlier test rolled back again, so a collector that saw them would skip this
    test's rows: each test starts with totals read from its own database."""
    from project.metrics import collector

    collector.reset()


@pytest.fixture
def requester(db: Any) -> Any:
    return factories.UserFactory(username="alice")


@pytest.fixture
def other_requester(db: Any) -> Any:
    return factories.UserFactory(username="bob")


# get_or_create: a transactional test (e.g. the live_server browser tests) flushes every
# table, including the groups that migration 0002 created, for the tests after it.
@pytest.fixture
def reviewer(db: Any) -> Any:
    user = factories.UserFactory(username="rita", is_staff=True)
    user.groups.add(Group.objects.get_or_create(name="reviewers")[0])
    return user


@pytest.fixture
def operator(db: Any) -> Any:
    user = factories.UserFactory(username="otto", is_staff=True)
    user.groups.add(Group.objects.get_or_create(name="operators")[0])
    return user


@pytest.fixture(autouse=True)
def decisions_apply_at_once(settings: Any) -> None:
    """The tests written before the undo window (issue 26) expect a decision to apply at
    once; the tests of the window set ``DECISION_UNDO_SECONDS`` themselves."""
    settings.DECISION_UNDO_SECONDS = 0


@pytest.fixture(autouse=True)
def no_random_audits(settings: Any) -> None:
    """No verdict is drawn for an audit unless a test sets a rate (issue 27): a random
    draw would make the tests' statement counts and queues differ from run to run."""
    settings.AUDIT_RATE = 0.0
    settings.AUDIT_REJECT_RATE = 0.0
    settings.VALIDATOR_SECOND_MODEL = ""
