"""The trace tree's fragments: the next page of an attempt's runs, a page of
a run's steps, and one step's content, each loaded with htmx when a node of the tree is
opened. Runs, model calls and tool calls are staff material, as the transcripts they
replace on the task page. The queries are in ``evidence_app.review.trace_tree``."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from evidence_app.review import trace_tree
from project.roles import is_staff_role
from project.views import render_fragment
from tasks_app.records import Task, visible_task

TEMPLATE = "evidence_app/_trace_tree.html"


def _staff_task(request: HttpRequest, task_id: int) -> Task:
    """The task if the user may see it (else 404) and is a reviewer or an operator
    (else 403): a task that is not yours stays a 404."""
    task = visible_task(request, task_id)
    if not is_staff_role(request.user):
        raise PermissionDenied("The trace of a task is for reviewers and operators.")
    return task


@login_required
@require_GET
def trace_runs(request: HttpRequest, task_id: int, attempt_index: int) -> HttpResponse:
    """The next page of an attempt's runs (the "more" row of an attempt)."""
    task = _staff_task(request, task_id)
    page = trace_tree.runs_page(task, attempt_index, offset=trace_tree.offset_of(request.GET))
    return render_fragment(
        request, f"{TEMPLATE}#runs", {"task": task, "attempt": attempt_index, "page": page}
    )


@login_required
@require_GET
def trace_steps(request: HttpRequest, task_id: int, run_id: int) -> HttpResponse:
    """A page of a run's model calls and tool calls, in the order they happened."""
    task = _staff_task(request, task_id)
    run = trace_tree.run_of(task, run_id)
    page = trace_tree.steps_page(run, offset=trace_tree.offset_of(request.GET))
    return render_fragment(request, f"{TEMPLATE}#steps", {"task": task, "run": run, "page": page})


@login_required
@require_GET
def trace_call(request: HttpRequest, task_id: int, call_id: int) -> HttpResponse:
    """One model call: what was sent (sizes, and the request itself when it was
    recorded) and the message the model answered with."""
    task = _staff_task(request, task_id)
    call, answer = trace_tree.model_call(task, call_id)
    return render_fragment(
        request, f"{TEMPLATE}#call", {"task": task, "call": call, "answer": answer}
    )


@login_required
@require_GET
def trace_tool(request: HttpRequest, task_id: int, evidence_id: int) -> HttpResponse:
    """One tool call: its arguments and the full result."""
    task = _staff_task(request, task_id)
    item = trace_tree.tool_call(task, evidence_id)
    return render_fragment(request, f"{TEMPLATE}#tool", {"task": task, "item": item})
