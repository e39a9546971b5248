"""``/health``, ``/ready`` and ``/metrics``.

``ProbeMiddleware`` answers these three paths itself, first in the middleware chain:
a probe needs no session, user, CSRF or host-name check (a load balancer or kubelet
often calls with an IP as Host), and ``/health`` must answer even when the database is
gone. ``SECURE_SSL_REDIRECT`` does not apply to them (probes speak plain HTTP).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
from collections.abc import Callable
from importlib import import_module

from django.conf import settings
from django.contrib.auth import get_user
from django.http import HttpRequest, HttpResponse, JsonResponse
from prometheus_client import CONTENT_TYPE_LATEST

from project.health import run_checks
from project.metrics import render_metrics
from project.roles import is_operator

logger = logging.getLogger(__name__)

__all__ = ["ProbeMiddleware", "health", "metrics", "ready"]


def health(request: HttpRequest) -> HttpResponse:
    """Liveness: the process answers. No dependency is touched."""
    return JsonResponse({"status": "ok"})


def ready(request: HttpRequest) -> HttpResponse:
    """Readiness: 200 when every check passes, else 503. An anonymous caller learns only
    that (``{"status": "ready"|"not ready"}``); the checks and their details (broker
    path, worker and queue counts, error lines) are shown only to a staff user's session
    or a caller with the metrics token (as ``manage.py check_health`` shows them)."""
    checks = run_checks()
    failing = [c.name for c in checks if not c.ok]
    body: dict[str, object]
    if details_allowed(request):
        body = {
            "status": "ok" if not failing else "unavailable",
            "failing": failing,
            "checks": [c.as_dict() for c in checks],
        }
    else:
        body = {"status": "not ready" if failing else "ready"}
    response = HttpResponse(
        json.dumps(body, indent=2) + "\n",
        content_type="application/json",
        status=503 if failing else 200,
    )
    response["Cache-Control"] = "no-store"
    return response


def bearer_token_matches(request: HttpRequest) -> bool:
    """``Authorization: Bearer <METRICS_TOKEN>``, with a token set."""
    token = settings.METRICS_TOKEN
    header = request.headers.get("Authorization", "")
    if not token or not header.startswith("Bearer "):
        return False
    return hmac.compare_digest(header.removeprefix("Bearer ").strip(), token)


def staff_session(request: HttpRequest) -> bool:
    """The session cookie belongs to an active staff user (Django staff or an operator).
    Probes run before the session middleware, so the session is read here; when it
    cannot be read (database down) the caller counts as anonymous."""
    key = request.COOKIES.get(settings.SESSION_COOKIE_NAME)
    if not key:
        return False
    try:
        request.session = import_module(settings.SESSION_ENGINE).SessionStore(key)
        user = get_user(request)
        return bool(user.is_active and (user.is_staff or is_operator(user)))
    except Exception:  # noqa: BLE001 - a probe never fails on a session it cannot read
        logger.debug("/ready: session unreadable, answering as anonymous", exc_info=True)
        return False


def details_allowed(request: HttpRequest) -> bool:
    return bearer_token_matches(request) or staff_session(request)


def metrics_allowed(request: HttpRequest) -> bool:
    """With METRICS_TOKEN set, only a bearer token equal to it: a proxy on the same host
    must not make /metrics public. Without a token, a peer address inside
    METRICS_ALLOWED_NETWORKS. The peer is REMOTE_ADDR, never a forwarded header."""
    if settings.METRICS_TOKEN:
        return bearer_token_matches(request)
    try:
        peer = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    return any(peer in network for network in settings.METRICS_NETWORKS)


def metrics(request: HttpRequest) -> HttpResponse:
    if not metrics_allowed(request):
        return HttpResponse(
            "Forbidden: /metrics needs the METRICS_TOKEN bearer token (when one is set),"
            " else an address in METRICS_ALLOWED_NETWORKS.\n",
            status=403,
            content_type="text/plain; charset=utf-8",
        )

    return HttpResponse(render_metrics(), content_type=CONTENT_TYPE_LATEST)


ROUTES: dict[str, Callable[[HttpRequest], HttpResponse]] = {
    "/health": health,
    "/ready": ready,
    "/metrics": metrics,
}


class ProbeMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        view = ROUTES.get(request.path.rstrip("/") or "/")
        if view is None:
            return self.get_response(request)
        if request.method not in {"GET", "HEAD"}:
            return HttpResponse(status=405, headers={"Allow": "GET, HEAD"})
        # Inside Django's handler: request_started/finished manage the connections.
        return view(request)
