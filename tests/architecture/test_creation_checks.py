"""A task's audit settings are evidence_app's, not tasks_app's (issue 45, item 2:
evidence concepts leave tasks_app or are named extension points). tasks_app calls the
checks registered on a new task's fields (``tasks_app/workflow/creation_checks.py``) and
stores none of them; evidence_app registers the floor, who may go below it and the
second judge's check, and keeps the values beside the task
(``evidence_app.validation.task_settings``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps

from evidence_app.models import TaskAuditSettings
from project.errors import InvalidInput
from tasks_app.actions import task_create
from tasks_app.records import Task

ROOT = Path(__file__).resolve().parent.parent.parent


def _settings_read(text: str) -> set[str]:
    return set(re.findall(r"settings\.(AUDIT_\w+)", text))


def test_tasks_app_reads_no_audit_setting() -> None:
    """Issue 45: no module of tasks_app (migrations aside) reads an audit setting: the
    floor is checked by what evidence_app registers."""
    read = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in (ROOT / "tasks_app").rglob("*.py")
        if "migrations" not in path.parts
        for name in _settings_read(path.read_text(encoding="utf-8"))
    }
    assert read == set()
    assert _settings_read("rate = settings.AUDIT_RATE") == {"AUDIT_RATE"}


def test_task_create_runs_the_floor_evidence_app_registered(
    requester: Any, operator: Any, settings: Any
) -> None:
    """Issue 45: ``task_create`` refuses a requester's rate below the floor (nothing is
    created) and records an operator's exception, through the registered check."""
    settings.AUDIT_RATE = 0.05
    with pytest.raises(InvalidInput, match="audit_rate"):
        task_create(owner=requester, request="Budget?", audit_rate=0.01, enqueue=False)
    assert not Task.objects.exists()
    task = task_create(
        owner=operator,
        request="Load test",
        audit_rate=0,
        audit_rate_reason="synthetic load test",
        enqueue=False,
    )
    own = TaskAuditSettings.objects.get(task=task)
    assert (own.audit_rate, own.audit_rate_set_by, own.audit_rate_reason) == (
        0.0,
        operator,
        "synthetic load test",
    )


def test_no_model_of_tasks_app_holds_an_audit_setting_or_a_second_judge() -> None:
    """Issue 45: a task's audit rates, the exception to their floor and its second judge
    are evidence_app's (``TaskAuditSettings``, beside the task): no field of any
    tasks_app model names an audit or the second judge."""
    fields = {
        f"{model.__name__}.{field.name}"
        for model in apps.get_app_config("tasks_app").get_models()
        for field in model._meta.get_fields()
        if field.concrete and ("audit" in field.name or "second_model" in field.name)
    }
    assert fields == set()
    kept = {field.name for field in TaskAuditSettings._meta.concrete_fields}
    assert {"audit_rate", "audit_reject_rate", "audit_rate_set_by", "second_model"} <= kept
    assert TaskAuditSettings._meta.app_label == "evidence_app"
