"""Project-wide middleware."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import DatabaseError, InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.cache import add_never_cache_headers

from project.errors import first_line

log = logging.getLogger(__name__)


class RequestTooLargeMiddleware:
    """Answer 413 to a page request whose body is over ``DATA_UPLOAD_MAX_MEMORY_SIZE``.
    Django itself turns an oversized body into a 400 and only once a view or the
    CSRF check reads it; the declared length is refused here, before anything reads it,
    and a body that turns out too big while a view reads it gets 413 as well. The API
    (/api/) keeps its own guard, which answers in its JSON error shape."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith("/api/"):
            try:
                declared = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                declared = 0
            limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
            if limit is not None and declared > limit:
                return self.too_large()
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, RequestDataTooBig) and not request.path.startswith("/api/"):
            return self.too_large()
        return None

    @staticmethod
    def too_large() -> HttpResponse:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return HttpResponse(
            f"Request body too large (the limit is {limit} bytes).\n",
            status=413,
            content_type="text/plain; charset=utf-8",
        )


# How long a client should wait before retrying while the database is unreachable.
DB_RETRY_AFTER_SECONDS = 5


def log_database_unavailable(request: HttpRequest, exc: Exception) -> None:
    """The one WARNING line of a request answered 503 because the database is away."""
    log.warning(
        "database unavailable: %s %s answered 503 (%s)",
        request.method,
        request.path,
        first_line(exc),
    )


class DatabaseUnavailableMiddleware:
    """A page whose database is unreachable (restarting, connection cut) answers 503
    with Retry-After and says so, not a 500 with a traceback in the log: one WARNING
    line. The API answers the same in its JSON error shape (project.api)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            return self.get_response(request)
        except (OperationalError, InterfaceError) as exc:
            return self.unavailable(request, exc)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, OperationalError | InterfaceError):
            return self.unavailable(request, exception)
        return None

    def unavailable(self, request: HttpRequest, exc: Exception) -> HttpResponse:
        log_database_unavailable(request, exc)
        response = HttpResponse(
            "The service cannot reach its database right now; retry in a few seconds.\n",
            status=503,
            content_type="text/plain; charset=utf-8",
        )
        response["Retry-After"] = str(DB_RETRY_AFTER_SECONDS)
        return response


class PrivateResponsesMiddleware:
    """``Cache-Control: no-store`` (Django's ``never_cache`` headers) on every API answer
    and on every page answered to a signed-in person: they hold someone's tasks, answers
    and evidence, which no browser or shared cache may keep. Static files and the
    anonymous pages (login) keep their own headers."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if request.path.startswith(f"/{settings.STATIC_URL.lstrip('/')}"):
            return response
        if request.path.startswith("/api/") or _signed_in(request):
            add_never_cache_headers(response)
        return response


def _signed_in(request: HttpRequest) -> bool:
    """Whether a person is signed in; True when the session cannot be read (the database
    is down and the answer is the 503 page): no-store is the safe side."""
    user = getattr(request, "user", None)
    try:
        return user is not None and bool(user.is_authenticated)
    except DatabaseError:
        return True


class ApiMethodNotAllowedMiddleware:
    """An API address asked with a method it does not take (``PATCH /api/v1/tasks/5``)
    answers 405 in the API's JSON error shape, with its ``Allow`` header, instead of the
    plain text django-ninja answers with."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            response.status_code != 405
            or not request.path.startswith("/api/")
            or response.get("Content-Type", "").startswith("application/json")
        ):
            return response
        allowed = response.get("Allow", "")
        answer = JsonResponse(
            {
                "detail": f"{request.method} is not allowed here; allowed: {allowed}.",
                "code": "method_not_allowed",
            },
            status=405,
        )
        if allowed:
            answer["Allow"] = allowed
        return answer
