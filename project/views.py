"""Helpers shared by the page views: full page vs. htmx fragment, permissions, errors.

A page template wraps its body in ``{% partialdef content inline %}``; when htmx
navigates inside the app (``hx-target="#main"``) only that partial is rendered, and
any pending messages travel along as an out-of-band swap.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import TYPE_CHECKING, Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils.cache import patch_vary_headers

if TYPE_CHECKING:
    from django.contrib.auth.models import User
    from django_htmx.middleware import HtmxDetails

from project.roles import is_operator, is_staff_role

MAIN_TARGET = "main"


class AuthenticatedHttpRequest(HttpRequest):
    """A request to a view behind ``login_required``, for the type checker."""

    user: User


class HtmxHttpRequest(AuthenticatedHttpRequest):
    """A logged-in request with django-htmx's ``request.htmx`` (its middleware sets it)."""

    htmx: HtmxDetails


def wants_fragment(request: HttpRequest, target: str) -> bool:
    htmx = getattr(request, "htmx", None)
    if not htmx:
        return False
    return not htmx.history_restore_request and htmx.target == target


def messages_oob(request: HttpRequest, *, replace: bool = False) -> str:
    """Pending messages as an out-of-band swap, or "" when there are none (so a poll
    does not wipe a message the person has not read yet). With ``replace`` (a navigation
    of ``#main``) the swap is sent even when empty: the page changed, so the previous
    page's message goes, as on a full page load ("Task #15 created" stayed on screen
    after the task was done)."""
    pending = list(messages.get_messages(request))
    if not pending and not replace:
        return ""
    return render_to_string("_messages_oob.html", {"messages": pending}, request)


def render_page(
    request: HttpRequest, template: str, context: dict[str, Any], *, status: int = 200
) -> HttpResponse:
    """The full page, or only its ``content`` partial when htmx targets ``#main``."""
    if wants_fragment(request, MAIN_TARGET):
        html = render_to_string(f"{template}#content", context, request)
        response = HttpResponse(html + messages_oob(request, replace=True), status=status)
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
