"""The API keeps its contract (issue 34 item 3, A4): the OpenAPI document is compared
with the last released one, committed in tests/api/openapi/released-v1.json; a change
that would break a client built on it fails unless the document's version changes or
docs/api-changelog.md names it. Part of the normal suite, so CI runs it."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from tests.api.openapi_contract import compare, unannounced

RELEASED = Path(__file__).parent / "openapi" / "released-v1.json"
CHANGELOG = Path(__file__).resolve().parents[2] / "docs" / "api-changelog.md"


@pytest.fixture
def current_document(db: Any) -> dict[str, Any]:
    response = Client().get("/api/v1/openapi.json")
    assert response.status_code == 200
    return response.json()


def breaking_changes_left(released: dict[str, Any], current: dict[str, Any], log: str) -> list[str]:
    """The breaking changes from ``released`` to ``current`` that neither a new version
    nor the changelog announces."""
    if current["info"]["version"] != released["info"]["version"]:
        return []
    breaks, _ = compare(released, current)
    return unannounced(breaks, log)


@pytest.mark.finding(34, 3)
def test_no_breaking_change_since_the_release_goes_unannounced(
    current_document: dict[str, Any],
) -> None:
    """Issue 34 finding 3: every change since the released document that would break a
    client comes with a new version or a changelog entry."""
    released = json.loads(RELEASED.read_text())
    breaks, additions = compare(released, current_document)
    print(f"since the release: {len(breaks)} breaking changes, {len(additions)} additions")
    left = breaking_changes_left(released, current_document, CHANGELOG.read_text())
    assert not left, "announce these in docs/api-changelog.md or change the version:\n" + (
        "\n".join(left)
    )


@pytest.mark.finding(34, 3)
def test_a_changed_default_fails_the_check_unless_announced(
    current_document: dict[str, Any],
) -> None:
    """Issue 34 finding 3: before, nothing in CI noticed that a decision through the API
    stopped applying at once (the feedback body's ``undo_seconds`` default changed). Now
    that change fails the check unless the changelog names it or the version changes; so
    do a removed field and a removed status."""
    released = json.loads(RELEASED.read_text())
    changed = copy.deepcopy(current_document)
    feedback = changed["components"]["schemas"]["FeedbackIn"]["properties"]
    feedback["undo_seconds"]["default"] = 30
    del changed["components"]["schemas"]["TaskListItemOut"]["properties"]["owner"]
    del changed["paths"]["/api/v1/tasks/{task_id}/feedback"]["post"]["responses"]["409"]

    left = breaking_changes_left(released, changed, "")
    text = "\n".join(left)
    assert "body.undo_seconds: default None became 30" in text
    assert "200.items[].owner: field removed" in text
    assert "POST /api/v1/tasks/{task_id}/feedback status 409: removed" in text

    announced = "\n".join(f"- `{line}`" for line in left)
    assert breaking_changes_left(released, changed, announced) == []
    changed["info"]["version"] = "2"
    assert breaking_changes_left(released, changed, "") == []
