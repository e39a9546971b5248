"""The verdict fields of the tasks API, as tasks_app's API sees them.

A task's latest verdict (its summary on a list, its detail on one task) and its cost are
stored by evidence_app, which builds on tasks_app: evidence_app's API registers who builds
these fields when Django starts (``EvidenceAppConfig.ready``), and tasks_app never imports
it (the import contracts in pyproject.toml say so). The validator hand-off
(``tasks_app.workflow.verdicts``) carries the domain's operations only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from django.core.exceptions import ImproperlyConfigured

if TYPE_CHECKING:
    from tasks_app.workflow.models import Task, TaskQuerySet


class VerdictFields(Protocol):
    def with_list_summaries(self, tasks: TaskQuerySet) -> TaskQuerySet:
        """``tasks`` with each one's latest original verdict summary attached, for a
        list page in a constant number of queries (``list_summary`` reads it)."""
        ...

    def list_summary(self, task: Task) -> dict[str, Any] | None:
        """The summary ``with_list_summaries`` attached to ``task`` (the API's
        ``ValidationSummaryOut``), or None."""
        ...

    def verdict_detail(self, task_id: int) -> dict[str, Any] | None:
        """The task's latest original verdict with what a person needs to decide (the
        API's ``VerdictOut``), or None."""
        ...

    def cost(self, task: Task) -> dict[str, Any]:
        """What the task cost (agent runs, validations, replays; the API's
        ``TaskCostOut``)."""
        ...


_registered: list[VerdictFields] = []


def register_verdict_fields(fields: VerdictFields) -> None:
    _registered[:] = [fields]


def verdict_fields() -> VerdictFields:
    if not _registered:
        raise ImproperlyConfigured(
            "No verdict fields are registered: evidence_app must be in INSTALLED_APPS."
        )
    return _registered[0]
