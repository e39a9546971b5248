"""The HTTP API (SPEC A): one NinjaAPI, one router per app, one error mapping."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI

from tasks_app.errors import DomainError

api = NinjaAPI(
    title="Evidentia API",
    version="1",
    urls_namespace="api-v1",
    docs_url="/docs",
    openapi_url="/openapi.json",
)


@api.exception_handler(DomainError)
def domain_error(request: HttpRequest, exc: DomainError) -> HttpResponse:
    return api.create_response(
        request, {"detail": exc.message, "code": exc.code}, status=exc.http_status
    )


@api.get("/health", auth=None, tags=["meta"], summary="Liveness check")
def health(request: HttpRequest) -> dict[str, str]:
    return {"status": "ok"}
