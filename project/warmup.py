"""A web process's warm-up: its URL map imported (the view modules, the API and its
schemas) and every page template compiled once when the process starts, so that the
first request it serves does not pay for them (Django keeps both for the life of the
process: the resolver, and the cached template loader's compiled templates).
``project.wsgi`` runs it, so `make run`, gunicorn and `make prod` warm every web process
before it takes a request."""

from __future__ import annotations

from pathlib import Path

from django.template import Engine, TemplateSyntaxError
from django.urls import get_resolver

__all__ = ["compile_templates", "warm_up"]


def warm_up() -> None:
    """What the first request would otherwise pay: the URL map imported (every view
    module, the API with its schemas) and the page templates compiled."""
    get_resolver().url_patterns  # noqa: B018 - importing the URL map is the point
    compile_templates()


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
