"""One JSON error shape for every refusal; big bodies get 413, never a 500 (A3)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from tasks_app.models import Task

pytestmark = pytest.mark.django_db


def test_body_over_the_configured_limit_is_413_and_writes_nothing(
    alice: Client, settings: Any
) -> None:
    """A3: a body larger than API_MAX_BODY_BYTES is refused with 413 before parsing."""
    settings.API_MAX_BODY_BYTES = 2048
    payload = json.dumps({"request": "x" * 5000})
    response = alice.post("/api/v1/tasks", payload, content_type="application/json")
    assert response.status_code == 413
    body = response.json()
    assert body["code"] == "request_too_large"
    assert "2048" in body["detail"]
    assert not Task.objects.exists()

    small = alice.post(
        "/api/v1/tasks", json.dumps({"request": "hi"}), content_type="application/json"
    )
    assert small.status_code == 201


def test_djangos_lazy_request_data_too_big_becomes_a_json_413(alice: Client, settings: Any) -> None:
    """A3: when Django's own limit trips while the body is read (RequestDataTooBig),
    the client still gets a JSON 413, not a 400 page or a 500."""
    settings.API_MAX_BODY_BYTES = 10 * 1024 * 1024
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024
    payload = json.dumps({"request": "x" * 5000})
    response = alice.post("/api/v1/tasks", payload, content_type="application/json")
    assert response.status_code == 413
    assert response.json()["code"] == "request_too_large"
    assert not Task.objects.exists()


def test_big_form_body_with_session_auth_is_413(requester: Any, settings: Any) -> None:
    """A3: the CSRF check of session auth reads form bodies; an oversized one there is
    a 413 too."""
    settings.API_MAX_BODY_BYTES = 10 * 1024 * 1024
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024
    client = Client(enforce_csrf_checks=True)
    client.force_login(requester)
    client.get("/account/")  # the CSRF cookie, so the check goes on to read the form
    response = client.post("/api/v1/tasks", {"request": "x" * 5000})
    assert response.status_code == 413
    assert response.json()["code"] == "request_too_large"


def test_malformed_json_is_400_in_the_error_shape(alice: Client) -> None:
    """A3: a body that is not JSON is a 400 with {detail, code}."""
    response = alice.post("/api/v1/tasks", "{not json", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["code"] == "bad_request"


def test_unknown_api_url_is_a_json_404(alice: Client) -> None:
    """A3: URLs under /api/v1/ that match nothing answer JSON, not an HTML page."""
    response = alice.get("/api/v1/no/such/thing")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["code"] == "not_found"


def test_missing_task_is_404_in_the_error_shape(alice: Client) -> None:
    """A3: a missing object is 404 {detail, code}."""
    response = alice.get("/api/v1/tasks/987654")
    assert response.status_code == 404
    assert response.json() == {"detail": "Task 987654 not found.", "code": "not_found"}


def test_path_parameter_of_the_wrong_type_is_422_naming_it(alice: Client) -> None:
    """A3: /tasks/abc is a 422 naming task_id."""
    response = alice.get("/api/v1/tasks/abc")
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "task_id"


def test_every_documented_error_uses_the_one_shape() -> None:
    """A3: the OpenAPI document declares ErrorOut for every 4xx of every operation."""
    from project.api import api

    schema = api.get_openapi_schema()
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                if path.endswith("/otlp/v1/traces") and int(status) in {400, 415, 429}:
                    # OTLP's own errors are google.rpc.Status, as its specification
                    # requires (docs/otlp.md); auth and size errors keep the API's shape.
                    continue
                if 400 <= int(status) < 500:
                    ref = response["content"]["application/json"]["schema"]["$ref"]
                    assert ref.endswith("/ErrorOut"), (path, method, status)


def test_nul_characters_are_422_naming_the_field(alice: Client) -> None:
    """A3: PostgreSQL cannot store NUL; instead of a database error (500) the client
    gets a 422 naming the field, in the query string or anywhere in a JSON body."""
    response = alice.get("/api/v1/tasks?q=a%00b")
    assert response.status_code == 422
    assert response.json()["errors"] == [
        {"field": "q", "message": "must not contain NUL characters"}
    ]
    body = json.dumps(
        {"request": "ok", "plan": {"kind": "team", "nodes": [{"id": "a", "role": "r\x00"}]}}
    )
    response = alice.post("/api/v1/tasks", body, content_type="application/json")
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "plan.nodes.0.role"
    assert not Task.objects.exists()


def test_form_with_too_many_fields_is_a_json_400(requester: Any, settings: Any) -> None:
    """A3: Django's other refusals of a malformed body (SuspiciousOperation) are a 400 in
    the error shape, not a 500."""
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 5
    client = Client(enforce_csrf_checks=True)
    client.force_login(requester)
    client.get("/account/")  # the CSRF cookie, so the check goes on to read the form
    response = client.post("/api/v1/tasks", {f"f{i}": "x" for i in range(20)})
    assert response.status_code == 400
    assert response.json()["code"] == "bad_request"


@pytest.mark.postgres(
    reason="a table locked by another session (LOCK TABLE) and lock_timeout; SQLite has neither"
)
def test_database_lost_while_the_response_is_built_is_503_not_500(
    alice: Client, requester: Any
) -> None:
    """Issue 17 (seen in the chaos drill: a backend terminated mid-request): a database
    error raised while the response schema reads a relation reaches the API wrapped by
    pydantic, not as an OperationalError; it still answers 503 with Retry-After and the
    database_unavailable code, not a 500. Here the verdict's table is locked by another
    session and the request's lock wait times out."""
    import psycopg
    from django.db import connection

    from tests.factories import TaskFactory

    task = TaskFactory(owner=requester)
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    with psycopg.connect(**params) as locker:
        locker.execute("LOCK TABLE evidence_app_validationsnapshot IN ACCESS EXCLUSIVE MODE")
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL lock_timeout = '200ms'")
        response = alice.get(f"/api/v1/tasks/{task.pk}")
        locker.rollback()
    assert response.status_code == 503, response.content
    assert response["Retry-After"] == "5"
    assert response.json()["code"] == "database_unavailable"


@pytest.mark.parametrize("method", ["patch", "put", "delete"])
def test_a_method_an_address_does_not_take_is_a_405_in_the_error_shape(
    alice: Client, requester: Any, method: str
) -> None:
    """Issue 43, item 4: ``PATCH /tasks/{id}`` answered a plain-text 405; now the API's
    JSON error shape with ``code: method_not_allowed`` and the ``Allow`` header."""
    task = Task.objects.create(owner=requester, title="t", request="r")
    response = getattr(alice, method)(
        f"/api/v1/tasks/{task.pk}", data="{}", content_type="application/json"
    )
    assert response.status_code == 405
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["code"] == "method_not_allowed"
    assert "GET" in response["Allow"]
