"""The client address that login throttling (django-axes) counts failures against."""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.http import HttpRequest


def client_address(request: HttpRequest) -> str:
    """The peer address, or with ``LOGIN_TRUSTED_PROXY_COUNT`` = N the Nth address from the
    right of ``X-Forwarded-For``: each trusted proxy appends the address it saw, so the
    addresses left of those are the client's to choose and never counted. A header too
    short or not an address falls back to the peer, which is then the proxy itself."""
    peer = request.META.get("REMOTE_ADDR", "") or ""
    count = settings.LOGIN_TRUSTED_PROXY_COUNT
    if count <= 0:
        return peer
    hops = [hop.strip() for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    if len(hops) < count:
        return peer
    candidate = hops[-count]
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:
        return peer
