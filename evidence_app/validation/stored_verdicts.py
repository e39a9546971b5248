"""evidence_app's side of ``tasks_app.workflow.verdicts``: how tasks_app queues a validation and
reads verdicts without importing this app (registered in ``EvidenceAppConfig.ready``)."""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.db.models import Prefetch

from evidence_app.models import ValidationSnapshot
from evidence_app.validation.selectors import (
    SUMMARY_FIELDS,
    latest_original,
    latest_summary_json,
    rendered_attempt_evidence,
    task_cost,
    validation_summary,
    validation_summary_of_json,
    verdict,
)
from evidence_app.validation.services import VALIDATE_JOB
from tasks_app.actions import Verdict, job_send_on_commit
from tasks_app.records import Task, TaskQuerySet


class StoredVerdicts:
    """The validator behind ``tasks_app.workflow.verdicts.validator()``."""

    def enqueue(self, task_id: int, attempt_index: int, *, job_id: str, countdown: float) -> str:
        return job_send_on_commit(
            VALIDATE_JOB,
            (task_id, attempt_index),
            task_id=task_id,
            job_id=job_id,
            countdown=countdown,
        )

    def verdict(self, task_id: int, attempt_index: int | None = None) -> Verdict | None:
        latest = ValidationSnapshot.objects.originals().without_bodies().filter(task_id=task_id)
        if attempt_index is not None:
            latest = latest.filter(attempt_index=attempt_index)
        snapshot = latest.order_by("-created_at", "-id").first()
        if snapshot is None:
            return None
        return Verdict(
            id=snapshot.pk,
            attempt_index=snapshot.attempt_index,
            status=snapshot.status,
            score=snapshot.score,
            failure_category=snapshot.failure_category,
            result=snapshot.result if isinstance(snapshot.result, dict) else {},
        )

    def rendered_evidence(self, task: Task, attempt_index: int) -> str:
        return rendered_attempt_evidence(task, attempt_index)

    def with_list_summaries(self, tasks: TaskQuerySet) -> TaskQuerySet:
        # On PostgreSQL the summary is a JSON column of the same query (issue 16);
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

    def attempt_verdicts(self, task_id: int) -> dict[int, tuple[int, str]]:
        by_attempt: dict[int, tuple[int, str]] = {}
        originals = ValidationSnapshot.objects.originals().filter(task_id=task_id)
        for snap_id, attempt_index, status in originals.order_by("created_at", "id").values_list(
            "id", "attempt_index", "status"
        ):
            by_attempt[attempt_index] = (snap_id, status)  # the latest one wins
        return by_attempt

    def cost(self, task: Task) -> dict[str, Any]:
        return task_cost(task).as_dict()
