"""Helpers shared by the page views: full page vs. htmx fragment, permissions, errors.

A page template wraps its body in ``{% partialdef content inline %}``; when htmx
navigates inside the app (``hx-target="#main"``) only that partial is rendered, and
any pending messages travel along as an out-of-band swap.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.template.loader import render_to_string
from django.utils.cache import patch_vary_headers

from tasks_app.models import Task
from tasks_app.roles import is_operator, is_reviewer, is_staff_role

MAIN_TARGET = "main"


def wants_fragment(request: HttpRequest, target: str) -> bool:
    htmx = getattr(request, "htmx", None)
    return bool(htmx) and not htmx.history_restore_request and htmx.target == target


def messages_oob(request: HttpRequest) -> str:
    """Pending messages as an out-of-band swap, or "" when there are none (so a poll
    does not wipe a message the person has not read yet)."""
    pending = list(messages.get_messages(request))
    if not pending:
        return ""
    return render_to_string("_messages_oob.html", {"messages": pending}, request)


def render_page(
    request: HttpRequest, template: str, context: dict[str, Any], *, status: int = 200
) -> HttpResponse:
    """The full page, or only its ``content`` partial when htmx targets ``#main``."""
    if wants_fragment(request, MAIN_TARGET):
        html = render_to_string(f"{template}#content", context, request)
        response = HttpResponse(html + messages_oob(request), status=status)
    else:
        response = render(request, template, context, status=status)
    patch_vary_headers(response, ("HX-Request", "HX-Target"))
    return response


def render_fragment(
    request: HttpRequest, template: str, context: dict[str, Any], *, status: int = 200
) -> HttpResponse:
    html = render_to_string(template, context, request)
    response = HttpResponse(html + messages_oob(request), status=status)
    patch_vary_headers(response, ("HX-Request", "HX-Target"))
    return response


def visible_task(request: HttpRequest, task_id: int, *, defer_big: bool = True) -> Task:
    """The task if this user may see it (A2), else 404 (no existence leak)."""
    qs = Task.objects.visible_to(request.user).select_related("owner", "claimed_by")
    if defer_big:
        qs = qs.defer("request", "rules", "final_answer", "plan")
    return get_object_or_404(qs, pk=task_id)


def can_act(user: Any, task: Task) -> bool:
    """The owner decides on their own task; reviewers on any (S5, U3)."""
    return task.owner_id == user.pk or is_reviewer(user)


def role_required(check: Callable[[Any], bool], what: str) -> Callable[..., Any]:
    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @login_required
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not check(request.user):
                raise PermissionDenied(f"This page is for {what}.")
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


reviewer_required = role_required(is_staff_role, "reviewers and operators")
operator_required = role_required(is_operator, "operators")
