"""Taking turns on SQLite (the embedded default and the test database).

SQLite allows one writer at a time, and its in-memory test database shares one cache
between threads, where a reader can even be refused while another thread writes. Team
threads and the heartbeat therefore take turns on the database through one lock when
the backend is SQLite; model calls and HTTP fetches still overlap. On PostgreSQL this
is a no-op.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection

_sqlite_lock = threading.RLock()


@contextmanager
def db_turn() -> Iterator[None]:
    if connection.vendor == "sqlite":
        with _sqlite_lock:
            yield
    else:
        yield
