"""Celery entry module of the chaos drill's workers: ``CELERY_APP=chaos.worker``.

The project's Celery app (the real jobs and settings, from the environment ``bin/prod``
exports) plus two scripted models registered in this process:

- ``chaos:agent``: the bench's latency agent (``bench.models.latency_agent``: sleeps
  ``BENCH_MODEL_LATENCY_MS`` per call, a search, reads, then an answer);
- ``chaos:judge``: the bench's judge (accepts, citing the first tool result), after the
  same sleep.

Every call is logged as two JSON lines (start, end) in ``CHAOS_CALL_LOG_DIR``, one file
per process, flushed at once: a SIGKILL loses at most the end of the call in flight.
The drill reads them for model calls per attempt and for attempts that overlap.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

import django  # noqa: E402

django.setup()

from pydantic_ai.messages import ModelMessage, ModelResponse  # noqa: E402
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402

from bench.models import judge, latency_agent  # noqa: E402
from project.celery import app  # noqa: E402
from project.llm.messages import first_user_prompt  # noqa: E402
from project.llm.registry import register_model  # noqa: E402
from project.logs import current  # noqa: E402

__all__ = ["app"]

AGENT = "chaos:agent"
JUDGE = "chaos:judge"
TAG_RE = re.compile(r"\[chaos (?P<tag>[a-z0-9-]+)\]")

_lock = threading.Lock()
_ids = itertools.count(1)
_files: dict[int, Any] = {}


def _log_file() -> Any:
    pid = os.getpid()
    handle = _files.get(pid)
    if handle is None:
        folder = Path(os.environ.get("CHAOS_CALL_LOG_DIR", "var/chaos/calls"))
        folder.mkdir(parents=True, exist_ok=True)
        handle = _files[pid] = (folder / f"calls-{pid}.jsonl").open("a", buffering=1)
    return handle


def _write(record: dict[str, Any]) -> None:
    with _lock:
        _log_file().write(json.dumps(record) + "\n")


def _logged(role: str, reply: Any) -> Any:
    def call(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        context = current()
        match = TAG_RE.search(first_user_prompt(messages))
        call_id = f"{os.getpid()}-{next(_ids)}"
        base = {
            "id": call_id,
            "role": role,
            "task": context.get("task_id"),
            "attempt": context.get("attempt"),
            "job": context.get("job_id"),
            "tag": match.group("tag") if match else None,
            "pid": os.getpid(),
            "thread": threading.get_ident(),
        }
        _write({**base, "ev": "start", "t": time.time()})
        if role == "judge":
            time.sleep(float(os.environ.get("BENCH_MODEL_LATENCY_MS", "300")) / 1000)
        response = reply(messages, info)
        _write({"id": call_id, "ev": "end", "t": time.time()})
        return response

    return call


register_model(AGENT, lambda: FunctionModel(_logged("agent", latency_agent), model_name=AGENT))
register_model(JUDGE, lambda: FunctionModel(_logged("judge", judge), model_name=JUDGE))
