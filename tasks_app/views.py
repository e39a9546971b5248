"""Pages. Permission checks live here, never in templates (STYLE)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from tasks_app.models import Task


@login_required
def home(request: HttpRequest) -> HttpResponse:
    tasks = Task.objects.visible_to(request.user).for_list().order_by("-created_at")[:100]
    counts = dict(
        Task.objects.visible_to(request.user)
        .values_list("status")
        .annotate(n=Count("id"))
        .values_list("status", "n")
    )
    return render(request, "tasks_app/home.html", {"tasks": tasks, "counts": counts})


@login_required
def task_detail(request: HttpRequest, task_id: int) -> HttpResponse:
    try:
        task = Task.objects.visible_to(request.user).select_related("owner").get(pk=task_id)
    except Task.DoesNotExist:
        raise Http404("No such task") from None
    events = task.events.select_related("actor")
    return render(request, "tasks_app/task_detail.html", {"task": task, "events": events})
