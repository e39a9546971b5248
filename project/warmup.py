"""A web process's warm-up: its URL map imported (the view modules, the API and its
schemas) and every page template compiled once when the process starts, so that the
first request it serves does not pay for them (Django keeps both for the life of the
process: the resolver, and the cached template loader's compiled templates).
``project.wsgi`` runs it, so `make run`, gunicorn and `make prod` warm every web process
before it takes a request.

Then every process, web or worker, moves what it made while starting out of the garbage
collector's generations (``freeze_startup_objects``): the modules, models, URL map,
templates and schemas live as long as the process, and a full collection would walk all
of them (about 220,000 objects in a worker) each time it runs."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

from django.template import Engine, TemplateSyntaxError
from django.urls import get_resolver

__all__ = ["compile_templates", "freeze_startup_objects", "warm_up"]


def warm_up() -> None:
    """What the first request would otherwise pay: the URL map imported (every view
    module, the API with its schemas) and the page templates compiled."""
    get_resolver().url_patterns  # noqa: B018 - importing the URL map is the point
    compile_templates()
    freeze_startup_objects()


def freeze_startup_objects(**_: Any) -> int:
    """Collect what starting left as garbage, then freeze every object still tracked
    (``gc.freeze``): they stay for the life of the process, and the collector no longer
    walks them. Without it a worker's full collection (one every few hundred tasks)
    walked ~220,000 startup objects, ~150 ms of CPU each time. Objects made later are
    collected as before. Returns how many objects are frozen. Also the Celery worker's
    ``worker_ready`` and ``worker_process_init`` handler (``project.celery``)."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def compile_templates() -> int:
    """Compile every ``.html`` template under the Django engine's folders; returns how
    many. A template that fails to compile is left for its first request to report."""
    engine = Engine.get_default()
    names: set[str] = set()
    for root in (Path(folder) for folder in engine.dirs):
        names.update(str(p.relative_to(root)) for p in root.rglob("*.html"))
    compiled = 0
    for name in sorted(names):
        try:
            engine.get_template(name)
        except TemplateSyntaxError:  # its page reports it on the first request, with context
            continue
        compiled += 1
    return compiled
