"""Database use of long jobs and hot paths (issues 16, 17): giving a pooled connection
back during a long wait, keeping a claim alive from a thread, queries compiled once."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from django.db import InterfaceError, OperationalError, connection, connections, router
from django.db.models import Model, QuerySet

from project.errors import first_line


def close_quietly() -> None:
    """Close this thread's connection; a connection already broken may fail to close,
    and it is gone anyway."""
    try:
        connection.close()
    except Exception:
        pass


class Keeper:
    """Keeps a claim alive from a thread while a long step runs (a lease's heartbeat, a
    validation claim): calls ``keep()`` every ``interval`` seconds until it
    returns False (the claim is no longer ours) or the ``with`` block ends. Between calls
    the thread gives its connection back (pooled) and closes it at the end. A dropped
    database connection is one WARNING line per outage, "``subject``: db_lost: ``what``
    lost its database connection", then retried every interval; any other error is
    logged with its traceback and retried."""

    def __init__(
        self,
        keep: Callable[[], bool],
        *,
        interval: float,
        name: str,
        logger: logging.Logger,
        subject: str,
        what: str,
    ) -> None:
        self.keep = keep
        self.interval = interval
        self.log = logger
        self.subject = subject
        self.what = what
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def __enter__(self) -> Keeper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        lost = False
        try:
            while not self._stop.wait(self.interval):
                try:
                    if not self.keep():
                        return
                    release_connection()
                except (OperationalError, InterfaceError) as exc:
                    if not lost:
                        self.log.warning(
                            "%s: db_lost: %s lost its database connection (%s); retrying "
                            "every %.0f s",
                            self.subject,
                            self.what,
                            first_line(exc),
                            self.interval,
                        )
                    lost = True
                    close_quietly()
                    continue
                except Exception:
                    self.log.warning("%s: %s failed", self.subject, self.what, exc_info=True)
                    continue
                if lost:
                    self.log.info("%s: %s reached the database again", self.subject, self.what)
                    lost = False
        finally:
            close_quietly()


def release_connection() -> None:
    """Give this thread's database connection back before a long wait (a model call),
    when connections are pooled: a worker running 200 jobs at once then needs only as
    many connections as are in use at one moment, not one per thread. Inside a
    transaction, or without a pool, it does nothing (the connection is kept)."""
    if connection.vendor != "postgresql" or connection.in_atomic_block:
        return
    if not connection.settings_dict.get("OPTIONS", {}).get("pool"):
        return
    connection.close()


# Values to mark the parameters of a ``Prepared`` query: each must differ from the
# query's constants, and integers must fit every integer column (Django turns a lookup
# of an out-of-range integer into "no rows" before any SQL exists).
MARKER_ID = 2_000_000_011
MARKER_INDEX = 2_000_000_027
MARKER_TEXT = "\x00marker\x00"
MARKER_TIME = datetime(1900, 1, 1, 0, 0, 7, tzinfo=UTC)


def _forms(marker: Any, ops: Any) -> list[tuple[Any, Callable[[Any], Any] | None]]:
    """The forms a marker can take among a compiled query's parameters, each with the
    function that puts a real value in that form (None: the value as it is)."""
    forms: list[tuple[Any, Callable[[Any], Any] | None]] = [(marker, None)]
    if isinstance(marker, datetime):
        forms.append((ops.adapt_datetimefield_value(marker), ops.adapt_datetimefield_value))
    return forms


class Prepared:
    """The SQL of a queryset compiled once, run again with new values.

    Django compiles a queryset on every evaluation: resolving the lookups, joins and
    expressions of a hot query costs more worker CPU than the database spends running
    it. ``Prepared`` compiles a ``values_list`` queryset built with *markers* (the
    ``MARKER_*`` values) once, remembers where each marker landed among the parameters,
    and runs the same SQL with the real values, converting each column as the ORM does
    (JSON parsed). The SQL is still the ORM's, so it follows the models and their
    indexes. Compile it once per process (``functools.cache``), after settings load.
    """

    def __init__(self, queryset: QuerySet[Any], **markers: Any) -> None:
        if len({(type(m), m) for m in markers.values()}) < len(markers):
            raise ValueError("each marker needs a value of its own")
        compiler = queryset.query.get_compiler(queryset.db)
        sql, params = compiler.as_sql()
        self.sql = sql
        self.params = list(params)
        self.slots: dict[int, str] = {}
        # The backend may hand a value on in another form: psycopg wraps an int for an
        # int column (Int4), SQLite turns a datetime into text. The real value takes the
        # same path, through the same function.
        self.adapters: dict[int, Callable[[Any], Any]] = {}
        ops = connections[queryset.db].ops
        for i, value in enumerate(self.params):
            for name, marker in markers.items():
                for form, adapt in _forms(marker, ops):
                    if isinstance(value, type(form)) and value == form:
                        self.slots[i] = name
                        if adapt is not None:
                            self.adapters[i] = adapt
                        elif type(value) is not type(form):
                            self.adapters[i] = type(value)
        missing = set(markers) - set(self.slots.values())
        if missing:
            raise ValueError(f"markers not among the query's parameters: {sorted(missing)}")
        self.alias = queryset.db
        self.converters = compiler.get_converters([col for col, _, _ in compiler.select])

    def rows(self, **values: Any) -> list[tuple[Any, ...]]:
        """The rows for ``values`` (one per marker), as ``values_list`` returns them."""
        if values.keys() != set(self.slots.values()):
            raise TypeError(f"expected values for {sorted(set(self.slots.values()))}")
        params = list(self.params)
        for i, name in self.slots.items():
            adapt = self.adapters.get(i)
            params[i] = adapt(values[name]) if adapt else values[name]
        conn = connections[self.alias]
        with conn.cursor() as cur:
            cur.execute(self.sql, params)
            fetched = cur.fetchall()
        if not self.converters:
            return fetched
        rows = []
        for fetched_row in fetched:
            row = list(fetched_row)
            for i, (functions, expression) in self.converters.items():
                for convert in functions:
                    row[i] = convert(row[i], expression, conn)
            rows.append(tuple(row))
        return rows


@functools.cache
def _insert_sql(model: type[Model], alias: str) -> tuple[list[Any], str] | None:
    """(fields, ``INSERT ... RETURNING pk``) of a model with an auto primary key, built
    once; None when a field needs its own placeholder (then ``save()`` does it)."""
    conn = connections[alias]
    meta = model._meta
    fields: list[Any] = [f for f in meta.concrete_fields if not f.primary_key]
    if any(hasattr(f, "get_placeholder") for f in fields):
        return None
    quote = conn.ops.quote_name
    pk_column = meta.pk.column if meta.pk is not None else None
    if pk_column is None:
        return None
    sql = (
        f"INSERT INTO {quote(meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) "
        f"VALUES ({', '.join(['%s'] * len(fields))}) RETURNING {quote(pk_column)}"
    )
    return fields, sql


def insert_new(obj: Model, *, also: tuple[str, list[Any]] | None = None) -> Any:
    """``obj.save()`` of a new row, from SQL built once per model (Django
    compiles the INSERT of a 40-column row on every save). Only for models without
    ``save()`` overrides or save signals; defaults and ``auto_now_add`` are filled as
    ``save()`` fills them; a value that is an expression falls back to ``save()``.
    ``also``, a scalar SQL expression (a sub-``SELECT`` of another table) with its
    parameters, is computed by the same statement and returned: a read that costs no
    statement of its own. None without it."""
    alias = router.db_for_write(type(obj), instance=obj)
    built = _insert_sql(type(obj), alias)
    values = None if built is None else [f.pre_save(obj, add=True) for f in built[0]]
    conn = connections[alias]
    if built is None or values is None or any(hasattr(v, "resolve_expression") for v in values):
        obj.save(force_insert=True, using=alias)
        if also is None:
            return None
        with conn.cursor() as cur:
            cur.execute(f"SELECT {also[0]}", also[1])
            found = cur.fetchone()
        return None if found is None else found[0]
    fields, sql = built
    params = [f.get_db_prep_save(v, conn) for f, v in zip(fields, values, strict=True)]
    if also is not None:
        sql = f"{sql}, {also[0]}"
        params += also[1]
    with conn.cursor() as cur:
        cur.execute(sql, params)
        row = cur.fetchone()
    assert row is not None
    obj.pk = row[0]
    obj._state.adding = False
    obj._state.db = alias
    return None if also is None else row[1]
