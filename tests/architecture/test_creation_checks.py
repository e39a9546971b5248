"""The audit rates' floor is evidence_app's rule, not tasks_app's (issue 45, item 2:
evidence concepts leave tasks_app or are named extension points). tasks_app keeps a
task's audit rate columns and calls the checks registered on a new task's fields
(``tasks_app/workflow/creation_checks.py``); evidence_app registers the floor and who
may go below it (``evidence_app.trust.audits.audit_rates_checked``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

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
    assert (task.audit_rate_set_by, task.audit_rate_reason) == (operator, "synthetic load test")
