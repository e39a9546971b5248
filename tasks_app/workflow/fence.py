"""Writes fenced by an attempt's lease: a worker whose lease was taken
over (a takeover, the reaper) can no longer write its results. ``Fence`` names the lease;
``fenced_insert`` and ``fenced_update`` write in one statement only while the lease is
held (PostgreSQL), ``Fence.write`` locks the task row around other writes."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections, models, transaction
from django.utils import timezone

from project.dbturn import db_turn
from tasks_app.workflow.models import Task
from tasks_app.workflow.states import TaskStatus


class LeaseLost(Exception):
    """The attempt's lease was taken over or the task left ``running`` (abandoned):
    stop at once and write nothing more."""


@dataclass(frozen=True)
class Fence:
    """The lease of one attempt: task id and the token written when it was claimed."""

    task_id: int
    lease_token: str

    def beat(self) -> None:
        """Refresh the heartbeat; raise LeaseLost if the lease is gone or the task is no
        longer running (abandoned). One conditional UPDATE: check and beat together."""
        with db_turn():
            updated = Task.objects.filter(
                pk=self.task_id, lease_token=self.lease_token, status=TaskStatus.RUNNING
            ).update(heartbeat_at=timezone.now())
        if updated != 1:
            raise LeaseLost(f"task {self.task_id}: lease lost or task no longer running")

    @contextmanager
    def write(self) -> Iterator[None]:
        """A transaction in which the lease is held: the task row is locked, so the lease
        cannot be taken over between the check and the write."""
        with db_turn(), transaction.atomic():
            held = (
                Task.objects.select_for_update()
                .filter(pk=self.task_id, lease_token=self.lease_token, status=TaskStatus.RUNNING)
                .exists()
            )
            if not held:
                raise LeaseLost(f"task {self.task_id}: lease lost; write discarded")
            yield


@contextmanager
def unfenced_write() -> Iterator[None]:
    with db_turn(), transaction.atomic():
        yield


# Heartbeat and fence in one: the UPDATE locks the task row and returns it only while
# the lease is held and the task runs.
_HELD = (
    'WITH held AS (UPDATE "tasks_app_task" SET "heartbeat_at" = %s WHERE "id" = %s '
    'AND "lease_token" = %s AND "status" = %s RETURNING "id")'
)


def _held_params(fence: Fence) -> list[Any]:
    return [timezone.now(), fence.task_id, fence.lease_token, TaskStatus.RUNNING]


@functools.cache
def _columns(model: type[models.Model], names: tuple[str, ...]) -> tuple[list[Any], str, str]:
    """(fields, quoted column list, one VALUES row with typed placeholders), per model
    and column set: computed once per process."""
    fields: list[Any] = [model._meta.get_field(name) for name in names]
    quote = connection.ops.quote_name
    columns = ", ".join(quote(f.column) for f in fields)
    row_sql = "(" + ", ".join(f"%s::{f.db_type(connection)}" for f in fields) + ")"
    return fields, columns, row_sql


def _insert_select(model: type[models.Model], rows: list[dict[str, Any]]) -> tuple[str, list[Any]]:
    """``INSERT INTO t (cols) SELECT ... FROM (VALUES ...) WHERE EXISTS (held)``, each
    value cast to its column's type (parameters would otherwise arrive untyped)."""
    names = tuple(rows[0])
    fields, columns, row_sql = _columns(model, names)
    # This thread's connection itself, not the ``connection`` proxy: every value's
    # preparation reads it, a proxy lookup each time (issue 48).
    conn = connections[DEFAULT_DB_ALIAS]
    params = [
        f.get_db_prep_save(row[name], conn)
        for row in rows
        for name, f in zip(names, fields, strict=True)
    ]
    sql = (
        f"INSERT INTO {connection.ops.quote_name(model._meta.db_table)} ({columns}) "
        "SELECT * FROM (VALUES "
        + ", ".join([row_sql] * len(rows))
        + ') AS v WHERE EXISTS (SELECT 1 FROM held) RETURNING "id"'
    )
    return sql, params


def fenced_insert(
    fence: Fence, inserts: list[tuple[type[models.Model], list[dict[str, Any]]]]
) -> int:
    """Insert every row of ``inserts`` in one statement, fenced by the lease and
    refreshing its heartbeat; returns the id of the last table's first row. Raises
    LeaseLost (nothing written) when the lease is gone or the task no longer runs."""
    params = _held_params(fence)
    ctes: list[str] = []
    last = ""
    for i, (model, rows) in enumerate(inserts):
        sql, values = _insert_select(model, rows)
        params += values
        if i < len(inserts) - 1:
            ctes.append(f", w{i} AS ({sql})")
        else:
            last = sql
    with connection.cursor() as cur:
        cur.execute(_HELD + "".join(ctes) + " " + last, params)
        returned = cur.fetchall()
    if not returned:
        raise LeaseLost(f"task {fence.task_id}: lease lost; write discarded")
    return int(returned[0][0])


def fenced_insert_parent(
    fence: Fence,
    parent: tuple[type[models.Model], dict[str, Any]],
    children: tuple[type[models.Model], list[dict[str, Any]]],
    *,
    fk: str,
) -> int:
    """Insert one ``parent`` row and the ``children`` rows whose ``fk`` is that new row,
    in one statement fenced like ``fenced_insert`` (a run and its first messages: one
    statement, not two, issue 48); returns the parent's id. Raises LeaseLost (nothing
    written) when the lease is gone or the task no longer runs."""
    parent_model, parent_row = parent
    child_model, child_rows = children
    parent_sql, params = _insert_select(parent_model, [parent_row])
    names = tuple(child_rows[0])
    fields, columns, row_sql = _columns(child_model, names)
    params = _held_params(fence) + params
    conn = connections[DEFAULT_DB_ALIAS]
    params += [
        f.get_db_prep_save(row[name], conn)
        for row in child_rows
        for name, f in zip(names, fields, strict=True)
    ]
    quote = connection.ops.quote_name
    fk_field: Any = child_model._meta.get_field(fk)
    fk_column = quote(fk_field.column)
    sql = (
        f"{_HELD}, parent AS ({parent_sql}) "
        f"INSERT INTO {quote(child_model._meta.db_table)} ({fk_column}, {columns}) "
        'SELECT parent."id", v.* FROM (VALUES '
        + ", ".join([row_sql] * len(child_rows))
        + f") AS v CROSS JOIN parent RETURNING {fk_column}"
    )
    with connection.cursor() as cur:
        cur.execute(sql, params)
        returned = cur.fetchall()
    if not returned:
        raise LeaseLost(f"task {fence.task_id}: lease lost; write discarded")
    return int(returned[0][0])


def fenced_update(fence: Fence, model: type[models.Model], pk: int, values: dict[str, Any]) -> None:
    """``UPDATE`` one row in one statement, fenced by the lease like ``fenced_insert``."""
    quote = connection.ops.quote_name
    fields: list[Any] = [model._meta.get_field(name) for name in values]
    assignments = ", ".join(f"{quote(f.column)} = %s::{f.db_type(connection)}" for f in fields)
    conn = connections[DEFAULT_DB_ALIAS]
    params = _held_params(fence) + [f.get_db_prep_save(values[f.name], conn) for f in fields]
    with connection.cursor() as cur:
        cur.execute(
            f"{_HELD} UPDATE {quote(model._meta.db_table)} SET {assignments} "
            'WHERE "id" = %s AND EXISTS (SELECT 1 FROM held) RETURNING "id"',
            [*params, pk],
        )
        returned = cur.fetchall()
    if not returned:
        raise LeaseLost(f"task {fence.task_id}: lease lost; write discarded")
