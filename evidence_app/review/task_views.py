"""The task page (its context in ``task_detail``, its lazy sections in ``section_views``,
its actions in ``decision_views``); the lists and the new-task form are
``evidence_app.portal``'s. Permission checks live here, never in templates (STYLE).
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from evidence_app.review.task_detail import detail_context
from evidence_app.trust.blinding import withheld_for_audit
from project.roles import is_staff_role
from project.views import render_page
from tasks_app import actions


@login_required
@require_GET
def task_detail(request: HttpRequest, task_id: int) -> HttpResponse:
    if not request.GET.get("reveal") and withheld_for_audit(request.user, task_id):
        # Blind, or not counted: a reviewer who could judge an open audit of
        # this task is told before the verdict is shown, and only a deliberate click
        # shows it (and makes their judgement of that audit not blind).
        return render_page(
            request, "evidence_app/task_withheld.html", {"task_id": task_id}, status=200
        )
    context = detail_context(request, task_id)
    if is_staff_role(request.user):
        # The team page's time per item counts from a reviewer's first view of the
        # attempt; a requester looking at their own task is not review work.
        actions.review_visit_record(task=context["task"], reviewer=request.user)
    return render_page(request, "evidence_app/task_detail.html", context)
