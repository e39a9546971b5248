"""What the pages and the API read about runs: one run a user may see, and a task's
attempts with their runs."""

from __future__ import annotations

from typing import Any

from django.http import Http404

from project import roles
from tasks_app.runtime.models import Run
from tasks_app.workflow.models import Task
from tasks_app.workflow.signals import task_seen_by
from tasks_app.workflow.verdicts import validator


def get_visible_run(user: Any, run_id: int) -> Run:
    runs = Run.objects.all()
    if not roles.is_staff_role(user):
        runs = runs.filter(task__owner=user)
    run = runs.defer("output_text").filter(pk=run_id).first()
    if run is None:
        raise Http404(f"Run {run_id} not found.")
    # A later attempt's run tells where the task went after the earlier verdicts.
    task_seen_by(user, [run.task_id], "the API (a run)")
    return run


def attempt_summaries(task: Task) -> list[dict[str, Any]]:
    """Per attempt (1..attempt_count, plus any with rows): its run ids and its latest
    original validation, in two queries."""
    runs_by_attempt: dict[int, list[int]] = {}
    for run_id, attempt_index in Run.objects.filter(task_id=task.pk).values_list(
        "id", "attempt_index"
    ):
        runs_by_attempt.setdefault(attempt_index, []).append(run_id)
    validation_by_attempt = validator().attempt_verdicts(task.pk)
    indexes = sorted(
        set(range(1, task.attempt_count + 1)) | set(runs_by_attempt) | set(validation_by_attempt)
    )
    return [
        {
            "attempt_index": index,
            "run_ids": runs_by_attempt.get(index, []),
            "validation_id": validation_by_attempt.get(index, (None, None))[0],
            "validation_status": validation_by_attempt.get(index, (None, None))[1],
        }
        for index in indexes
    ]
