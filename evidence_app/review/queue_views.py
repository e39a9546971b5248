"""The reviewer's triage queue: its page, refreshed by htmx without a full reload, and
the assignment of a queue item. What it reads is ``queue_selectors``'s."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from evidence_app.review.queue_selectors import queue_context
from project.errors import DomainError
from project.roles import is_reviewer
from project.views import render_fragment, render_page, reviewer_required, wants_fragment
from tasks_app import actions
from tasks_app.records import visible_task

TEMPLATE = "evidence_app/queue.html"


def queue_response(
    request: HttpRequest, params: QueryDict, *, fragment: str | None = None, status: int = 200
) -> HttpResponse:
    """The queue page, or one of its fragments, for these filters and page."""
    context = queue_context(request, params, whole_page=fragment is None)
    if fragment:
        return render_fragment(request, f"{TEMPLATE}#{fragment}", context, status=status)
    return render_page(request, TEMPLATE, context, status=status)


@reviewer_required
@require_GET
def review_queue(request: HttpRequest) -> HttpResponse:
    if wants_fragment(request, "queue-list"):
        return queue_response(request, request.GET, fragment="queue_list")
    return queue_response(request, request.GET)


@reviewer_required
@require_POST
def task_assign(request: HttpRequest, task_id: int) -> HttpResponse:
    """Assign a queue item to a named reviewer, or clear it."""
    task = visible_task(request, task_id)
    if not is_reviewer(request.user):
        raise PermissionDenied("Only reviewers assign tasks.")
    raw = request.POST.get("assignee", "")
    assignee = None
    if raw.isdigit():
        assignee = get_user_model().objects.filter(pk=int(raw), is_active=True).first()
        if assignee is None:
            messages.error(request, "Not applied: no such reviewer.")
            return redirect("task_detail", task_id=task.pk)
    try:
        actions.task_assign(task_id=task.pk, assignee=assignee, actor=request.user)
    except DomainError as exc:
        messages.error(request, f"Not applied: {exc.message}")
    else:
        who = "you" if assignee == request.user else (assignee or "no one")
        messages.success(request, f"#{task.pk} is assigned to {who}.")
    back = request.POST.get("next", "")
    if back.startswith("/") and not back.startswith("//"):
        return redirect(back)
    return redirect(reverse("task_detail", args=[task.pk]))
