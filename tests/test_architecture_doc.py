"""docs/architecture.md stays true (issue "One house"): every module its "Where each
behaviour lives" table names exists, and its model table lists every model of the apps."""

from __future__ import annotations

import re
from pathlib import Path

from django.apps import apps

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    start = DOC.index(f"## {title}")
    end = DOC.find("\n## ", start + 1)
    return DOC[start : end if end != -1 else None]


def _table_cells(section: str, column: int) -> list[str]:
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    return [row.split(" | ")[column] for row in rows[1:] if not row.startswith("|---")]


def test_every_module_the_behaviour_table_names_exists() -> None:
    cells = _table_cells(_section("Where each behaviour lives"), 1)
    paths = [p for cell in cells for p in re.findall(r"`([^`]+)`", cell) if "/" in p or "." in p]
    assert len(paths) > 40
    missing = [p for p in paths if not (ROOT / p.rstrip("/")).exists()]
    assert missing == []


def test_the_model_table_lists_every_model_of_the_apps() -> None:
    """Each model with its app and the file that defines it."""
    section = _section("Models")
    listed = {
        (model.strip("|` "), app.strip("` "), where.strip("` "))
        for model, app, where in zip(*(_table_cells(section, i) for i in range(3)), strict=True)
    }
    actual = {
        (model.__name__, model._meta.app_label, model.__module__.replace(".", "/") + ".py")
        for model in apps.get_models()
        if model._meta.app_label in {"tasks_app", "evidence_app"}
    }
    assert listed == actual
