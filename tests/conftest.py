"""Shared fixtures. Tests marked ``postgres`` are skipped, with a reason, on SQLite."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.db import connection

from tests import factories


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    if connection.vendor == "postgresql":
        return
    skip = pytest.mark.skip(
        reason=f"needs PostgreSQL (row locks / full-text search); running on {connection.vendor}. "
        "Set DATABASE_URL=postgres://... to run it."
    )
    for item in items:
        if "postgres" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _isolated_broker(settings: Any, tmp_path_factory: Any) -> None:
    """Jobs enqueued by tests go to a throwaway filesystem broker unless a test
    explicitly targets a real broker."""
    settings.CELERY_BROKER_FOLDER = tmp_path_factory.getbasetemp() / "broker"


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
