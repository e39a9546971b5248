"""``/health``, ``/ready`` and ``/metrics`` (issue 18).

``ProbeMiddleware`` answers these three paths itself, first in the middleware chain:
a probe needs no session, user, CSRF or host-name check (a load balancer or kubelet
often calls with an IP as Host), and ``/health`` must answer even when the database is
gone. ``SECURE_SSL_REDIRECT`` does not apply to them (probes speak plain HTTP).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from prometheus_client import CONTENT_TYPE_LATEST

from project.health import run_checks
from project.metrics import render_metrics

__all__ = ["ProbeMiddleware", "health", "metrics", "ready"]


def health(request: HttpRequest) -> HttpResponse:
    """Liveness: the process answers. No dependency is touched."""
    return JsonResponse({"status": "ok"})


def ready(request: HttpRequest) -> HttpResponse:
    """Readiness: 200 when every check passes, else 503 naming the failing checks."""
    checks = run_checks()
    failing = [c.name for c in checks if not c.ok]
    body = {
        "status": "ok" if not failing else "unavailable",
        "failing": failing,
        "checks": [c.as_dict() for c in checks],
    }
    response = HttpResponse(
        json.dumps(body, indent=2) + "\n",
        content_type="application/json",
        status=503 if failing else 200,
    )
    response["Cache-Control"] = "no-store"
    return response


def metrics_allowed(request: HttpRequest) -> bool:
    """A bearer token equal to METRICS_TOKEN (when set), or a peer address inside
    METRICS_ALLOWED_NETWORKS. The peer is REMOTE_ADDR, never a forwarded header."""
    token = settings.METRICS_TOKEN
    header = request.headers.get("Authorization", "")
    if token and header.startswith("Bearer "):
        return hmac.compare_digest(header.removeprefix("Bearer ").strip(), token)
    try:
        peer = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    return any(peer in network for network in settings.METRICS_NETWORKS)


def metrics(request: HttpRequest) -> HttpResponse:
    if not metrics_allowed(request):
        return HttpResponse(
            "Forbidden: /metrics needs METRICS_TOKEN or an address in METRICS_ALLOWED_NETWORKS.\n",
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
