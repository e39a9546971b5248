"""The HTTP API: one NinjaAPI, one router per app, one error mapping.

Every error leaves here with the same JSON shape, ``{"detail": str, "code": str}``
(validation errors add ``errors``: one entry per offending field), whatever raised it:
a domain error from a service, ninja's own validation, authentication, a missing
object or a request body over ``API_MAX_BODY_BYTES``.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.operation import Operation
from ninja.parser import Parser
from pydantic import ValidationError as PydanticValidationError

from project import request_bodies, strict_json
from project.errors import DomainError
from project.middleware import DB_RETRY_AFTER_SECONDS, log_database_unavailable
from tasks_app.accounts.auth import api_auth

logger = logging.getLogger(__name__)


class EvidentiaAPI(NinjaAPI):
    def get_openapi_operation_id(self, operation: Operation) -> str:
        """``<app>_api_<function>``, whatever module of the app's API package the endpoint
        lives in, so generated clients keep their method names when modules move."""
        module = operation.view_func.__module__
        app = module.split(".")[0]
        return f"{app}_api_{operation.view_func.__name__}"


# Where the request guard leaves the body it parsed, for the parser below.
_PARSED_BODY = "_evidentia_parsed_json"


class StrictParser(Parser):
    """The body the request guard already parsed and checked (``strict_json``), so a body
    is parsed once; ``json.loads`` for any other request."""

    def parse_body(self, request: HttpRequest) -> Any:
        parsed = getattr(request, _PARSED_BODY, None)
        if parsed is not None:
            return parsed[0]
        return strict_json.loads(request.body, max_depth=settings.API_MAX_JSON_DEPTH)


api = EvidentiaAPI(
    parser=StrictParser(),
    title="Evidentia API",
    version="1",
    description=(
        "Tasks, feedback, runs, evidence, validations and replay. Authenticate with "
        "`Authorization: Bearer <token>` (create one on /account/ or with "
        "`manage.py create_api_token USER`) or a browser session (with the CSRF header "
        'for unsafe methods). Every error is `{"detail": ..., "code": ...}`.'
    ),
    urls_namespace="api-v1",
    docs_url="/docs",
    openapi_url="/openapi.json",
    auth=api_auth,
)

HTTP_ERROR_CODES = {
    400: "bad_request",
    401: "not_authenticated",
    403: "permission_denied",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "request_too_large",
    422: "invalid_input",
    429: "throttled",
}


def error_body(status: int, detail: str, code: str | None = None) -> dict[str, Any]:
    return {"detail": detail, "code": code or HTTP_ERROR_CODES.get(status, "error")}


def _too_large(request: HttpRequest, limit: int | None = None) -> HttpResponse:
    limit = limit or settings.API_MAX_BODY_BYTES
    return api.create_response(
        request,
        error_body(413, f"Request body is larger than the limit of {limit} bytes."),
        status=413,
    )


def _nul_path(value: Any, path: tuple[str, ...] = ()) -> tuple[str, ...] | None:
    """Where a NUL character hides in parsed JSON, if anywhere."""
    if isinstance(value, str):
        return path if "\x00" in value else None
    if isinstance(value, dict):
        for key, item in value.items():
            if "\x00" in str(key):
                return (*path, str(key))
            found = _nul_path(item, (*path, str(key)))
            if found is not None:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _nul_path(item, (*path, str(index)))
            if found is not None:
                return found
    return None


def _nul_refusal(request: HttpRequest, field: str) -> HttpResponse:
    message = "must not contain NUL characters"
    body = error_body(422, f"{field}: {message}", "validation_error")
    body["errors"] = [{"field": field, "message": message}]
    return api.create_response(request, body, status=422)


def _unsafe_json_refusal(request: HttpRequest, exc: strict_json.UnsafeJson) -> HttpResponse:
    body = error_body(422, str(exc), "validation_error")
    body["errors"] = [{"field": exc.field, "message": exc.problem}]
    return api.create_response(request, body, status=422)


_FORM_TYPES = ("multipart/form-data", "application/x-www-form-urlencoded")


def _strict_body(request: HttpRequest, raw: bytes) -> HttpResponse | None:
    """Parse a JSON body once with ``strict_json`` and keep it for the parser; a 422
    naming the field for NaN/Infinity, a lone surrogate or nesting over
    ``API_MAX_JSON_DEPTH``. A body that is not JSON is left to ninja (400)."""
    if request.META.get("CONTENT_TYPE", "").split(";", 1)[0].strip().lower() in _FORM_TYPES:
        return None
    try:
        parsed = strict_json.loads(raw, max_depth=settings.API_MAX_JSON_DEPTH)
    except strict_json.UnsafeJson as exc:
        return _unsafe_json_refusal(request, exc)
    except ValueError:
        return None
    setattr(request, _PARSED_BODY, (parsed,))
    if b"\x00" in raw or b"\\u0000" in raw:
        where = _nul_path(parsed)
        if where is not None:
            return _nul_refusal(request, ".".join(where) or "body")
    return None


def guard_request(run: Callable[..., Any]) -> Callable[..., Any]:
    """Refuse what must never reach a view, before auth or parsing.

    - A body over ``API_MAX_BODY_BYTES``: 413. Django raises ``RequestDataTooBig`` only
      when the body is read and only against ``DATA_UPLOAD_MAX_MEMORY_SIZE``; checking
      the declared length here keeps the API's own setting authoritative (the exception
      handler below covers the lazy case).
    - A NUL character in a query parameter or anywhere in a JSON body: 422 naming the
      field. PostgreSQL text and jsonb cannot store it, so it would otherwise surface as
      a database error (a 500) deep inside a query. Not on the OTLP endpoint, whose
      decoder replaces NUL itself and whose errors are google.rpc.Status.
    - NaN/Infinity, a lone surrogate or nesting deeper than ``API_MAX_JSON_DEPTH`` in a
      JSON body: 422 naming the field (``project.strict_json``), nothing stored. The
      OTLP endpoint refuses them in its own encoding (400).
    """

    @functools.wraps(run)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            declared = 0
        limit = request_bodies.body_limit(request)
        if declared > limit:
            return _too_large(request, limit)
        if declared and request_bodies.needs_own_reading(request):
            # External attempts (64 MB) and gzip bodies: read here, with the
            # endpoint's own limit applied to the decompressed bytes too.
            try:
                request_bodies.load_body(request, limit)
            except request_bodies.BodyTooLarge:
                return _too_large(request, limit)
            except request_bodies.BadContentEncoding as exc:
                return api.create_response(request, error_body(400, str(exc)), status=400)
        for name, values in request.GET.lists():
            if "\x00" in name or any("\x00" in v for v in values):
                return _nul_refusal(request, name.replace("\x00", ""))
        if (
            request.method in {"POST", "PUT", "PATCH", "DELETE"}
            and declared
            and not request_bodies.is_otlp(request)
        ):
            try:
                raw = request.body
            except RequestDataTooBig:
                return _too_large(request)
            refusal = _strict_body(request, raw)
            if refusal is not None:
                return refusal
        return run(request, *args, **kwargs)

    return wrapper


api.add_decorator(guard_request, mode="view")


@api.exception_handler(DomainError)
def domain_error(request: HttpRequest, exc: DomainError) -> HttpResponse:
    return api.create_response(
        request, {"detail": exc.message, "code": exc.code}, status=exc.http_status
    )


@api.exception_handler(OperationalError)
@api.exception_handler(InterfaceError)
def database_unavailable(request: HttpRequest, exc: Exception) -> HttpResponse:
    """The database is unreachable (restarting, connection cut): 503 with Retry-After,
    not a 500, and nothing was written (the request's transaction did not commit). A
    client retrying with the same Idempotency-Key gets one result."""
    log_database_unavailable(request, exc)
    response = api.create_response(
        request,
        error_body(503, "The database is unavailable; retry shortly.", "database_unavailable"),
        status=503,
    )
    response["Retry-After"] = str(DB_RETRY_AFTER_SECONDS)
    return response


def _field_name(loc: list[Any] | tuple[Any, ...]) -> str:
    # ninja prefixes the parameter source and, for a body or query schema, the view's
    # argument name ("payload", "query", "filters", "ninja_pagination"):
    # ("body", "payload", "plan", "nodes", 0, "role") -> "plan.nodes.0.role".
    parts = [str(p) for p in loc]
    if parts and parts[0] in {"body", "query", "path", "header", "cookie", "form", "file"}:
        source = parts[0]
        parts = parts[1:]
        if len(parts) > 1 and source in {"body", "query"}:
            parts = parts[1:]
    return ".".join(parts) or "body"


@api.exception_handler(ValidationError)
def validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    errors = [
        {"field": _field_name(err.get("loc", ())), "message": str(err.get("msg", "invalid"))}
        for err in exc.errors
    ]
    detail = "; ".join(f"{e['field']}: {e['message']}" for e in errors) or "Invalid input."
    body = error_body(422, detail, "validation_error")
    body["errors"] = errors
    return api.create_response(request, body, status=422)


@api.exception_handler(AuthenticationError)
def authentication_error(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    response = api.create_response(
        request,
        error_body(
            401,
            "Authentication required: send 'Authorization: Bearer <token>' or log in.",
        ),
        status=401,
    )
    response["WWW-Authenticate"] = "Bearer"
    return response


@api.exception_handler(HttpError)
def http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    return api.create_response(
        request, error_body(exc.status_code, exc.message), status=exc.status_code
    )


@api.exception_handler(Http404)
def not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    message = str(exc) or "Not found."
    return api.create_response(request, error_body(404, message), status=404)


@api.exception_handler(RequestDataTooBig)
def request_too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    return _too_large(request)


@api.exception_handler(SuspiciousOperation)
def suspicious_request(request: HttpRequest, exc: SuspiciousOperation) -> HttpResponse:
    # Django's refusals of a malformed request (too many form fields, ...): a 400 as
    # Django itself would answer, in our shape.
    return api.create_response(request, error_body(400, f"Bad request: {exc}"), status=400)


# What pydantic keeps of an exception raised while it read a response object's
# attribute (a relation loaded lazily): "OperationalError: ..." as text, the exception
# itself is gone.
_DATABASE_ERROR_PREFIXES = tuple(f"{cls.__name__}:" for cls in (OperationalError, InterfaceError))


def _database_lost_in(exc: PydanticValidationError) -> OperationalError | None:
    """The database error that kept the response from being built, when the database
    went away while its attributes were read (seen in the chaos drill: a backend
    terminated mid-request); None for any other validation failure."""
    for error in exc.errors():
        text = str(error.get("ctx", {}).get("error", ""))
        if error["type"] == "get_attribute_error" and text.startswith(_DATABASE_ERROR_PREFIXES):
            return OperationalError(text)
    return None


@api.exception_handler(Exception)
def unexpected_error(request: HttpRequest, exc: Exception) -> HttpResponse:
    if isinstance(exc, PydanticValidationError):
        lost = _database_lost_in(exc)
        if lost is not None:
            return database_unavailable(request, lost)
    # Still JSON and still the one shape; the traceback goes to the log, not the client.
    logger.exception("Unhandled error in %s %s", request.method, request.path)
    return api.create_response(
        request, error_body(500, "Internal server error.", "server_error"), status=500
    )


def api_not_found_view(request: HttpRequest, path: str = "") -> HttpResponse:
    """JSON 404 for any URL under /api/v1/ that matches no endpoint."""
    return api.create_response(
        request, error_body(404, f"No API endpoint at /api/v1/{path}"), status=404
    )


@api.get("/health", auth=None, tags=["meta"], summary="Liveness check")
def health(request: HttpRequest) -> dict[str, str]:
    return {"status": "ok"}


api.add_router("/", "tasks_app.api.routes.router")
api.add_router("/", "evidence_app.api.routes.router")
api.add_router("/", "evidence_app.api.judges.router")
