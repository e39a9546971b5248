"""API authentication: bearer tokens for programs, the Django session for the UI.

Tokens are stored as a SHA-256 hash (``ApiToken.key_hash``); the raw value is shown to
its owner once, at creation. A revoked token, or one whose user is inactive, is refused.
Session authentication checks CSRF on unsafe methods exactly as ninja's ``django_auth``
does, but only once it knows a session user exists, so an anonymous request gets a 401
rather than a CSRF complaint.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.http import HttpRequest
from django.utils import timezone
from ninja.errors import AuthorizationError
from ninja.security import APIKeyCookie, HttpBearer
from ninja.utils import check_csrf

from project.errors import InvalidInput
from tasks_app.accounts.models import ApiToken, hash_token

# Writing last_used_at on every request would turn each read into a write; once a
# minute is precise enough to tell a live token from a forgotten one.
LAST_USED_RESOLUTION = timedelta(seconds=60)


class BearerTokenAuth(HttpBearer):
    """``Authorization: Bearer <token>`` checked against the stored hash."""

    def authenticate(self, request: HttpRequest, token: str) -> Any:
        token = token.strip()
        if not token:
            return None
        api_token = (
            ApiToken.objects.select_related("user")
            .filter(key_hash=hash_token(token), revoked_at__isnull=True)
            .first()
        )
        if api_token is None or not api_token.user.is_active:
            return None
        now = timezone.now()
        if api_token.last_used_at is None or now - api_token.last_used_at > LAST_USED_RESOLUTION:
            ApiToken.objects.filter(pk=api_token.pk).update(last_used_at=now)
        request.user = api_token.user
        # Webhooks registered with a token stop when it is revoked.
        request.api_token = api_token  # type: ignore[attr-defined]
        return api_token.user


class SessionAuth(APIKeyCookie):
    """The browser session (the UI's htmx calls), with CSRF on unsafe methods."""

    param_name: str = settings.SESSION_COOKIE_NAME

    def _get_key(self, request: HttpRequest) -> str | None:
        return request.COOKIES.get(self.param_name)

    def authenticate(self, request: HttpRequest, key: str | None) -> Any:
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return None
        if self.csrf and not getattr(request, "_ninja_csrf_exempt", False):
            if check_csrf(request):
                raise AuthorizationError(
                    message="CSRF check failed: send the X-CSRFToken header with the session."
                )
        return user


api_auth = [BearerTokenAuth(), SessionAuth()]


@transaction.atomic
def api_token_create(*, user: Any, name: str = "default") -> tuple[ApiToken, str]:
    """Create a token for ``user``; returns the row and the raw token (shown once)."""
    name = (name or "").strip() or "default"
    if len(name) > 100:
        raise InvalidInput("name: at most 100 characters")
    raw = ApiToken.generate_raw()
    token = ApiToken.objects.create(user=user, name=name, prefix=raw[:12], key_hash=hash_token(raw))
    return token, raw


@transaction.atomic
def api_token_revoke(*, token_id: int, user: Any) -> ApiToken:
    """Revoke one of ``user``'s tokens; revoking twice is harmless."""
    token = ApiToken.objects.select_for_update().get(pk=token_id, user=user)
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token
