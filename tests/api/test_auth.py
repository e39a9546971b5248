"""API authentication: bearer tokens, sessions with CSRF, the token command and the
account page (A2, A3)."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from tasks_app.accounts.auth import api_token_create
from tasks_app.models import ApiToken, Task, hash_token
from tests.factories import TaskFactory

pytestmark = pytest.mark.django_db


def test_requests_without_credentials_get_401_in_the_error_shape(db: Any) -> None:
    """A2, A3: anonymous requests are refused with 401 and {detail, code}."""
    for method, url in (("get", "/api/v1/tasks"), ("post", "/api/v1/tasks")):
        response = getattr(Client(), method)(url, {}, content_type="application/json")
        assert response.status_code == 401
        assert response.json()["code"] == "not_authenticated"
        assert response["WWW-Authenticate"] == "Bearer"
    assert Client().get("/api/v1/health").status_code == 200


def test_bearer_token_authenticates_and_records_last_use(requester: Any) -> None:
    """A2: a valid token authenticates its user; only its hash is stored; last_used_at
    is set on use."""
    token, raw = api_token_create(user=requester, name="script")
    assert token.key_hash == hash_token(raw)
    assert raw not in {token.key_hash, token.prefix}
    assert token.last_used_at is None
    client = Client(headers={"Authorization": f"Bearer {raw}"})
    assert client.get("/api/v1/me").json()["username"] == "alice"
    token.refresh_from_db()
    assert token.last_used_at is not None


@pytest.mark.parametrize("header", ["Bearer evd_not-a-real-token", "Bearer ", "Basic abc", "evd_x"])
def test_wrong_tokens_are_401(requester: Any, header: str) -> None:
    """A2: unknown tokens and other schemes are refused."""
    response = Client(headers={"Authorization": header}).get("/api/v1/tasks")
    assert response.status_code == 401
    assert response.json()["code"] == "not_authenticated"


def test_revoked_token_is_refused(requester: Any) -> None:
    """A2: tokens are revocable; a revoked one is a 401."""
    token, raw = api_token_create(user=requester)
    client = Client(headers={"Authorization": f"Bearer {raw}"})
    assert client.get("/api/v1/tasks").status_code == 200
    token.revoked_at = timezone.now()
    token.save(update_fields=["revoked_at"])
    assert client.get("/api/v1/tasks").status_code == 401


def test_token_of_inactive_user_is_refused(requester: Any) -> None:
    """A2: deactivating a user disables their tokens."""
    _, raw = api_token_create(user=requester)
    requester.is_active = False
    requester.save(update_fields=["is_active"])
    assert Client(headers={"Authorization": f"Bearer {raw}"}).get("/api/v1/me").status_code == 401


def test_session_auth_reads_and_writes_with_csrf(requester: Any) -> None:
    """A2: the UI's session works for the API; unsafe methods need the CSRF token, as
    with ninja's django_auth."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(requester)
    assert client.get("/api/v1/me").json()["username"] == "alice"

    refused = client.post("/api/v1/tasks", {"request": "Hi"}, content_type="application/json")
    assert refused.status_code == 403
    assert refused.json()["code"] == "permission_denied"
    assert "CSRF" in refused.json()["detail"]
    assert not Task.objects.exists()

    client.get("/account/")  # sets the csrftoken cookie
    csrf = client.cookies["csrftoken"].value
    accepted = client.post(
        "/api/v1/tasks",
        {"request": "Hi"},
        content_type="application/json",
        headers={"X-CSRFToken": csrf},
    )
    assert accepted.status_code == 201, accepted.content


def test_bearer_requests_need_no_csrf(requester: Any) -> None:
    """A2: programs with a token are not subject to CSRF."""
    _, raw = api_token_create(user=requester)
    client = Client(enforce_csrf_checks=True, headers={"Authorization": f"Bearer {raw}"})
    response = client.post("/api/v1/tasks", {"request": "Hi"}, content_type="application/json")
    assert response.status_code == 201


def test_create_api_token_command_prints_a_working_token(requester: Any) -> None:
    """A2: `manage.py create_api_token USER` prints a token that authenticates."""
    out = StringIO()
    call_command("create_api_token", "alice", "--name", "ci", stdout=out)
    raw = out.getvalue().strip()
    assert raw.startswith("evd_")
    assert ApiToken.objects.get(user=requester).name == "ci"
    client = Client(headers={"Authorization": f"Bearer {raw}"})
    assert client.get("/api/v1/me").json()["username"] == "alice"


def test_create_api_token_command_refuses_unknown_user(db: Any) -> None:
    """A2: a clear error for a user that does not exist."""
    with pytest.raises(CommandError, match="No user named 'nobody'"):
        call_command("create_api_token", "nobody", stdout=StringIO())


def test_account_page_creates_a_token_shown_once_and_revokes_it(requester: Any) -> None:
    """A2: the account page lists tokens, shows a new raw token exactly once, and
    revokes it."""
    client = Client()
    client.force_login(requester)
    assert client.get("/account/").status_code == 200

    response = client.post("/account/tokens/", {"name": "laptop"}, follow=True)
    assert response.status_code == 200
    token = ApiToken.objects.get(user=requester)
    page = response.content.decode()
    raw = page.split('id="new-token-value">')[1].split("<")[0]
    assert hash_token(raw) == token.key_hash
    assert "laptop" in page
    assert raw not in client.get("/account/").content.decode()  # shown once

    api = Client(headers={"Authorization": f"Bearer {raw}"})
    assert api.get("/api/v1/me").status_code == 200
    response = client.post(f"/account/tokens/{token.pk}/revoke/", follow=True)
    assert response.status_code == 200
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert api.get("/api/v1/me").status_code == 401


def test_account_page_cannot_revoke_someone_elses_token(
    requester: Any, other_requester: Any
) -> None:
    """A2: a token belongs to its user only."""
    token, _ = api_token_create(user=other_requester)
    client = Client()
    client.force_login(requester)
    assert client.post(f"/account/tokens/{token.pk}/revoke/").status_code == 404
    token.refresh_from_db()
    assert token.revoked_at is None


def test_account_page_needs_login(db: Any) -> None:
    """A2: anonymous visitors are sent to the login page."""
    response = Client().get("/account/")
    assert response.status_code == 302
    assert "/login/" in response["Location"]


def test_token_user_sees_only_their_tasks(requester: Any, other_requester: Any) -> None:
    """A2: a token acts as its user, with that user's object permissions."""
    TaskFactory(owner=other_requester)
    _, raw = api_token_create(user=requester)
    client = Client(headers={"Authorization": f"Bearer {raw}"})
    assert client.get("/api/v1/tasks").json()["count"] == 0


def test_account_page_showing_a_new_token_or_webhook_secret_is_not_stored(
    requester: Any, settings: Any
) -> None:
    """The page that shows a new API token or webhook secret once says Cache-Control:
    no-store, so no browser or proxy cache keeps the secret."""
    settings.WEBHOOK_ALLOW_PRIVATE = True
    client = Client()
    client.force_login(requester)
    shown = client.post("/account/tokens/", {"name": "laptop"}, follow=True)
    assert 'id="new-token-value">' in shown.content.decode()
    assert "no-store" in shown["Cache-Control"]
    created = client.post(
        "/account/webhooks/", {"url": "http://127.0.0.1:9/hook", "events": ["task.closed"]}
    )
    assert created.status_code == 302
    page = client.get("/account/")
    assert "whsec_" in page.content.decode()
    assert "no-store" in page["Cache-Control"]
