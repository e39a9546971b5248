"""Every bad input gets a clear 4xx and nothing is stored (issue 34 item 2): NaN and
±Infinity (refused with the field named: JSON has no such numbers and jsonb refuses
them; docs/api.md "Bad input"), lone UTF-16 surrogates, and nesting deeper than
``API_MAX_JSON_DEPTH``, on the OTLP endpoint (protobuf and JSON) and the attempts API."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from django.test import Client
from google.protobuf import json_format
from google.rpc.status_pb2 import Status as RpcStatus
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tasks_app.accounts.auth import api_token_create
from tasks_app.models import OtlpSpan, OtlpTrace, Run, RunMessage, Task, ToolEvidence
from tasks_app.workflow import services
from tests.tasks_app.otlp_poison import ENDPOINT, agent_trace, new_trace_id

pytestmark = [pytest.mark.django_db, pytest.mark.finding(34, 2)]


@pytest.fixture
def client(requester: Any) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {api_token_create(user=requester, name='t')[1]}")


def _stored() -> tuple[int, ...]:
    return (
        OtlpTrace.objects.count(),
        OtlpSpan.objects.count(),
        Run.objects.count(),
        RunMessage.objects.count(),
        ToolEvidence.objects.count(),
    )


def _with_double(value: float) -> dict[str, Any]:
    body = agent_trace(new_trace_id())
    span = body["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span["attributes"].append({"key": "gen_ai.request.temperature", "value": {"doubleValue": 0}})
    span["attributes"][-1]["value"]["doubleValue"] = value
    return body


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_an_otlp_json_double_that_is_not_finite_is_a_400_naming_the_attribute(
    client: Client, token: str
) -> None:
    """Issue 34 finding 2: before, a NaN/Infinity ``doubleValue`` (a bare token or the
    protobuf JSON mapping's string) was acknowledged and PostgreSQL's COPY refused it: a
    500 and the exporter's batch retried forever. Now a 400 google.rpc.Status names the
    span and the attribute, and nothing is stored."""
    for text in (
        json.dumps(_with_double(0.5)).replace("0.5", token),
        json.dumps(_with_double(0.5)).replace("0.5", f'"{token}"'),
    ):
        response = client.post(ENDPOINT, text, content_type="application/json")
        assert response.status_code == 400, response.content
        message = response.json()["message"]
        assert "gen_ai.request.temperature" in message or token in message, message
    assert _stored() == (0, 0, 0, 0, 0)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_an_otlp_protobuf_double_that_is_not_finite_is_a_400_naming_the_attribute(
    client: Client, value: float
) -> None:
    """Issue 34 finding 2, protobuf: the same refusal in the request's encoding."""
    request = ExportTraceServiceRequest()
    json_format.ParseDict(_ids_as_base64(_with_double(0.5)), request)
    span = request.resource_spans[0].scope_spans[0].spans[0]
    span.attributes[-1].value.double_value = value
    response = client.post(
        ENDPOINT, request.SerializeToString(), content_type="application/x-protobuf"
    )
    assert response.status_code == 400
    status = RpcStatus.FromString(response.content)
    assert "gen_ai.request.temperature" in status.message
    assert "not a finite number" in status.message
    assert _stored() == (0, 0, 0, 0, 0)


def _ids_as_base64(body: dict[str, Any]) -> dict[str, Any]:
    for rs in body["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    return body


@pytest.mark.parametrize("field", ["traceId", "spanId", "parentSpanId"])
def test_a_lone_surrogate_in_an_otlp_json_id_is_a_400(client: Client, field: str) -> None:
    """Issue 34 finding 2: before, a lone surrogate escape in an id raised
    UnicodeEncodeError while the 400 itself was built (a 500). Now the 400 quotes it
    escaped."""
    text = json.dumps(agent_trace(new_trace_id()))
    span = json.loads(text)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    text = text.replace(f'"{field}": "{span[field]}"', f'"{field}": "\\ud800abc"')
    response = client.post(ENDPOINT, text, content_type="application/json")
    assert response.status_code == 400, response.content
    assert "surrogate" in response.json()["message"] or "hex" in response.json()["message"]
    assert _stored() == (0, 0, 0, 0, 0)


def test_a_lone_surrogate_in_an_otlp_json_string_attribute_is_a_400(client: Client) -> None:
    """Issue 34 finding 2: a lone surrogate in any string of an OTLP/JSON body cannot be
    stored as text: refused with where it is."""
    text = json.dumps(agent_trace(new_trace_id())).replace("service.name", "\\ud800")
    response = client.post(ENDPOINT, text, content_type=JSON)
    assert response.status_code == 400, response.content
    assert "surrogate" in response.json()["message"]
    assert _stored() == (0, 0, 0, 0, 0)


JSON = "application/json"


@pytest.fixture
def task(requester: Any) -> Task:
    return services.task_create(owner=requester, request="Training budget?", agent="external")


def _attempt(**run: Any) -> dict[str, Any]:
    return {"final_answer": "1,750 EUR.", "runs": [{"model": "acme:agent", **run}]}


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity", "1e999"])
@pytest.mark.parametrize(
    ("body", "field"),
    [
        (_attempt(payload={"score": "X"}), "runs.0.payload.score"),
        (
            _attempt(tool_results=[{"tool_name": "search", "arguments": {"k": "X"}}]),
            "runs.0.tool_results.0.arguments.k",
        ),
        (_attempt(usage={"details": {"cache": "X"}}), "runs.0.usage.details.cache"),
    ],
)
def test_nan_or_infinity_in_an_attempt_body_is_a_422_naming_the_field(
    client: Client, task: Task, token: str, body: dict[str, Any], field: str
) -> None:
    """Issue 34 finding 2: before, a NaN/Infinity token in ``payload``, ``arguments`` or
    ``usage`` of ``POST /tasks/{id}/attempts`` was parsed and failed in the database (a
    500 on PostgreSQL). Now a 422 names the field and nothing is stored."""
    text = json.dumps(body).replace('"X"', token)
    response = client.post(f"/api/v1/tasks/{task.pk}/attempts", text, content_type=JSON)
    assert response.status_code == 422, response.content
    assert response.json()["errors"][0]["field"] == field
    assert _stored() == (0, 0, 0, 0, 0)
    task.refresh_from_db()
    assert task.attempt_count == 0


def test_nan_in_a_streamed_event_is_a_422_naming_the_field(client: Client, task: Task) -> None:
    """Issue 34 finding 2: ``/attempts/{n}/events`` too."""
    started = client.post(
        f"/api/v1/tasks/{task.pk}/attempts",
        json.dumps({"stream": True, "runs": [{"model": "acme:agent"}]}),
        content_type=JSON,
    )
    assert started.status_code in (200, 201, 202), started.content
    n = started.json()["attempt_index"]
    before = _stored()
    event = {"type": "tool_result", "run": "main", "tool_name": "search", "arguments": {"k": "X"}}
    text = json.dumps({"events": [event]}).replace('"X"', "NaN")
    response = client.post(f"/api/v1/tasks/{task.pk}/attempts/{n}/events", text, content_type=JSON)
    assert response.status_code == 422, response.content
    assert response.json()["errors"][0]["field"] == "events.0.arguments.k"
    assert _stored() == before


def test_a_lone_surrogate_in_an_attempt_body_is_a_422(client: Client, task: Task) -> None:
    """Issue 34 finding 2: a lone surrogate escape cannot be stored as text anywhere."""
    text = json.dumps(_attempt(output_text="X")).replace('"X"', '"\\ud800"')
    response = client.post(f"/api/v1/tasks/{task.pk}/attempts", text, content_type=JSON)
    assert response.status_code == 422, response.content
    assert response.json()["errors"][0]["field"] == "runs.0.output_text"
    assert _stored() == (0, 0, 0, 0, 0)


def test_json_nested_deeper_than_the_limit_is_a_422(
    client: Client, task: Task, settings: Any
) -> None:
    """Issue 34 finding 2: nesting over ``API_MAX_JSON_DEPTH`` is refused before any
    recursive code walks it."""
    deep: Any = "leaf"
    for _ in range(settings.API_MAX_JSON_DEPTH + 5):
        deep = {"a": deep}
    response = client.post(
        f"/api/v1/tasks/{task.pk}/attempts",
        json.dumps(_attempt(payload={"deep": deep})),
        content_type=JSON,
    )
    assert response.status_code == 422, response.content
    assert "nested deeper than" in response.json()["detail"]
    assert _stored() == (0, 0, 0, 0, 0)
