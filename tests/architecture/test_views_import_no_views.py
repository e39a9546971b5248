"""No view module imports another view module (issue 45, item 3): what two pages share
(the queue's filters and position, where a page of a list starts) lives in a selectors
or services module both import, so a view module can change without moving another.

A view module is a ``views.py`` or ``<topic>_views.py`` of evidence_app or tasks_app.
``project/views.py`` defines no view: it is the helpers every page view shares (a full
page or an htmx fragment, the role decorators), imported by all of them."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
APPS = ("evidence_app", "tasks_app")


def is_view_module(name: str) -> bool:
    """``evidence_app.review.queue_views``, ``tasks_app.accounts.views``: a module of one
    of the apps whose file name says it holds views."""
    parts = name.split(".")
    return parts[0] in APPS and "views" in parts[-1]


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def imported_modules(source: str, *, module: str) -> set[str]:
    """Every module ``source`` (the text of ``module``) imports, relative imports
    resolved; ``from package import name`` counts as ``package.name`` too, since the
    name may be a module."""
    package = module.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def views_imported_by_views() -> dict[str, list[str]]:
    """View module -> the other view modules it imports."""
    offenders: dict[str, list[str]] = {}
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*views*.py")):
            name = _module_name(path)
            if "migrations" in path.parts or not is_view_module(name):
                continue
            imported = imported_modules(path.read_text(encoding="utf-8"), module=name)
            views = sorted(m for m in imported if is_view_module(m) and m != name)
            if views:
                offenders[name] = views
    return offenders


def test_the_check_sees_a_view_imported_by_a_view_whichever_way() -> None:
    """Issue 45, item 3: the check itself: an absolute, a package and a relative import
    of another view module are all seen; the shared helpers of project.views and a
    selectors module are not view modules."""
    module = "evidence_app.review.decision_views"
    for source in (
        "from evidence_app.review.queue_views import queue_response",
        "from evidence_app.review import queue_views",
        "from .queue_views import queue_response",
        "from . import queue_views",
        "import tasks_app.accounts.views",
    ):
        views = {m for m in imported_modules(source, module=module) if is_view_module(m)}
        assert views, source
    clean = "from project.views import render_page\nfrom .queue_selectors import queue_context"
    assert not {m for m in imported_modules(clean, module=module) if is_view_module(m)}


def test_no_view_module_imports_another_view_module() -> None:
    """Issue 45, item 3: before, decision_views imported queue_views (the queue's filters,
    position and answer) and list_views imported trace_views (a page's offset)."""
    assert views_imported_by_views() == {}
