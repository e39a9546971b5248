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
