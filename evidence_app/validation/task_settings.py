"""A task's own audit settings and second judge (``TaskAuditSettings``), kept beside the
task: checked and stored when it is created (``task_settings_checked``, registered as a
check of tasks_app's ``task_create``), read by the audit draw and the validation
(``settings_of``), and shown by the tasks API (``TaskSettingsFields``, registered as
tasks_app's ``task_settings``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from django.core.exceptions import ObjectDoesNotExist

from evidence_app.models import TaskAuditSettings
from evidence_app.trust.audits import audit_rates_checked
from project.llm.registry import resolve_model
from tasks_app.records import Task, TaskQuerySet

__all__ = [
    "NO_SECOND_JUDGE",
    "TaskSettingsFields",
    "second_model_checked",
    "settings_of",
    "settings_read",
    "settings_sql",
    "task_settings_checked",
]

# A task's second_model that turns the second judge off even when the setting names one.
NO_SECOND_JUDGE = "none"


def second_model_checked(name: str) -> str:
    """A task's second validator model: "" (the setting's), "none" (no second judge) or a
    name the model registry resolves; anything else raises ``ModelConfigurationError``."""
    name = (name or "").strip()
    if not name or name.lower() == NO_SECOND_JUDGE:
        return name.lower()
    resolve_model(name)
    return name


def task_settings_checked(
    owner: Any, fields: Mapping[str, Any]
) -> Callable[[Task], TaskAuditSettings] | None:
    """A new task's audit rates checked against the floor (``audit_rates_checked``) and
    its second model against the registry; what stores them beside the task, or None
    when every one is its default (no row: the task costs no more statements)."""
    exception = audit_rates_checked(owner, fields)
    values = {
        "audit_rate": fields.get("audit_rate"),
        "audit_reject_rate": fields.get("audit_reject_rate"),
        "second_model": second_model_checked(fields.get("second_model", "")),
        **exception,
    }
    if values == {"audit_rate": None, "audit_reject_rate": None, "second_model": ""}:
        return None

    def store(task: Task) -> TaskAuditSettings:
        return TaskAuditSettings.objects.create(task=task, **values)

    return store


def settings_sql(task_id: int) -> tuple[str, list[Any]]:
    """The task's settings as a scalar SQL expression (PostgreSQL) with its parameters,
    for a statement the caller sends anyway (the validation claim): a JSON array of the
    audit rates and the second model, NULL when the task has none; ``settings_read``
    reads it."""
    table = TaskAuditSettings._meta.db_table
    return (
        '(SELECT json_build_array(s."audit_rate", s."audit_reject_rate", s."second_model") '
        f'FROM "{table}" s WHERE s."task_id" = %s)',
        [task_id],
    )


def settings_read(task: Task, read: Any) -> TaskAuditSettings:
    """The task's settings from ``settings_sql``'s value (the defaults when NULL), unsaved:
    what the validation and the audit draw read."""
    if isinstance(read, str):
        read = json.loads(read)
    if not read:
        return TaskAuditSettings(task_id=task.pk)
    audit_rate, audit_reject_rate, second_model = read
    return TaskAuditSettings(
        task_id=task.pk,
        audit_rate=audit_rate,
        audit_reject_rate=audit_reject_rate,
        second_model=second_model,
    )


def settings_of(task: Task) -> TaskAuditSettings:
    """The task's settings: its row (read once per task object, or with it by
    ``TaskSettingsFields.with_settings``), else the defaults, unsaved."""
    try:
        return task.audit_settings
    except ObjectDoesNotExist:
        return TaskAuditSettings(task_id=task.pk)


class TaskSettingsFields:
    """The settings behind ``tasks_app.workflow.task_settings.task_settings()``."""

    def with_settings(self, tasks: TaskQuerySet) -> TaskQuerySet:
        return tasks.select_related("audit_settings")

    def settings_of(self, task: Task) -> dict[str, Any]:
        own = settings_of(task)
        return {
            "audit_rate": own.audit_rate,
            "audit_reject_rate": own.audit_reject_rate,
            "second_model": own.second_model,
        }
