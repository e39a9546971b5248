"""The portal's pages: home, my tasks, all tasks and a new task. Permission checks live
here, never in templates (STYLE); views call services and never assign ``status``."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET

from evidence_app.portal.forms import TaskCreateForm
from evidence_app.portal.selectors import task_list_page
from evidence_app.trust.blinding import audit_exposures_record, open_audit_task_ids
from project.errors import DomainError
from project.roles import is_staff_role
from project.views import (
    AuthenticatedHttpRequest,
    render_fragment,
    render_page,
    reviewer_required,
    wants_fragment,
)
from tasks_app import actions
from tasks_app.records import TaskStatus

# --- Lists ---------------------------------------------------------------------------------


@login_required
@require_GET
def home(request: AuthenticatedHttpRequest) -> HttpResponse:
    """A reviewer starts at the queue; everyone else at their own tasks."""
    if is_staff_role(request.user):
        return redirect("review_queue")
    return my_tasks(request)


@login_required
@require_GET
def my_tasks(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The requester's own tasks; polls while one of them is queued or running."""
    return _task_list(request, scope="mine")


@reviewer_required
@require_GET
def task_list_all(request: HttpRequest) -> HttpResponse:
    return _task_list(request, scope="all")


def _task_list(request: HttpRequest, *, scope: str) -> HttpResponse:
    status = request.GET.get("status", "")
    listed = task_list_page(
        owner=request.user if scope == "mine" else None,
        status=status,
        page_number=request.GET.get("page"),
    )
    tasks = list(listed.page.object_list)
    ids = [t.pk for t in tasks]
    unlisted: set[int] = set()
    if status in TaskStatus.values:
        # Listed under a status: that alone says where the task went.
        audit_exposures_record(
            user=request.user, task_ids=ids, channel=f"{scope} tasks filtered by {status}"
        )
    else:
        # A task with an open audit this reader could judge is not listed: its row's
        # status would tell the audited verdict, and a marked row would tie its title
        # to the open audit.
        unlisted = open_audit_task_ids(request.user, ids)
        tasks = [t for t in tasks if t.pk not in unlisted]
    context = {
        "page": listed.page,
        "tasks": tasks,
        "unlisted": len(unlisted),
        "counts": [(s, TaskStatus(s).label, listed.counts.get(s, 0)) for s in TaskStatus.values],
        "status_filter": status,
        "scope": scope,
        "polling": listed.polling,
        "list_url": request.get_full_path(),
    }
    if wants_fragment(request, "task-list"):
        return render_fragment(request, "evidence_app/task_list.html#task_list", context)
    return render_page(request, "evidence_app/task_list.html", context)


# --- New task ------------------------------------------------------------------------------


@login_required
def task_new(request: HttpRequest) -> HttpResponse:
    form = TaskCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            task = actions.task_create(
                owner=request.user,
                title=data["title"],
                request=data["request"],
                rules=data["rules"],
                plan=data["plan"],
                validation_policy=data["validation_policy"],
                validation_keywords=data["validation_keywords"],
                audit_rate=data["audit_rate"],
                audit_reject_rate=data["audit_reject_rate"],
                audit_rate_reason=data["audit_rate_reason"],
                second_model=data["second_model"],
            )
        except DomainError as exc:
            form.add_error(None, exc.message)
        else:
            messages.success(request, f"Task #{task.pk} created; the agent will start shortly.")
            return redirect("task_detail", task_id=task.pk)
    status = 422 if request.method == "POST" else 200
    return render_page(request, "evidence_app/task_new.html", {"form": form}, status=status)
