"""Drill: brute force against the login form and /admin/login/ (Issue 24 item 5).

Failed logins are counted by account and by client address (django-axes); after
``LOGIN_FAILURE_LIMIT`` of them the right password is refused too, with a page that says
why, until the cool-off passes or an administrator unlocks. The API's bearer tokens are
not counted. Every request goes through the real login form with its CSRF token."""

from __future__ import annotations

import re
from io import StringIO
from typing import Any

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.core.management import call_command
from django.test import Client

from tasks_app.accounts.auth import api_token_create
from tests import factories
from tests.drills.support import report

pytestmark = [pytest.mark.drill, pytest.mark.finding(24, 5), pytest.mark.django_db]

PASSWORD = "pw-123456"  # tests.factories.UserFactory's
ATTACKER = "198.51.100.7"
ELSEWHERE = "203.0.113.9"


def _form_login(client: Client, url: str, username: str, password: str, address: str) -> Any:
    """Fill in and post the login form at ``url`` as a browser at ``address`` would."""
    page = client.get(url, REMOTE_ADDR=address)
    assert page.status_code == 200
    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page.content)
    assert token is not None
    return client.post(
        url,
        {
            "username": username,
            "password": password,
            "csrfmiddlewaretoken": token.group(1).decode(),
            "next": "/",
        },
        REMOTE_ADDR=address,
    )


def _login(username: str, password: str, address: str, url: str = "/login/") -> tuple[Any, bool]:
    """One login through the form in a fresh browser: the answer and whether it left a
    logged-in session."""
    client = Client(enforce_csrf_checks=True)
    response = _form_login(client, url, username, password, address)
    return response, "_auth_user_id" in client.session


def _fail(username: str, address: str, times: int, url: str = "/login/") -> None:
    for _ in range(times):
        _login(username, "wrong-password", address, url)


def test_wrong_passwords_then_the_right_one_is_refused_with_a_message(db: Any) -> None:
    """Issue 24 item 5: the probe sent 40 wrong passwords, then the right one, and was
    logged in. Now the limit's failure already answers the lockout page (429), and the
    right password after it opens no session."""
    factories.UserFactory(username="alice")
    limit = settings.LOGIN_FAILURE_LIMIT
    for attempt in range(1, limit):
        response, logged_in = _login("alice", "wrong-password", ATTACKER)
        assert response.status_code == 200, attempt  # the form again, with its error
        assert not logged_in
    response, _ = _login("alice", "wrong-password", ATTACKER)
    assert response.status_code == 429

    response, logged_in = _login("alice", PASSWORD, ATTACKER)
    assert response.status_code == 429
    assert not logged_in
    page = response.content.decode()
    assert "Too many failed logins for this account or from this address" in page
    assert "even with the right password" in page
    assert "ask an administrator to unlock" in page
    report("Login throttling", f"locked after {limit} wrong passwords; the right one refused")


def test_the_account_is_locked_from_every_address_and_the_address_for_every_account(
    db: Any,
) -> None:
    """Issue 24 item 5: throttled by account (a botnet guessing one password from many
    addresses) and by client address (one address guessing many accounts); an account
    and an address that took no part still log in."""
    factories.UserFactory(username="alice")
    factories.UserFactory(username="bob")
    factories.UserFactory(username="carol")
    _fail("alice", ATTACKER, settings.LOGIN_FAILURE_LIMIT)

    for username, address in (("alice", ELSEWHERE), ("bob", ATTACKER)):
        response, logged_in = _login(username, PASSWORD, address)
        assert (response.status_code, logged_in) == (429, False), (username, address)

    response, logged_in = _login("carol", PASSWORD, ELSEWHERE)
    assert response.status_code == 302
    assert logged_in


def test_failures_spread_over_accounts_from_one_address_lock_the_address(db: Any) -> None:
    """Issue 24 item 5: an address that tries one password on many accounts is stopped
    after the limit in total, not the limit per account."""
    names = [f"user-{n}" for n in range(settings.LOGIN_FAILURE_LIMIT + 1)]
    for name in names:
        factories.UserFactory(username=name)
    for name in names[:-1]:
        _login(name, "wrong-password", ATTACKER)
    response, logged_in = _login(names[-1], PASSWORD, ATTACKER)
    assert (response.status_code, logged_in) == (429, False)


def test_admin_login_is_throttled_too(db: Any) -> None:
    """Issue 24 item 5: /admin/login/ took 20 wrong passwords; it shares the count."""
    factories.UserFactory(username="root", is_staff=True, is_superuser=True)
    _fail("root", ATTACKER, settings.LOGIN_FAILURE_LIMIT, url="/admin/login/")

    client = Client(enforce_csrf_checks=True)
    response = _form_login(client, "/admin/login/", "root", PASSWORD, ATTACKER)
    assert response.status_code == 429
    assert "_auth_user_id" not in client.session
    assert Client().get("/admin/", REMOTE_ADDR=ATTACKER).status_code == 302


def test_an_administrator_unlocks_an_account_in_the_admin(db: Any) -> None:
    """Issue 24 item 5, the unlock path of docs/operations.md: the access attempts are
    listed in the admin; deleting them lets the account (and the address) in at once."""
    factories.UserFactory(username="alice")
    factories.UserFactory(username="root", is_staff=True, is_superuser=True)
    _fail("alice", ATTACKER, settings.LOGIN_FAILURE_LIMIT)
    assert _login("alice", PASSWORD, ATTACKER)[0].status_code == 429

    admin = Client()
    admin.force_login(factories.UserFactory(username="root"))
    listing = admin.get("/admin/axes/accessattempt/")
    assert listing.status_code == 200
    assert "alice" in listing.content.decode()
    ids = [
        str(pk)
        for pk in AccessAttempt.objects.filter(username="alice").values_list("pk", flat=True)
    ]
    assert ids
    response = admin.post(
        "/admin/axes/accessattempt/",
        {"action": "delete_selected", "_selected_action": ids, "post": "yes"},
    )
    assert response.status_code == 302
    assert not AccessAttempt.objects.filter(username="alice").exists()

    response, logged_in = _login("alice", PASSWORD, ATTACKER)
    assert (response.status_code, logged_in) == (302, True)


def test_axes_reset_username_unlocks_an_account_from_the_command_line(db: Any) -> None:
    """Issue 24 item 5: ``manage.py axes_reset_username NAME`` is the runbook's other
    unlock; another account's lock stays."""
    factories.UserFactory(username="alice")
    factories.UserFactory(username="bob")
    _fail("alice", ATTACKER, settings.LOGIN_FAILURE_LIMIT)
    _fail("bob", ELSEWHERE, settings.LOGIN_FAILURE_LIMIT)

    call_command("axes_reset_username", "alice", stdout=StringIO())

    response, logged_in = _login("alice", PASSWORD, ATTACKER)
    assert (response.status_code, logged_in) == (302, True)
    response, logged_in = _login("bob", PASSWORD, "192.0.2.44")
    assert (response.status_code, logged_in) == (429, False)


def test_api_tokens_work_while_their_owner_and_address_are_locked_out(db: Any) -> None:
    """Issue 24 item 5: the throttle counts passwords only; a bearer token from the
    locked address, of the locked account, is served as before."""
    alice = factories.UserFactory(username="alice")
    _, raw = api_token_create(user=alice)
    _fail("alice", ATTACKER, settings.LOGIN_FAILURE_LIMIT)
    assert _login("alice", PASSWORD, ATTACKER)[0].status_code == 429

    api = Client(headers={"Authorization": f"Bearer {raw}"})
    assert api.get("/api/v1/tasks", REMOTE_ADDR=ATTACKER).status_code == 200
    assert (
        Client(headers={"Authorization": "Bearer wrong"})
        .get("/api/v1/tasks", REMOTE_ADDR=ATTACKER)
        .status_code
        == 401
    )
    assert not AccessAttempt.objects.filter(username__isnull=True).exists()


def test_behind_a_proxy_the_forwarded_client_address_is_counted(db: Any, settings: Any) -> None:
    """Issue 24 item 5: with LOGIN_TRUSTED_PROXY_COUNT=1 every request comes from the
    proxy's address; the client is the address the proxy appended to X-Forwarded-For, so
    one client's failures lock that client, not everyone behind the proxy, and a client
    that writes its own X-Forwarded-For cannot choose a fresh address per try."""
    settings.LOGIN_TRUSTED_PROXY_COUNT = 1
    proxy = "10.0.0.2"
    factories.UserFactory(username="bob")
    names = [f"user-{n}" for n in range(settings.LOGIN_FAILURE_LIMIT)]
    for n, name in enumerate(names):
        factories.UserFactory(username=name)
        client = Client()
        client.post(
            "/login/",
            {"username": name, "password": "wrong-password"},
            REMOTE_ADDR=proxy,
            HTTP_X_FORWARDED_FOR=f"192.0.2.{n}, {ATTACKER}",
        )
    assert AccessAttempt.objects.filter(ip_address=ATTACKER).count() == len(names)

    def login(forwarded_for: str) -> int:
        client = Client()
        return client.post(
            "/login/",
            {"username": "bob", "password": PASSWORD},
            REMOTE_ADDR=proxy,
            HTTP_X_FORWARDED_FOR=forwarded_for,
        ).status_code

    assert login(f"192.0.2.200, {ATTACKER}") == 429
    assert login(ELSEWHERE) == 302


def test_successful_logins_are_not_counted_and_no_count_outlives_its_test(db: Any) -> None:
    """Issue 24 item 5: the suite logs in a lot (the browser tests through this form from
    127.0.0.1): successful logins, any number from one address, are never throttled; and
    the counts live in the test database, which each test rolls back (transactional tests
    flush it), so the lockouts of the tests above do not reach this one."""
    assert not AccessAttempt.objects.exists()
    for n in range(3 * settings.LOGIN_FAILURE_LIMIT):
        factories.UserFactory(username=f"user-{n}")
        response, logged_in = _login(f"user-{n}", PASSWORD, "127.0.0.1")
        assert (response.status_code, logged_in) == (302, True), n
    assert not AccessAttempt.objects.filter(failures_since_start__gt=0).exists()
