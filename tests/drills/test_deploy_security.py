"""Drill 8: production settings pass ``manage.py check --deploy`` and every response
carries the security headers (secure cookies, HSTS, CSP, nosniff, referrer policy)."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from typing import Any

import pytest
from django.conf import settings
from django.test import Client

from tests.drills.support import report

pytestmark = [pytest.mark.drill]

PRODUCTION_ENV = {
    "DEBUG": "0",
    "SECRET_KEY": secrets.token_urlsafe(64),
    "ALLOWED_HOSTS": "evidentia.example.com",
}


def production_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SECURE_", "SESSION_"))}
    env.pop("CSRF_COOKIE_SECURE", None)
    env.pop("TRUST_X_FORWARDED_PROTO", None)
    # Test runners set this for Playwright; it is never set in deployment (async.E001).
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    return {**env, **PRODUCTION_ENV, "DJANGO_SETTINGS_MODULE": "project.settings"}


def run_manage(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=settings.BASE_DIR,
        env=production_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_is_clean_with_production_settings() -> None:
    """Deployment checklist: no warning at all with DEBUG off, a long random key and a
    host list (HSTS with subdomains and preload, SSL redirect, secure cookies)."""
    result = run_manage("check", "--deploy", "--fail-level", "WARNING")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "System check identified no issues" in output, output
    report("check --deploy", "0 issues with DEBUG=0, random SECRET_KEY, ALLOWED_HOSTS set")


def test_production_settings_values() -> None:
    """The production values the headers come from, read in a fresh process."""
    code = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_SSL_REDIRECT, "
        "s.SECURE_HSTS_SECONDS, s.SECURE_HSTS_INCLUDE_SUBDOMAINS, s.SECURE_HSTS_PRELOAD, "
        "s.SESSION_COOKIE_HTTPONLY, s.DEBUG)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=settings.BASE_DIR,
        env=production_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "True",
        "True",
        "True",
        "31536000",
        "True",
        "True",
        "True",
        "False",
    ]


@pytest.mark.django_db
def test_responses_carry_security_headers(settings: Any, requester: Any) -> None:
    """Over HTTPS in production: HSTS, CSP (no inline script, no eval, no framing),
    nosniff, same-origin referrer policy, secure HttpOnly session cookie, secure CSRF
    cookie."""
    settings.DEBUG = False
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    settings.SECURE_HSTS_PRELOAD = True
    settings.SESSION_COOKIE_SECURE = True
    settings.CSRF_COOKIE_SECURE = True

    insecure = Client()
    response = insecure.get("/login/")
    assert response.status_code == 301 and response["Location"].startswith("https://")

    client = Client(enforce_csrf_checks=True)
    response = client.get("/login/", secure=True)
    assert response.status_code == 200
    assert response["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"
    csp = response["Content-Security-Policy"]
    directives = dict(
        (part.split(" ", 1) + [""])[:2] for part in (p.strip() for p in csp.split(";")) if part
    )
    assert directives["default-src"] == "'self'"
    assert directives["script-src"] == "'self'"  # no 'unsafe-inline', no 'unsafe-eval'
    assert directives["object-src"] == "'none'" and directives["frame-ancestors"] == "'none'"
    assert directives["base-uri"] == "'none'" and directives["form-action"] == "'self'"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["X-Frame-Options"] == "DENY"
    csrf_cookie = response.cookies[settings.CSRF_COOKIE_NAME]
    assert csrf_cookie["secure"] and csrf_cookie["samesite"] == "Lax"

    token = csrf_cookie.value
    response = client.post(
        "/login/",
        {"username": "alice", "password": "pw-123456", "csrfmiddlewaretoken": token},
        secure=True,
        headers={"Referer": "https://testserver/login/"},
    )
    assert response.status_code == 302
    session_cookie = response.cookies[settings.SESSION_COOKIE_NAME]
    assert session_cookie["secure"] and session_cookie["httponly"]
    assert session_cookie["samesite"] == "Lax"
    report(
        "security headers",
        "HSTS 1y+subdomains+preload, CSP script-src 'self' (no inline/eval), nosniff, "
        "same-origin referrer, Secure+HttpOnly session cookie, Secure CSRF cookie, http->https",
    )


@pytest.mark.django_db
def test_development_mode_still_serves_plain_http(client: Client) -> None:
    """make run (DEBUG=1, http://127.0.0.1) keeps working: no redirect to https, no
    HSTS, cookies without Secure, but the CSP is there."""
    from django.conf import settings as live

    # Import-time values for DEBUG=1 (the test process; pytest-django turns DEBUG off later).
    assert not live.SECURE_SSL_REDIRECT and not live.SESSION_COOKIE_SECURE
    assert live.SECURE_HSTS_SECONDS == 0
    response = client.get("/login/")
    assert response.status_code == 200
    assert "Strict-Transport-Security" not in response
    assert "Content-Security-Policy" in response
