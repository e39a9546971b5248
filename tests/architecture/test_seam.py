"""The seam between the apps says what it promises (issue 45): evidence_app imports
tasks_app only through its published modules (``tasks_app.records``, ``tasks_app.actions``),
runs no SQL of its own on tasks_app's tables, gets no HTTP helper across, and the models
records.py offers are named in its contract with the fields evidence_app may rely on."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

from django.db import models

import tasks_app.actions
import tasks_app.records

ROOT = Path(__file__).resolve().parent.parent.parent
PUBLISHED = {"tasks_app.records", "tasks_app.actions"}


def _product_modules(app: str) -> list[Path]:
    return sorted(
        path
        for path in (ROOT / app).rglob("*.py")
        if "migrations" not in path.parts and "training" not in path.parts
    )


def outside_the_surface(source: str) -> list[str]:
    """The modules of tasks_app that ``source`` imports other than the published ones."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "tasks_app":
                found += [f"tasks_app.{alias.name}" for alias in node.names]
            else:
                found.append(node.module)
    return [
        name
        for name in found
        if (name == "tasks_app" or name.startswith("tasks_app.")) and name not in PUBLISHED
    ]


def test_the_check_sees_an_import_past_the_surface() -> None:
    """The check itself: a module of tasks_app other than records and actions is named,
    whichever way it is imported."""
    assert outside_the_surface("from tasks_app.workflow.models import Task") == [
        "tasks_app.workflow.models"
    ]
    assert outside_the_surface("import tasks_app.api.tasks") == ["tasks_app.api.tasks"]
    assert outside_the_surface("from tasks_app import workflow, actions") == ["tasks_app.workflow"]
    assert outside_the_surface("from tasks_app.records import Task\nimport tasks_app.actions") == []


def test_evidence_app_imports_tasks_app_only_through_records_and_actions() -> None:
    offenders = {
        path.relative_to(ROOT).as_posix(): names
        for path in _product_modules("evidence_app")
        if (names := outside_the_surface(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}


def test_evidence_app_runs_no_sql_on_the_tables_of_tasks_app() -> None:
    """A read of tasks_app's rows goes through its selectors and models, never through a
    table name of its own (``tasks_app_task``, ...)."""
    offenders = [
        path.relative_to(ROOT).as_posix()
        for path in _product_modules("evidence_app")
        if re.search(r"\btasks_app_\w+", path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def _http_words(obj: object) -> list[str]:
    try:
        signature = str(inspect.signature(obj))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return []
    # A response or ninja anywhere; a request as a parameter is allowed: ``visible_task``
    # reads the user and the page's path from it (the channel its read is reported on).
    return re.findall(r"HttpResponse|JsonResponse|ninja", signature)


def test_no_http_helper_crosses_the_seam() -> None:
    """What the surface offers returns no response and names nothing of ninja, and none of it
    comes from a module that defines an API router: idempotent writes are project's
    (project/idempotency.py) and the decision's 403 each API layer's own
    (evidence_app/api/http.py)."""
    offered = [
        (module.__name__, name, getattr(module, name))
        for module in (tasks_app.actions, tasks_app.records)
        for name in module.__all__
    ]
    http = [(where, name) for where, name, obj in offered if callable(obj) and _http_words(obj)]
    from_routers = [
        (where, name) for where, name, obj in offered if hasattr(inspect.getmodule(obj), "router")
    ]
    assert http == []
    assert from_routers == []


def _contract() -> dict[str, list[str]]:
    """Model -> fields, from the bullet list of records.py's docstring."""
    doc = tasks_app.records.__doc__ or ""
    contract: dict[str, list[str]] = {}
    for bullet in re.findall(r"^- ``(\w+)``: (.*?)(?=^- |^\s*$)", doc, re.M | re.S):
        model, fields = bullet
        contract[model] = [f.strip() for f in fields.replace("\n", " ").split(",")]
    return contract


def test_the_contract_names_every_model_records_offers_and_only_fields_that_exist() -> None:
    """Every model records.py offers has its fields named in the contract, and each field
    named exists: removing or renaming one fails here, a visible change of the contract."""
    offered = {
        name: obj
        for name in tasks_app.records.__all__
        if isinstance(obj := getattr(tasks_app.records, name), type)
        and issubclass(obj, models.Model)
    }
    contract = _contract()
    assert set(contract) == set(offered)
    missing = [
        f"{model}.{field}"
        for model, fields in contract.items()
        for field in fields
        if field not in {f.name for f in offered[model]._meta.concrete_fields}
    ]
    assert missing == []
