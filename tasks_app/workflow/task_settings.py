"""The settings another app keeps beside each task, as the tasks API shows them: a task's
own audit rates and second judge (``TaskOut.audit_rate``, ``audit_reject_rate``,
``second_model``). They are evidence_app's, stored in its own table and written when
the task is created (``creation_checks``); evidence_app registers who reads them when
Django starts (``EvidenceAppConfig.ready``), and tasks_app never imports it (the import
contracts in pyproject.toml say so). Nothing registered: every task shows the defaults."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from tasks_app.workflow.models import Task, TaskQuerySet


class TaskSettings(Protocol):
    def with_settings(self, tasks: TaskQuerySet) -> TaskQuerySet:
        """``tasks`` with each one's settings read in the same query (``settings_of``
        then reads none)."""
        ...

    def settings_of(self, task: Task) -> dict[str, Any]:
        """The task's settings by their field names in the API; a name left out shows
        its default."""
        ...


class _NoSettings:
    def with_settings(self, tasks: TaskQuerySet) -> TaskQuerySet:
        return tasks

    def settings_of(self, task: Task) -> dict[str, Any]:
        return {}


_registered: list[TaskSettings] = [_NoSettings()]


def register_task_settings(settings: TaskSettings) -> None:
    _registered[:] = [settings]


def task_settings() -> TaskSettings:
    return _registered[0]
