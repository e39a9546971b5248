"""The verdict fields of the tasks API (``tasks_app.api.verdict_fields``): a task's latest
verdict, as a summary on a list and in full on one task, and what it cost; built here,
above both apps, from the stored verdicts (registered in ``EvidenceAppConfig.ready``)."""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.db.models import Prefetch

from evidence_app.models import ValidationSnapshot
from evidence_app.validation.selectors import (
    SUMMARY_FIELDS,
    latest_original,
    latest_summary_json,
    task_cost,
    validation_summary,
    validation_summary_of_json,
    verdict,
)
from tasks_app.records import Task, TaskQuerySet


class TaskVerdictFields:
    """The verdict fields behind ``tasks_app.api.verdict_fields.verdict_fields()``."""

    def with_list_summaries(self, tasks: TaskQuerySet) -> TaskQuerySet:
        # On PostgreSQL the summary is a JSON column of the same query;
        # elsewhere a one-item ``latest_validations`` list in one more query.
        if connection.vendor == "postgresql":
            return tasks.annotate(latest_summary=latest_summary_json())
        # A sliced prefetch: Django picks each task's first row with a window function.
        latest = (
            ValidationSnapshot.objects.originals()
            .only(*SUMMARY_FIELDS)
            .order_by("-created_at", "-id")[:1]
        )
        return tasks.prefetch_related(
            Prefetch("validations", queryset=latest, to_attr="latest_validations")
        )

    def list_summary(self, task: Task) -> dict[str, Any] | None:
        if hasattr(task, "latest_summary"):
            return validation_summary_of_json(task.latest_summary)
        latest = getattr(task, "latest_validations", None)
        return validation_summary(latest[0] if latest else None)

    def verdict_detail(self, task_id: int) -> dict[str, Any] | None:
        return verdict(latest_original(task_id))

    def cost(self, task: Task) -> dict[str, Any]:
        return task_cost(task).as_dict()
