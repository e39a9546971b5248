"""evidence_app's side of ``tasks_app.verdicts``: how tasks_app queues a validation and
reads verdicts without importing this app (registered in ``EvidenceAppConfig.ready``)."""

from __future__ import annotations

from evidence_app.jobs import validate_attempt_job
from evidence_app.models import ValidationSnapshot
from evidence_app.selectors import rendered_attempt_evidence
from tasks_app.models import Task
from tasks_app.services import job_send_on_commit
from tasks_app.verdicts import Verdict


class StoredVerdicts:
    """The validator behind ``tasks_app.verdicts.validator()``."""

    def enqueue(self, task_id: int, attempt_index: int, *, job_id: str, countdown: float) -> str:
        return job_send_on_commit(
            validate_attempt_job,
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
