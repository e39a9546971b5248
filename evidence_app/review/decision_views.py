"""The task page's actions: a decision with its claim labels and its undo, a
claim on the task, a note. Views call services and never assign ``status``."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from evidence_app.review.forms import FeedbackForm, NoteForm, claim_labels_from_post
from evidence_app.review.queue_selectors import queue_context, queue_filters, queue_position
from evidence_app.review.task_detail import detail_context
from project.errors import DomainError, Forbidden
from project.roles import is_reviewer, is_staff_role
from project.views import HtmxHttpRequest, render_fragment, render_page
from tasks_app import actions
from tasks_app.records import Feedback, FeedbackAction, TaskStatus, can_act, visible_task


def _refusal_status(exc: DomainError) -> int:
    return exc.http_status if exc.http_status in (409, 422) else 409


@login_required
@require_POST
def task_feedback(request: HtmxHttpRequest, task_id: int) -> HttpResponse:
    """satisfied / revise / abandon. The form carries the task version the person
    saw; a task that changed since is refused with a message and nothing is applied."""
    task = visible_task(request, task_id)
    if not can_act(request.user, task):
        raise PermissionDenied("Only the requester or a reviewer can decide on this task.")
    form = FeedbackForm(request.POST)
    status = 200
    next_id: int | None = None
    query = ""
    if not form.is_valid() and _refused_comment_in_page(form):
        # The person stays in the form: the text, the focus and the error beside the field,
        # never a banner that closes the form (typed text would then become shortcuts).
        # The queue filters the form carried, so complete-and-next keeps them.
        queue_params = QueryDict(form.data.get("filters", ""))
        context = detail_context(request, task.pk, queue_params=queue_params)
        context.update(
            revise_error=form.errors["comment"][0], revise_comment=form.data.get("comment", "")
        )
        return render_page(request, "evidence_app/task_detail.html", context, status=422)
    if not form.is_valid():
        messages.error(request, _form_refusal(form))
        status = 422
        return_to = request.POST.get("return_to", "")
    else:
        data = form.cleaned_data
        return_to = data["return_to"]
        if return_to == "next" and is_staff_role(request.user):
            # Neighbours are read before the decision moves this task out of the queue.
            filters, query = queue_filters(QueryDict(data["filters"]))
            position = queue_position(request.user, filters, task.pk)
            if position["position"]:
                next_id = position["after_decision_id"]
            else:
                return_to = ""  # not a queue item: stay on its page
        try:
            # Claim verdicts go with the decision, in its transaction (a refused label
            # refuses the decision: nothing half written).
            snapshot_id, labels = claim_labels_from_post(request.POST)
            decision = actions.task_decide(
                task_id=task.pk,
                actor=request.user,
                action=data["action"],
                comment=data["comment"],
                expected_version=data["version"],
                claim_labels=labels,
                validation_id=snapshot_id,
            )
        except DomainError as exc:
            messages.error(request, f"Not applied: {exc.message}")
            status = _refusal_status(exc)
        else:
            _decision_message(request, decision)
    return _after_action(
        request, task.pk, return_to=return_to, status=status, next_id=next_id, query=query
    )


def _decision_message(request: HttpRequest, decision: Feedback) -> None:
    task = decision.task
    label = decision.get_action_display().lower()
    if decision.is_pending:
        # The undo toast beside this message names the decision and counts down.
        messages.info(
            request,
            f"#{task.pk} {task.title}: {label}, applies at "
            f"{timezone.localtime(decision.applies_at):%H:%M:%S} unless you undo it "
            "(the countdown below).",
        )
        return
    target = TaskStatus(actions.FEEDBACK_TARGETS[FeedbackAction(decision.action)])
    messages.success(request, f"#{task.pk} {task.title}: {label} → {target.label}.")


@login_required
@require_POST
def decision_undo(request: HtmxHttpRequest, task_id: int, feedback_id: int) -> HttpResponse:
    """Undo a decision inside its window: the task is as it was, and the
    timeline says who undid it. Too late, or someone else's: refused with the reason.
    Sent from the review queue (``return_to=queue``), the answer is the queue in the
    filters it was in."""
    task = visible_task(request, task_id)
    status = 200
    try:
        undone = actions.decision_undo(feedback_id=feedback_id, task_id=task.pk, actor=request.user)
    except Feedback.DoesNotExist:
        raise Http404("No such decision on this task.") from None
    except Forbidden as exc:
        raise PermissionDenied(exc.message) from None
    except DomainError as exc:
        messages.error(request, f"Not undone: {exc.message}")
        status = _refusal_status(exc)
    else:
        messages.success(
            request,
            f"Undone: your {undone.get_action_display().lower()} decision on #{task.pk} "
            "was not applied.",
        )
    if request.POST.get("return_to") == "queue" and is_staff_role(request.user):
        # Undone from the queue: back to the queue as it was (filters, page), not the task.
        filters = QueryDict(request.POST.get("filters", ""))
        if request.htmx:
            return render_page(
                request, "evidence_app/queue.html", queue_context(request, filters), status=status
            )
        return redirect(reverse("review_queue") + ("?" + filters.urlencode() if filters else ""))
    if request.htmx:
        return render_page(
            request,
            "evidence_app/task_detail.html",
            detail_context(request, task.pk),
            status=status,
        )
    return redirect("task_detail", task_id=task.pk)


def _form_refusal(form: FeedbackForm) -> str:
    if set(form.errors) == {"comment"}:
        return f"Not applied: {form.errors['comment'][0]}"
    return "The action was not understood: " + "; ".join(
        f"{k}: {' '.join(map(str, v))}" for k, v in form.errors.items()
    )


def _refused_comment_in_page(form: FeedbackForm) -> bool:
    """A revision refused only for its comment, sent from the task page (the queue's
    inline form checks the comment itself and re-renders the list)."""
    return set(form.errors) == {"comment"} and form.data.get("return_to") != "queue"


def _after_action(
    request: HtmxHttpRequest,
    task_id: int,
    *,
    return_to: str,
    status: int,
    next_id: int | None = None,
    query: str = "",
) -> HttpResponse:
    ok = status == 200
    if return_to == "queue" and is_staff_role(request.user):
        filters = QueryDict(request.POST.get("filters", ""))
        if request.htmx:
            return render_fragment(
                request,
                "evidence_app/queue.html#queue_list",
                queue_context(request, filters, whole_page=False),
                status=status,
            )
        return redirect(reverse("review_queue") + ("?" + filters.urlencode() if filters else ""))
    if ok and return_to == "next" and is_staff_role(request.user):
        # Complete-and-next: the next task of the same filtered queue, or the
        # queue itself when this was the last one.
        suffix = f"?{query}" if query else ""
        if next_id is not None:
            path = reverse("task_detail", args=[next_id]) + suffix
        else:
            path = reverse("review_queue") + suffix
        if request.htmx:
            response = HttpResponse(status=200)
            response["HX-Location"] = json.dumps({"path": path, "target": "#main"})
            return response
        return redirect(path)
    if request.htmx:
        return render_page(
            request,
            "evidence_app/task_detail.html",
            detail_context(request, task_id),
            status=status,
        )
    return redirect("task_detail", task_id=task_id)


@login_required
@require_POST
def task_claim(request: HtmxHttpRequest, task_id: int) -> HttpResponse:
    """Claim or release a task for review; a claim held by someone else is refused
    unless the reviewer explicitly takes it over."""
    task = visible_task(request, task_id)
    if not is_reviewer(request.user):
        raise PermissionDenied("Only reviewers claim tasks.")
    op = request.POST.get("op", "claim")
    force = request.POST.get("force") == "1"
    status = 200
    try:
        if op == "release":
            actions.task_release_claim(task_id=task.pk, reviewer=request.user, force=force)
            messages.info(request, f"Released #{task.pk}.")
        else:
            actions.task_claim(task_id=task.pk, reviewer=request.user, force=force)
            messages.success(request, f"You {'took over' if force else 'claimed'} #{task.pk}.")
    except DomainError as exc:
        messages.error(request, f"Not applied: {exc.message}")
        status = _refusal_status(exc)
    return _after_action(request, task.pk, return_to="", status=status)


@login_required
@require_POST
def task_note(request: HtmxHttpRequest, task_id: int) -> HttpResponse:
    task = visible_task(request, task_id)
    if not can_act(request.user, task):
        raise PermissionDenied("Only the requester or a reviewer can add notes.")
    form = NoteForm(request.POST)
    status = 200
    if form.is_valid():
        try:
            actions.task_add_note(
                task_id=task.pk, actor=request.user, comment=form.cleaned_data["comment"]
            )
            messages.success(request, "Note added.")
        except DomainError as exc:
            messages.error(request, exc.message)
            status = _refusal_status(exc)
    else:
        messages.error(request, "A note must not be empty.")
        status = 422
    return _after_action(request, task.pk, return_to="", status=status)
