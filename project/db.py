"""Database connection use of long jobs (issue 16)."""

from __future__ import annotations

from django.db import connection


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
