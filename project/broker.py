"""What the broker holds: the ids of jobs still queued or delivered and not yet
acknowledged.

The reaper re-sends a task's job only when the broker no longer holds the id it
recorded, so a job that merely waits behind a backlog is never sent twice. Jobs are
acknowledged late (``task_acks_late``), so a job a worker is running stays in the Redis
transport's ``unacked`` hash until it finishes: "held" covers queued, reserved and
running. The filesystem transport (``make run``'s default) keeps queued jobs as files
and forgets a job once a worker fetched it; other transports cannot be inspected here
(None: the caller treats every job as lost, and duplicates stay harmless).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from project.celery import app
from project.queues import all_queue_names

log = logging.getLogger(__name__)


def _job_id(message: Any) -> str | None:
    """The Celery job id in a kombu message envelope (a dict or its JSON)."""
    if isinstance(message, bytes | str):
        try:
            message = json.loads(message)
        except ValueError:
            return None
    if isinstance(message, list) and message:  # unacked entries: [message, exchange, key]
        message = message[0]
    if not isinstance(message, dict):
        return None
    headers = message.get("headers") or {}
    return headers.get("id") or (message.get("properties") or {}).get("correlation_id")


@dataclass(frozen=True)
class Held:
    """What the broker holds: ids of queued jobs, and of delivered, unacknowledged jobs
    with the time (epoch seconds) each was delivered, when the transport records it."""

    queued: set[str] = field(default_factory=set)
    unacked: dict[str, float | None] = field(default_factory=dict)

    def ids(self) -> set[str]:
        return self.queued | set(self.unacked)


def held_jobs(queues: list[str] | None = None) -> Held | None:
    """The jobs the broker holds in ``queues`` (default: all of ours) plus every
    delivered, unacknowledged job; None when the broker cannot be inspected."""

    names = queues if queues is not None else all_queue_names()
    url = str(app.conf.broker_read_url or app.conf.broker_url or "")
    try:
        if url.startswith(("redis://", "rediss://")):
            return _redis_held(names)
        if url.startswith("filesystem://"):
            return Held(queued=_filesystem_held(names))
    except Exception as exc:  # the broker is down: nothing can be told apart
        log.warning("cannot inspect the broker (%s); treating queued jobs as lost", exc)
        return None
    return None


def held_job_ids(queues: list[str] | None = None) -> set[str] | None:
    """Ids of every job ``held_jobs`` reports (queued or unacknowledged)."""
    held = held_jobs(queues)
    return None if held is None else held.ids()


def _redis_held(queues: list[str]) -> Held:

    held = Held()
    with app.connection_for_read() as conn:
        channel: Any = conn.default_channel
        client = channel.client
        keys = [channel._q_for_pri(q, pri) for q in queues for pri in channel.priority_steps]
        pipe = client.pipeline(transaction=False)
        for key in keys:
            pipe.lrange(key, 0, -1)
        pipe.hgetall(channel.unacked_key)
        pipe.zrange(channel.unacked_index_key, 0, -1, withscores=True)
        *lists, unacked, index = pipe.execute()
        for batch in lists:
            for raw in batch:
                job_id = _job_id(raw)
                if job_id:
                    held.queued.add(job_id)
        delivered = {_text(tag): float(score) for tag, score in index}
        for tag, raw in unacked.items():
            job_id = _job_id(raw)
            if job_id:
                held.unacked[job_id] = delivered.get(_text(tag))
    return held


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _filesystem_held(queues: list[str]) -> set[str]:

    folder = Path(str(app.conf.broker_transport_options.get("data_folder_in", "")))
    wanted = {f"{q}.msg" for q in queues}
    ids: set[str] = set()
    if not folder.is_dir():
        return ids
    for path in folder.iterdir():
        if path.name.partition(".")[2] not in wanted:
            continue
        try:
            job_id = _job_id(path.read_bytes())
        except OSError:  # fetched by a worker meanwhile
            continue
        if job_id:
            ids.add(job_id)
    return ids
