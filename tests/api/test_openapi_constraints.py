"""The OpenAPI document states the rules the API enforces (issue 11): a request the
document forbids is refused, and one it allows is not refused for an unstated reason."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from tasks_app.models import Task

pytestmark = pytest.mark.django_db


@pytest.fixture
def schemas(db: Any) -> dict[str, Any]:
    return Client().get("/api/v1/openapi.json").json()["components"]["schemas"]


@pytest.mark.parametrize(
    "plan",
    [
        {"kind": "team", "max_tool_iterations": False, "nodes": [{"id": "a", "role": "r"}]},
        {"kind": "single", "max_tool_iterations": "3"},
        {"kind": "team", "nodes": [{"id": "a", "role": "r", "max_tool_iterations": 1.5}]},
    ],
)
def test_plan_numbers_of_the_wrong_json_type_are_refused(alice: Client, plan: Any) -> None:
    """Issue 11: the schema says integer, so false, "3" and 1.5 are 422, and no task is made."""
    response = alice.post("/api/v1/tasks", {"request": "r", "plan": plan}, "application/json")
    assert response.status_code == 422
    assert "max_tool_iterations" in response.json()["detail"]
    assert not Task.objects.exists()


def test_feedback_flags_of_the_wrong_json_type_are_refused(alice: Client, requester: Any) -> None:
    """Issue 11: force is a boolean, expected_version an integer (no "true", no "1")."""
    task = Task.objects.create(owner=requester, request="r", status="awaiting_feedback")
    for body in (
        {"action": "satisfied", "force": "true"},
        {"action": "satisfied", "expected_version": "0"},
    ):
        response = alice.post(f"/api/v1/tasks/{task.pk}/feedback", body, "application/json")
        assert response.status_code == 422
    task.refresh_from_db()
    assert task.status == "awaiting_feedback"


def test_the_stated_text_patterns_are_the_rules_the_api_applies(
    alice: Client, schemas: dict[str, Any]
) -> None:
    """Issue 11: NUL characters and blank requests are refused, and the document's
    patterns say so; text with ordinary whitespace around it is accepted."""
    request_pattern = schemas["TaskCreateIn"]["properties"]["request"]["pattern"]
    title_pattern = schemas["TaskCreateIn"]["properties"]["title"]["pattern"]
    for blank in (" ", "\t\n", "\u3000", "\x1c"):
        assert not re.search(request_pattern, blank)
        response = alice.post("/api/v1/tasks", {"request": blank}, "application/json")
        assert response.status_code == 422
    assert not re.search(title_pattern, "a\x00b")
    response = alice.post("/api/v1/tasks", {"request": "r", "title": "a\x00b"}, "application/json")
    assert response.status_code == 422
    assert not Task.objects.exists()
    assert re.search(request_pattern, "  spaced  ")
    response = alice.post("/api/v1/tasks", {"request": "  spaced  "}, "application/json")
    assert response.status_code == 201


def test_a_revision_needs_a_comment_in_the_document_and_in_the_api(
    alice: Client, requester: Any, schemas: dict[str, Any]
) -> None:
    """S5, issue 11: the FeedbackIn schema says revise requires a non-blank comment."""
    rule = schemas["FeedbackIn"]
    assert rule["if"]["properties"]["action"]["const"] == "revise"
    assert "comment" in rule["then"]["required"]
    assert not re.search(rule["then"]["properties"]["comment"]["pattern"], "   ")
    task = Task.objects.create(owner=requester, request="r", status="awaiting_feedback")
    response = alice.post(
        f"/api/v1/tasks/{task.pk}/feedback",
        {"action": "revise", "comment": "  "},
        "application/json",
    )
    assert response.status_code == 422
    task.refresh_from_db()
    assert task.status == "awaiting_feedback"


def test_the_replay_model_pattern_needs_a_provider_prefix(schemas: dict[str, Any]) -> None:
    """Issue 11: the model name the replay endpoint resolves is provider:name."""
    pattern = schemas["ReplayIn"]["properties"]["model"]["pattern"]
    assert re.search(pattern, "openai:gpt-4.1")
    assert re.search(pattern, "")
    assert not re.search(pattern, "gpt-4.1")


def test_a_second_model_is_a_model_name_or_none_in_the_document(schemas: dict[str, Any]) -> None:
    """Issue 27: a task's second_model is '' (the setting), 'none' (off) or provider:name;
    the document says so, so a generator's made-up name is schema-invalid, not a
    schema-valid request the API refuses (schemathesis found one)."""
    pattern = schemas["TaskCreateIn"]["properties"]["second_model"]["pattern"]
    for accepted in ("", "none", " None ", "offline:judge-corroborating", "openai:gpt-4.1"):
        assert re.search(pattern, accepted), accepted
    for refused in ("gpt-4.1", "nobody", "none:", ":x"):
        assert not re.search(pattern, refused), refused


@pytest.mark.finding(24, 14)
def test_every_free_form_input_object_says_its_keys_hold_no_nul(
    schemas: dict[str, Any],
) -> None:
    """Issue "Guarantees" (14): a NUL character in a key of a free-form object is refused
    with 422 like one in a value, so every input schema's free-form object says so
    (schemathesis found a schema-valid body refused for it)."""
    free_form = [
        (name, field)
        for name, schema in schemas.items()
        if name.endswith("In")
        for field, prop in (schema.get("properties") or {}).items()
        if prop.get("type") == "object" and "properties" not in prop
    ]
    assert free_form, "no free-form input object found"
    for name, field in free_form:
        prop = schemas[name]["properties"][field]
        assert prop.get("propertyNames") == {"pattern": "^[^\\x00]*$"}, (name, field)
