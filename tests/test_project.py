"""The project is consistent: checks pass, migrations match the models, roles exist."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.core.management import call_command


@pytest.mark.django_db
def test_manage_check_is_clean() -> None:
    call_command("check", fail_level="WARNING")


@pytest.mark.django_db
def test_migrations_match_models() -> None:
    call_command("makemigrations", check=True, dry_run=True, verbosity=0)


@pytest.mark.django_db
def test_role_groups_exist_after_migrate() -> None:
    assert set(Group.objects.values_list("name", flat=True)) >= {"reviewers", "operators"}


@pytest.mark.django_db
def test_home_page_requires_login_and_lists_own_tasks(client, requester, other_requester) -> None:
    """A2: requesters see only their tasks."""
    from tests.factories import TaskFactory

    TaskFactory(owner=requester, title="mine")
    TaskFactory(owner=other_requester, title="theirs")
    response = client.get("/")
    assert response.status_code == 302 and "/login/" in response["Location"]
    client.force_login(requester)
    body = client.get("/").content.decode()
    assert "mine" in body and "theirs" not in body


def test_kombu_no_hostname_notice_is_filtered_other_kombu_warnings_are_not(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 11 (clean make run output): kombu's "No hostname was supplied" notice for the
    host-less filesystem:// broker is dropped by the logging config; other warnings of
    the same logger still get through."""
    import logging

    from kombu import Connection

    with caplog.at_level("WARNING"):
        Connection("filesystem://").info()
        logging.getLogger("kombu.connection").warning("Secure redis scheme specified")
    messages = [r.getMessage() for r in caplog.records if r.name == "kombu.connection"]
    assert messages == ["Secure redis scheme specified"]


def test_env_example_lists_every_setting_with_its_meaning() -> None:
    """Issue 11: .env.example stays in step with project/settings.py: every variable the
    settings read is listed there, each with a comment saying what it means."""
    import re
    from pathlib import Path

    from django.conf import settings

    root = Path(settings.BASE_DIR)
    source = (root / "project" / "settings.py").read_text(encoding="utf-8")
    read = set(
        re.findall(r'env_(?:str|bool|int|float|list|json_dict)\(\s*"([A-Z0-9_]+)"', source)
    ) | set(re.findall(r'os\.environ\.get\(\s*"([A-Z0-9_]+)"', source))
    listed = {
        match.group(1): match.group(2)
        for match in re.finditer(
            r"^#? ?([A-Z0-9_]+)=.*?(#\s*\S.*)?$",
            (root / ".env.example").read_text(encoding="utf-8"),
            re.MULTILINE,
        )
    }
    assert len(read) > 40
    assert sorted(read - set(listed)) == []
    assert sorted(name for name in read if not listed[name]) == []


@pytest.mark.postgres(
    reason="the connection is pointed at a closed TCP port; SQLite opens a file, no server"
)
@pytest.mark.django_db(transaction=True)
def test_unreachable_database_answers_503_with_retry_after_not_500(client, requester) -> None:
    """Issue 17: while PostgreSQL cannot be reached (a restart, a cut connection) a page
    and an API call answer 503 with Retry-After (the API in its JSON error shape), and
    the next request after it is back works."""
    import socket

    from django.db import connection

    from tasks_app.accounts.auth import api_token_create

    token = api_token_create(user=requester, name="t")[1]
    client.force_login(requester)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed_port = s.getsockname()[1]  # nothing listens there once the socket closes
    real_port = connection.settings_dict["PORT"]
    connection.close()
    connection.settings_dict["PORT"] = closed_port
    try:
        page = client.get("/tasks/mine/")
        api = client.get("/api/v1/tasks", headers={"Authorization": f"Bearer {token}"})
    finally:
        connection.close()
        connection.settings_dict["PORT"] = real_port
    assert page.status_code == 503 and page["Retry-After"] == "5"
    assert "retry" in page.content.decode()
    assert api.status_code == 503 and api["Retry-After"] == "5"
    assert api.json()["code"] == "database_unavailable"
    assert client.get("/tasks/mine/").status_code == 200
