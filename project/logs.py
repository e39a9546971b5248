"""Structured logs with the ids that tie a web request to the jobs it caused.

A context (``contextvars``) holds ``request_id``, ``task_id``, ``attempt`` and ``job_id``:

- web: ``RequestContextMiddleware`` takes ``X-Request-ID`` (or makes one), binds it and
  any ``task_id`` in the URL, and answers with the header;
- jobs: a job sent while a request id is bound carries it in a message header
  (``before_task_publish``); the worker binds it with the job id and the job's
  ``task_id``/``attempt_index`` arguments (``task_prerun``); the attempt runner binds the
  attempt number once it has claimed one;
- every log record gets the bound ids (``ContextFilter``); ``LOG_FORMAT=json`` writes one
  JSON object per line (``JsonFormatter``), text mode appends ``[task=… attempt=…]``;
- a periodic job (one in the beat schedule) is quiet at INFO unless it did something:
  its start line, and Celery's "Sending due task", "received" and "succeeded" lines for
  it (``QuietPeriodicJobs``), are DEBUG; its finish line is INFO, with what it returned,
  only when it returned something non-empty or did not succeed.

Every binding is scoped: ``bound`` (a request, a job: a fresh set of ids) and
``extended`` (more ids for a block) restore what was bound before when they end, and
``bind`` only adds to the scope that is open. Outside any scope (a management command,
a job function called directly, a thread of its own) ``bind`` does nothing, so a thread
never keeps a task id from earlier work on its later, unrelated lines.
"""

from __future__ import annotations

import contextvars
import inspect
import json
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from celery import current_app
from celery.app import trace
from django.http import HttpRequest, HttpResponse

__all__ = [
    "ContextFilter",
    "JsonFormatter",
    "QuietPeriodicJobs",
    "RequestContextMiddleware",
    "bind",
    "bound",
    "current",
    "extended",
]

FIELDS = ("request_id", "task_id", "attempt", "job_id", "job")
REQUEST_ID_HEADER = "X-Request-ID"
# Header of a Celery message that carries the request id into the job.
MESSAGE_HEADER = "evidentia_request_id"
_SAFE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,100}$")

# Never mutated in place: bind() sets a new mapping, so contexts cannot leak into each other.
_context: contextvars.ContextVar[Mapping[str, Any]] = contextvars.ContextVar(
    "evidentia_log_context", default=MappingProxyType({})
)
# True inside bound()/extended() or a job: the scope whose end undoes a bind().
_scoped: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "evidentia_log_scoped", default=False
)

log = logging.getLogger("evidentia.request")
job_log = logging.getLogger("evidentia.job")


def current() -> dict[str, Any]:
    """The ids bound in this context (a copy)."""
    return dict(_context.get())


def _present(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def bind(**values: Any) -> None:
    """Add ids to the open scope (a request, a job, a ``bound``/``extended`` block) for
    the rest of it; None values are ignored. Outside any scope nothing is bound: nothing
    would ever unbind it, and the thread's later lines would carry it."""
    if _scoped.get():
        _context.set({**_context.get(), **_present(values)})


@contextmanager
def _scope(values: Mapping[str, Any]) -> Iterator[None]:
    token = _context.set(MappingProxyType(dict(values)))
    scoped = _scoped.set(True)
    try:
        yield
    finally:
        _scoped.reset(scoped)
        _context.reset(token)


@contextmanager
def bound(**values: Any) -> Iterator[None]:
    """Bind exactly these ids for the duration of a block (a request, a job), then
    restore what was bound before."""
    with _scope(_present(values)):
        yield


@contextmanager
def extended(**values: Any) -> Iterator[None]:
    """Add ids to those already bound for the duration of a block, then restore them."""
    with _scope({**_context.get(), **_present(values)}):
        yield


class ContextFilter(logging.Filter):
    """Put the bound ids on every record (attributes, and ``context`` for text logs)."""

    def filter(self, record: logging.LogRecord) -> bool:
        values = _context.get()
        for name in FIELDS:
            if not hasattr(record, name):
                setattr(record, name, values.get(name))
        parts = [f"{n}={getattr(record, n)}" for n in FIELDS if getattr(record, n) is not None]
        record.context = f" [{' '.join(parts)}]" if parts else ""
        return True


_RESERVED = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "context",
}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, the bound ids and any
    ``extra=`` fields; exceptions as text under ``exc_info``."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, tz=UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                data[name] = value
        for key, value in vars(record).items():
            if key not in _RESERVED and key not in FIELDS and key not in data:
                data[key] = value
        if record.exc_info:
            data["exc_info"] = self.formatException(record.exc_info)
        return json.dumps(data, default=str, ensure_ascii=False)


class RequestContextMiddleware:
    """Bind a request id (the client's ``X-Request-ID`` if it is a sane token, else a new
    one) and the URL's ``task_id``; log one line per request; echo the id back."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        supplied = request.headers.get(REQUEST_ID_HEADER, "")
        request_id = supplied if _SAFE_ID.match(supplied) else uuid.uuid4().hex
        started = time.monotonic()
        with bound(request_id=request_id):
            response = self.get_response(request)
            if request.path not in {"/health", "/ready", "/metrics"}:
                log.info(
                    "%s %s %s",
                    request.method,
                    request.path,
                    response.status_code,
                    extra={
                        "method": request.method,
                        "path": request.path,
                        "status": response.status_code,
                        "duration_ms": int((time.monotonic() - started) * 1000),
                    },
                )
        response[REQUEST_ID_HEADER] = request_id
        return response

    def process_view(
        self, request: HttpRequest, view: Any, args: Any, kwargs: dict[str, Any]
    ) -> None:
        if "task_id" in kwargs:
            bind(task_id=_int(kwargs["task_id"]))


def _int(value: Any) -> Any:
    try:
        return int(value)
    except (TypeError, ValueError):
        return value


# --- Celery: carry the request id into jobs, bind job ids in the worker -------------------


def on_before_publish(headers: dict[str, Any] | None = None, **_: Any) -> None:
    request_id = _context.get().get("request_id")
    if headers is not None and request_id:
        headers[MESSAGE_HEADER] = request_id


# (job id, thread) -> the tokens to reset at task_postrun. The thread is part of the key:
# two deliveries of one job may run at once in a threads pool, each in its own thread.
_job_tokens: dict[
    tuple[str, int], tuple[contextvars.Token[Mapping[str, Any]], contextvars.Token[bool]]
] = {}


def on_job_start(
    task_id: str | None = None,
    task: Any = None,
    args: Any = None,
    kwargs: Any = None,
    **_: Any,
) -> None:
    """``task_prerun``: bind job id, job name, request id and the job's task/attempt."""
    values: dict[str, Any] = {"job_id": task_id, "job": getattr(task, "name", None)}
    request = getattr(task, "request", None)
    values["request_id"] = getattr(request, MESSAGE_HEADER, None) or (
        (getattr(request, "headers", None) or {}).get(MESSAGE_HEADER)
    )
    values.update(_job_arguments(task, args or (), kwargs or {}))
    _job_tokens[(str(task_id), threading.get_ident())] = (
        _context.set(MappingProxyType(_present(values))),
        _scoped.set(True),
    )
    level = logging.DEBUG if _is_periodic(task) else logging.INFO
    job_log.log(level, "job started", extra={"event": "job_started"})


def on_job_end(
    task_id: str | None = None,
    task: Any = None,
    state: str | None = None,
    retval: Any = None,
    **_: Any,
) -> None:
    """``task_postrun``: log the job's end and close its scope. A periodic job that
    succeeded says what it did (its result) at INFO, or nothing at INFO if it found
    nothing to do."""
    state = state or "done"
    extra = {"event": "job_finished"}
    if not _is_periodic(task) or state != "SUCCESS":
        job_log.info("job finished (%s)", state, extra=extra)
    elif did_something(retval):
        job_log.info("job finished (%s): %s", state, _summary(retval), extra=extra)
    else:
        job_log.debug("job finished (%s): nothing to do", state, extra=extra)
    tokens = _job_tokens.pop((str(task_id), threading.get_ident()), None)
    if tokens is None:
        return
    try:
        _scoped.reset(tokens[1])
        _context.reset(tokens[0])
    except ValueError:  # opened in another context: end this thread's scope anyway
        _context.set(MappingProxyType({}))
        _scoped.set(False)


def periodic_jobs(app: Any = None) -> frozenset[str]:
    """The names of the jobs Celery beat sends: the tasks of the ``beat_schedule`` of
    ``app`` (default: the current app, the project's; project/celery.py,
    project/heartbeats.py)."""
    if app is None:
        app = current_app
    return frozenset(entry["task"] for entry in (app.conf.beat_schedule or {}).values())


def _is_periodic(task: Any) -> bool:
    app = getattr(task, "app", None)
    return app is not None and getattr(task, "name", None) in periodic_jobs(app)


def did_something(result: Any) -> bool:
    """Whether a job's result reports work done: not None, 0, an empty collection, or a
    mapping whose values are all of those (the reaper's ``{"requeued": [], ...}``)."""
    if isinstance(result, Mapping):
        return any(did_something(value) for value in result.values())
    if isinstance(result, str):
        return bool(result)
    if isinstance(result, list | tuple | set | frozenset):
        return len(result) > 0
    return result is not None and result is not False and result != 0


def _summary(result: Any) -> str:
    """A result for the log line: a mapping's non-empty entries only."""
    if isinstance(result, Mapping):
        return " ".join(f"{k}={v!r}" for k, v in result.items() if did_something(v))
    return repr(result)


class QuietPeriodicJobs(logging.Filter):
    """For Celery's loggers (``celery.beat``, ``celery.worker.strategy``,
    ``celery.app.trace``; settings.LOGGING): beat's "Sending due task", the worker's
    "received" and the trace's "succeeded" INFO lines about a periodic job become DEBUG
    lines (kept when the logger's level lets DEBUG through). A periodic job says what it
    did in its own finish line (``on_job_end``); its failures, retries and WARNING/ERROR
    lines are untouched."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO:
            return True
        name = _celery_job_name(record)
        if name is None or name not in periodic_jobs():
            return True
        record.levelno, record.levelname = logging.DEBUG, logging.getLevelName(logging.DEBUG)
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


def _celery_job_name(record: logging.LogRecord) -> str | None:
    """The job a Celery "Sending due task" / "received" / "succeeded" record is about."""

    if record.msg in (trace.LOG_RECEIVED, trace.LOG_SUCCESS):
        data = getattr(record, "data", None)
        return data.get("name") if isinstance(data, Mapping) else None
    if (
        isinstance(record.msg, str)
        and record.msg.startswith("Scheduler: Sending due task")
        and isinstance(record.args, tuple)
        and len(record.args) == 2
    ):
        return str(record.args[1])
    return None


_signatures: dict[Any, inspect.Signature] = {}


def _signature(task: Any) -> inspect.Signature:
    """The signature of a job's ``run``, computed once per job (every job
    start paid for ``inspect.signature``)."""
    run = task.run
    key = getattr(run, "__func__", run)
    found = _signatures.get(key)
    if found is None:
        found = _signatures[key] = inspect.signature(run)
    return found


def _job_arguments(task: Any, args: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """``task_id`` and ``attempt_index`` arguments of a job, by parameter name."""
    try:
        bound_args = _signature(task).bind_partial(*args, **kwargs).arguments
    except (TypeError, ValueError, AttributeError):
        return {}
    found: dict[str, Any] = {}
    if "task_id" in bound_args:
        found["task_id"] = _int(bound_args["task_id"])
    if "attempt_index" in bound_args:
        found["attempt"] = _int(bound_args["attempt_index"])
    return found
