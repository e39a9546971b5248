"""The ``postgres`` marker carries its reason, and a test is skipped on SQLite with it."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from tests.conftest import postgres_reason, pytest_collection_modifyitems


class FakeItem:
    nodeid = "tests/test_x.py::test_x"

    def __init__(self, mark: Any) -> None:
        self.mark = mark
        self.added: list[Any] = []

    def get_closest_marker(self, name: str) -> Any:
        return self.mark if name == "postgres" else None

    def add_marker(self, mark: Any) -> None:
        self.added.append(mark)


@pytest.mark.parametrize(
    "mark",
    [pytest.mark.postgres.mark, pytest.mark.postgres(reason=" ").mark],
    ids=["bare", "blank"],
)
def test_a_postgres_mark_without_a_reason_fails_collection(mark: Any) -> None:
    with pytest.raises(pytest.UsageError, match="test_x.*needs reason="):
        pytest_collection_modifyitems(None, [FakeItem(mark)])


def test_the_reason_is_the_keyword_or_first_argument_and_no_mark_has_none() -> None:
    assert postgres_reason(FakeItem(pytest.mark.postgres(reason="GIN index").mark)) == "GIN index"
    assert postgres_reason(FakeItem(pytest.mark.postgres("pg_terminate_backend").mark)) == (
        "pg_terminate_backend"
    )
    assert postgres_reason(FakeItem(None)) is None


def test_on_sqlite_the_skip_says_the_reason_and_on_postgresql_nothing_is_skipped() -> None:
    item, unmarked = FakeItem(pytest.mark.postgres(reason="full-text search").mark), FakeItem(None)
    pytest_collection_modifyitems(None, [item, unmarked])
    assert unmarked.added == []
    if connection.vendor == "postgresql":
        assert item.added == []
    else:
        [skip] = item.added
        assert skip.mark.name == "skip"
        assert skip.mark.kwargs["reason"].startswith("needs PostgreSQL: full-text search (")
