"""Issue 35: ToolEvidence's table takes its app's name (tasks_app_toolevidence, was
evidence_app_toolevidence) by a reversible migration with no data loss: the rows written
before are read, value for value, after the migration is reversed and after it is applied
again; the model reads them through the ORM at the end."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tasks_app.models import ToolEvidence
from tests.factories import RunFactory, ToolEvidenceFactory

BEFORE = [("tasks_app", "0021_audit_webhook_events")]
OLD, NEW = "evidence_app_toolevidence", "tasks_app_toolevidence"


def _migrate(target: list[tuple[str, str]] | None) -> None:
    """Migrate to ``target``, or (None) to the latest migration of every app: reversing
    0022 also reverses what came after it, and the tests that run next on this database
    need all of it back."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target if target is not None else executor.loader.graph.leaf_nodes())


def _rows(table: str) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, run_id, task_id, sequence, tool_name, content, content_sha256 "
            f"FROM {connection.ops.quote_name(table)} ORDER BY id"
        )
        return list(cursor.fetchall())


@pytest.mark.django_db(transaction=True)
def test_the_table_rename_keeps_every_row_forward_and_backward() -> None:
    """Issue 35: reversed, the rows sit in evidence_app_toolevidence; applied again, in
    tasks_app_toolevidence, the same rows, and the model reads them."""
    run = RunFactory()
    for text in ("first result", "second result", "a third, with ünïcode"):
        ToolEvidenceFactory(run=run, content=text)
    rows = _rows(NEW)
    assert len(rows) == 3

    _migrate(BEFORE)
    try:
        tables = set(connection.introspection.table_names())
        assert OLD in tables and NEW not in tables
        assert _rows(OLD) == rows
    finally:
        _migrate(None)

    tables = set(connection.introspection.table_names())
    assert NEW in tables and OLD not in tables
    assert _rows(NEW) == rows
    assert sorted(ToolEvidence.objects.values_list("content", flat=True)) == [
        "a third, with ünïcode",
        "first result",
        "second result",
    ]
