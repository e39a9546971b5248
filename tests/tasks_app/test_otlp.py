"""OpenTelemetry ingestion (issue 15): agents that emit GenAI traces are judged and
reviewed with no code change. The client is pydantic-ai's own instrumentation exported
by the OpenTelemetry SDK's exporters (protobuf and JSON) to a live server."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest
from django.test import Client
from google.protobuf import json_format
from opentelemetry.exporter.otlp.json.http.trace_exporter import (
    OTLPSpanExporter as JsonSpanExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as ProtobufSpanExporter,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from evidence_app.models import ValidationSnapshot
from project.celery import app as celery_app
from tasks_app.accounts.auth import api_token_create
from tasks_app.intake.otlp.assembly import otlp_due_traces
from tasks_app.intake.otlp.decode import SpanRecord
from tasks_app.jobs import otlp_sweep_job
from tasks_app.models import OtlpSpan, OtlpTrace, Run, Task, TaskEvent, ToolEvidence
from tasks_app.workflow.states import TaskStatus as S
from tests import factories
from tests.tasks_app import otlp_client
from tests.workers import wait_for

ENDPOINT = "/api/v1/otlp/v1/traces"
PROTOBUF = "application/x-protobuf"


@pytest.fixture
def eager(settings: Any) -> Any:
    """Jobs run in-process (validation included), so a task settles without a worker.
    Switched on only once the agent's run is over: pydantic-ai's instrumentation is
    process-wide while the agent runs, and would trace the validator's own model calls
    made in the live server's thread as well."""
    previous = celery_app.conf.task_always_eager
    settings.VALIDATOR_MODEL = "offline:judge"

    def switch_on() -> None:
        celery_app.conf.task_always_eager = True
        settings.CELERY_TASK_ALWAYS_EAGER = True

    yield switch_on
    celery_app.conf.task_always_eager = previous


@pytest.fixture
def token(requester: Any) -> str:
    return api_token_create(user=requester, name="otlp")[1]


def _client(token: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {token}")


def _settle(eager: Any, trace_count: int = 1) -> list[Task]:
    """Run the maintenance sweep (eager: validation in-process) until ``trace_count``
    traces were submitted."""
    eager()

    def submitted() -> list[OtlpTrace] | None:
        otlp_sweep_job()
        done = list(OtlpTrace.objects.filter(state="submitted"))
        return done if len(done) >= trace_count else None

    traces = wait_for(submitted, timeout=20, interval=0.2) or []
    return [Task.objects.get(pk=t.task_id) for t in traces]


def _assert_judged_on_the_tool_results(task: Task) -> None:
    assert task.agent == "external"
    assert otlp_client.QUESTION in task.request
    assert task.final_answer == otlp_client.ANSWER
    contents = sorted(
        Run.objects.get(task=task, kind="main").tool_evidence.values_list("content", flat=True)
    )
    # Byte for byte what the tools returned.
    assert contents == sorted([otlp_client.POLICY, otlp_client.BUDGET])
    snapshot = ValidationSnapshot.objects.get(task=task)
    assert snapshot.tool_result_count == 2
    assert otlp_client.POLICY in snapshot.rendered_input
    # Both facts are in the tool results: the claims cite them and the citations verify
    # against the submitted content, at the offsets stored (issue 12).
    assert task.status == S.AWAITING_FEEDBACK, snapshot.result
    evidence = {
        e.pk: e.content for e in ToolEvidence.objects.filter(task=task).only("id", "content")
    }
    claims = snapshot.result["claims"]
    assert len(claims) == 2
    for claim in claims:
        verified = [c for c in claim["citations"] if c["verified"]]
        assert verified, claim
        for citation in verified:
            content = evidence[citation["evidence_id"]]
            assert content[citation["start"] : citation["end"]].lower() == citation["quote"].lower()


@pytest.mark.django_db(transaction=True)
def test_pydantic_ai_agent_exporting_protobuf_is_judged_on_its_tool_results(
    live_server: Any, token: str, eager: Any, settings: Any
) -> None:
    """A pydantic-ai agent with instrumentation on, exporting through the SDK's
    protobuf exporter span by span: the task appears, its evidence equals the tool
    returns byte for byte, and the validator judged it on that evidence."""
    settings.OTLP_TRACE_QUIET_SECONDS = 0.2
    exporter = ProtobufSpanExporter(
        endpoint=live_server.url + ENDPOINT, headers={"Authorization": f"Bearer {token}"}
    )
    output = otlp_client.run_agent(exporter)
    assert output == otlp_client.ANSWER
    (task,) = _settle(eager)
    _assert_judged_on_the_tool_results(task)
    trace = OtlpTrace.objects.get(task=task)
    assert trace.span_count == 5 and trace.late_span_count == 0


@pytest.mark.django_db(transaction=True)
def test_pydantic_ai_agent_exporting_json_is_judged_the_same_way(
    live_server: Any, token: str, eager: Any
) -> None:
    """The same agent through the SDK's OTLP/JSON exporter; `evidentia.final` on the
    resource: the trace is validated as soon as its root span arrives."""
    exporter = JsonSpanExporter(
        endpoint=live_server.url + ENDPOINT, headers={"Authorization": f"Bearer {token}"}
    )
    otlp_client.run_agent(exporter, {"evidentia.final": True})
    trace = OtlpTrace.objects.get()
    assert trace.final and trace.root_ended and trace.span_count == 5
    # No quiet period: the trace is due the moment its root arrived.
    assert otlp_due_traces(now=trace.last_span_at) == [trace.pk]
    (task,) = _settle(eager)
    _assert_judged_on_the_tool_results(task)


@pytest.mark.django_db(transaction=True)
def test_spans_split_over_three_requests_out_of_order_give_one_attempt(
    token: str, eager: Any, settings: Any
) -> None:
    settings.OTLP_TRACE_QUIET_SECONDS = 0.2
    spans = list(otlp_client.finished_spans())
    eager()
    root_last = sorted(spans, key=lambda s: s.parent is None)
    parts = [root_last[3:], root_last[:1], root_last[1:3]]  # root first, then the rest
    client = _client(token)
    for part in parts:
        response = client.post(ENDPOINT, otlp_client.protobuf_body(part), content_type=PROTOBUF)
        assert response.status_code == 200
        assert not ExportTraceServiceResponse.FromString(response.content).HasField(
            "partial_success"
        )
    (task,) = _settle(eager)
    assert Run.objects.filter(task=task).count() == 1
    assert task.attempt_count == 1
    _assert_judged_on_the_tool_results(task)


@pytest.mark.django_db(transaction=True)
def test_a_trace_attaches_to_an_existing_task_by_evidentia_task_id(
    requester: Any, token: str, eager: Any, settings: Any
) -> None:
    from tasks_app.workflow.services import task_create

    task = task_create(owner=requester, request=otlp_client.QUESTION, agent="external")
    spans = otlp_client.finished_spans({"evidentia.task_id": task.pk, "evidentia.final": True})
    eager()
    response = _client(token).post(
        ENDPOINT,
        gzip.compress(otlp_client.protobuf_body(spans)),
        content_type=PROTOBUF,
        HTTP_CONTENT_ENCODING="gzip",
    )
    assert response.status_code == 200
    assert Task.objects.count() == 1
    task.refresh_from_db()
    assert task.attempt_count == 1
    _assert_judged_on_the_tool_results(task)


@pytest.mark.django_db
def test_malformed_spans_are_rejected_with_a_partial_success_the_rest_stored(
    token: str, other_requester: Any
) -> None:
    spans = list(otlp_client.finished_spans())
    export = ExportTraceServiceRequest.FromString(otlp_client.protobuf_body(spans))
    scope_spans = export.resource_spans[0].scope_spans[0].spans
    scope_spans[0].span_id = b"\x01\x02"  # 2 bytes, not 8
    scope_spans[1].end_time_unix_nano = scope_spans[1].start_time_unix_nano - 1
    response = _client(token).post(ENDPOINT, export.SerializeToString(), content_type=PROTOBUF)
    assert response.status_code == 200
    answer = ExportTraceServiceResponse.FromString(response.content)
    assert answer.partial_success.rejected_spans == 2
    assert "span_id must be 8 bytes" in answer.partial_success.error_message
    assert "end_time_unix_nano is before" in answer.partial_success.error_message
    assert OtlpSpan.objects.count() == len(spans) - 2


@pytest.mark.django_db
def test_a_task_id_that_is_not_yours_is_rejected_and_nothing_attached(
    token: str, other_requester: Any
) -> None:
    foreign = factories.TaskFactory(owner=other_requester)
    spans = otlp_client.finished_spans({"evidentia.task_id": foreign.pk})
    response = _client(token).post(
        ENDPOINT, otlp_client.protobuf_body(spans), content_type=PROTOBUF
    )
    answer = ExportTraceServiceResponse.FromString(response.content)
    assert answer.partial_success.rejected_spans == len(spans)
    assert (
        f"task {foreign.pk} does not exist or is not yours" in answer.partial_success.error_message
    )
    assert OtlpSpan.objects.count() == 0 and OtlpTrace.objects.count() == 0


@pytest.mark.django_db
def test_json_partial_success_answers_in_json(token: str) -> None:
    spans = list(otlp_client.finished_spans())
    document = json_format.MessageToDict(
        ExportTraceServiceRequest.FromString(otlp_client.protobuf_body(spans))
    )
    # OTLP/JSON ids are hex (json_format produced base64): what a JSON exporter sends.
    for rs in document["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = __import__("base64").b64decode(span[key]).hex()
    document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["spanId"] = "00"
    response = _client(token).post(ENDPOINT, json.dumps(document), content_type="application/json")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["partialSuccess"]["rejectedSpans"] == "1"


@pytest.mark.django_db
def test_an_unparseable_body_gets_400_and_stores_nothing(token: str) -> None:
    client = _client(token)
    assert client.post(ENDPOINT, b"\xff\x00garbage", content_type=PROTOBUF).status_code == 400
    assert client.post(ENDPOINT, b"{not json", content_type="application/json").status_code == 400
    assert OtlpSpan.objects.count() == 0


@pytest.mark.django_db
def test_over_the_size_limit_gets_413_and_stores_nothing(token: str, settings: Any) -> None:
    settings.OTLP_MAX_BODY_BYTES = 4096
    spans = otlp_client.finished_spans()
    body = otlp_client.protobuf_body(spans)
    assert len(body) > 4096
    client = _client(token)
    assert client.post(ENDPOINT, body, content_type=PROTOBUF).status_code == 413
    # A small gzip body that inflates past the limit is refused as well.
    bomb = gzip.compress(body + b"\x00" * 100_000)
    assert len(bomb) < 4096
    response = client.post(ENDPOINT, bomb, content_type=PROTOBUF, HTTP_CONTENT_ENCODING="gzip")
    assert response.status_code == 413
    assert OtlpSpan.objects.count() == 0 and OtlpTrace.objects.count() == 0


@pytest.mark.django_db
def test_over_the_span_budget_gets_429_with_retry_after(token: str, settings: Any) -> None:
    from django.core.cache import cache

    cache.clear()
    settings.OTLP_MAX_SPANS_PER_MINUTE = 6
    body = otlp_client.protobuf_body(otlp_client.finished_spans())  # 5 spans
    client = _client(token)
    assert client.post(ENDPOINT, body, content_type=PROTOBUF).status_code == 200
    throttled = client.post(ENDPOINT, body, content_type=PROTOBUF)
    assert throttled.status_code == 429
    assert 1 <= int(throttled["Retry-After"]) <= 60
    assert OtlpSpan.objects.count() == 5


@pytest.mark.django_db
def test_without_a_token_nothing_is_stored(token: str) -> None:
    body = otlp_client.protobuf_body(otlp_client.finished_spans())
    assert Client().post(ENDPOINT, body, content_type=PROTOBUF).status_code == 401
    assert OtlpSpan.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_a_result_cut_by_the_exporter_is_flagged_in_the_packet(
    token: str, eager: Any, settings: Any
) -> None:
    """A tool result exactly at the exporter's attribute length limit was cut at the
    source: the rendered packet the validator reads says so beside it."""
    limit = len(otlp_client.POLICY)
    settings.OTLP_SOURCE_VALUE_LENGTH_LIMIT = limit
    spans = otlp_client.finished_spans({"evidentia.final": True})
    eager()
    _client(token).post(ENDPOINT, otlp_client.protobuf_body(spans), content_type=PROTOBUF)
    (task,) = _settle(eager)
    snapshot = ValidationSnapshot.objects.get(task=task)
    flagged = [
        line for line in snapshot.rendered_input.splitlines() if "TRUNCATED AT THE SOURCE" in line
    ]
    assert len(flagged) == 1 and "read_policy" in flagged[0]
    trace = OtlpTrace.objects.get()
    main = Run.objects.get(task=task, kind="main")
    assert len(main.payload["otlp"]["truncated_at_source"]) == 1
    assert main.payload["otlp"]["trace_id"] == trace.trace_id


@pytest.mark.django_db(transaction=True)
def test_spans_after_submission_are_kept_as_late_and_listed_on_the_task_page(
    token: str, eager: Any, settings: Any, requester: Any
) -> None:
    """A span that arrives after its trace became an attempt is stored, never dropped,
    and the task page says it was not part of the judged evidence."""
    settings.OTLP_TRACE_QUIET_SECONDS = 0.0
    spans = list(otlp_client.finished_spans())
    eager()
    client = _client(token)
    client.post(ENDPOINT, otlp_client.protobuf_body(spans[1:]), content_type=PROTOBUF)
    (task,) = _settle(eager)
    client.post(ENDPOINT, otlp_client.protobuf_body(spans[:1]), content_type=PROTOBUF)
    trace = OtlpTrace.objects.get()
    assert (trace.task_id, trace.late_span_count, trace.span_count) == (task.pk, 1, 4)
    assert OtlpSpan.objects.filter(late=True).count() == 1
    page = Client()
    page.force_login(requester)
    html = page.get(f"/tasks/{task.pk}/").content.decode()
    assert "1 span arrived after this trace was submitted for validation" in html
    assert spans[0].name in html


def _record(trace_id: str, span_id: str, parent: str = "", **attributes: Any) -> SpanRecord:
    return SpanRecord(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name="span",
        kind=1,
        start_ns=1,
        end_ns=2,
        attributes=dict(attributes),
        events=[],
        resource={},
        scope="test",
        status_code=0,
        status_message="",
    )


@pytest.mark.django_db
def test_ingest_rejects_what_it_cannot_attach_and_says_which_traces_are_ready(
    requester: Any, other_requester: Any, settings: Any
) -> None:
    """otlp_ingest on records directly: each reason a span is rejected, a resent span
    counted once, which traces are ready and after what wait, a span of a submitted trace
    stored as late, and a trace id another account used first taking nothing of its
    trace (Issue 24 item 12)."""
    from tasks_app.intake.otlp.ingest import otlp_ingest

    settings.OTLP_TRACE_QUIET_SECONDS = 7
    internal = factories.TaskFactory(owner=requester)
    foreign = OtlpTrace.objects.create(trace_id="f" * 32, owner=other_requester)
    records = [
        _record("a" * 32, "1" * 16, **{"evidentia.task_id": "abc"}),
        _record("a" * 32, "2" * 16, **{"evidentia.task_id": internal.pk}),
        _record("f" * 32, "3" * 16),
        _record("b" * 32, "4" * 16),  # root, not final: ready after the quiet period
        _record("b" * 32, "5" * 16, "4" * 16),
        _record("c" * 32, "6" * 16, **{"evidentia.final": "true"}),  # final: ready now
        _record("d" * 32, "7" * 16, "9" * 16),  # no root yet: not ready
    ]
    result = otlp_ingest(user=requester, records=records)
    assert sorted(r.reason for r in result.rejected) == [
        "evidentia.task_id 'abc' is not a task id",
        f"task {internal.pk} is not an external task (agent '{internal.agent}')",
    ]
    # Another account's trace id names another trace: the span starts the user's own.
    assert result.accepted == 5
    traces = {t.trace_id[0]: t for t in OtlpTrace.objects.filter(owner=requester)}
    assert traces["f"].pk != foreign.pk and traces["f"].span_count == 1
    assert sorted(result.ready) == sorted(
        [(traces["b"].pk, 7.0), (traces["c"].pk, 0.0), (traces["f"].pk, 7.0)]
    )
    assert (traces["b"].span_count, traces["b"].root_span_id, traces["b"].final) == (
        2,
        "4" * 16,
        False,
    )
    assert traces["c"].final and traces["c"].root_ended and not traces["d"].root_ended
    assert foreign.spans.count() == 0

    # The exporter resends a span; then the trace is submitted and a late span arrives.
    again = otlp_ingest(user=requester, records=[_record("b" * 32, "5" * 16, "4" * 16)])
    assert (again.accepted, again.rejected, again.ready) == (0, [], [(traces["b"].pk, 7.0)])
    OtlpTrace.objects.filter(pk=traces["b"].pk).update(state="submitted")
    late = otlp_ingest(user=requester, records=[_record("b" * 32, "8" * 16, "4" * 16)])
    assert (late.accepted, late.ready) == (1, [])
    traces["b"].refresh_from_db()
    assert (traces["b"].span_count, traces["b"].late_span_count) == (2, 1)
    assert OtlpSpan.objects.get(span_id="8" * 16).late


@pytest.mark.finding(24, 2)
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("staff", ["reviewer", "operator"])
def test_staff_cannot_answer_another_users_task_through_otlp(
    request: Any, requester: Any, staff: str, eager: Any
) -> None:
    """Only the task's owner submits its attempts, by any route: a reviewer's or an
    operator's trace naming the requester's external task is rejected and changes
    nothing, even once the sweep runs."""
    from tasks_app.workflow.services import task_create

    user = request.getfixturevalue(staff)
    task = task_create(owner=requester, request=otlp_client.QUESTION, agent="external")
    events_before = list(TaskEvent.objects.filter(task=task).values_list("id", flat=True))
    spans = otlp_client.finished_spans({"evidentia.task_id": task.pk, "evidentia.final": True})
    staff_token = api_token_create(user=user, name="otlp")[1]
    eager()
    response = _client(staff_token).post(
        ENDPOINT, otlp_client.protobuf_body(spans), content_type=PROTOBUF
    )
    assert response.status_code == 200
    answer = ExportTraceServiceResponse.FromString(response.content)
    assert answer.partial_success.rejected_spans == len(spans)
    assert "only its owner submits its attempts" in answer.partial_success.error_message
    otlp_sweep_job()
    task.refresh_from_db()
    assert task.status == S.OPEN and task.attempt_count == 0 and task.final_answer == ""
    assert list(TaskEvent.objects.filter(task=task).values_list("id", flat=True)) == events_before
    assert not Run.objects.filter(task=task).exists()
    assert OtlpSpan.objects.count() == 0


@pytest.mark.finding(24, 2)
@pytest.mark.django_db
def test_a_staff_trace_that_names_another_users_task_is_not_submitted(
    requester: Any, reviewer: Any, monkeypatch: Any
) -> None:
    """The assembly checks the owner too: a reviewer's stored trace that names the
    requester's task (however its spans got past ingestion) is not submitted to it."""
    from tasks_app.intake.otlp import assembly, ingest
    from tasks_app.intake.otlp.decode import parse_request, spans_of
    from tasks_app.workflow.services import task_create

    task = task_create(owner=requester, request=otlp_client.QUESTION, agent="external")
    spans = otlp_client.finished_spans({"evidentia.task_id": task.pk, "evidentia.final": True})
    records, _ = spans_of(parse_request(otlp_client.protobuf_body(spans), PROTOBUF))
    monkeypatch.setattr(ingest, "_refused_task_ids", lambda user, records: {})
    result = ingest.otlp_ingest(user=reviewer, records=records)
    assert result.accepted == len(spans) and len(result.ready) == 1
    outcome = assembly.otlp_trace_assemble(trace_pk=result.ready[0][0])
    assert outcome.outcome == "unusable" and "owner" in outcome.detail
    task.refresh_from_db()
    assert task.status == S.OPEN and task.attempt_count == 0
    assert not TaskEvent.objects.filter(task=task, actor_kind="agent").exists()


@pytest.mark.finding(24, 2)
@pytest.mark.django_db(transaction=True)
def test_the_owners_trace_is_accepted_and_its_events_name_the_owner(
    requester: Any, token: str, eager: Any
) -> None:
    from tasks_app.workflow.services import task_create

    task = task_create(owner=requester, request=otlp_client.QUESTION, agent="external")
    spans = otlp_client.finished_spans({"evidentia.task_id": task.pk, "evidentia.final": True})
    eager()
    response = _client(token).post(
        ENDPOINT, otlp_client.protobuf_body(spans), content_type=PROTOBUF
    )
    assert response.status_code == 200
    _settle(eager)
    agent_events = TaskEvent.objects.filter(task=task, actor_kind="agent")
    assert agent_events.count() >= 2  # open -> running -> validating
    assert set(agent_events.values_list("actor_id", flat=True)) == {requester.pk}


def _json_export(task_id: str) -> str:
    """A minimal OTLP/JSON request: one root span naming ``task_id``."""
    span = {
        "traceId": "ab" * 16,
        "spanId": "cd" * 8,
        "name": "invoke_agent",
        "kind": 1,
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "2",
        "attributes": [{"key": "evidentia.task_id", "value": {"stringValue": task_id}}],
    }
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})


@pytest.mark.finding(24, 7)
@pytest.mark.django_db
@pytest.mark.parametrize("task_id", ["²", "①", "٣", "99999999999999999999999", "-1"])
def test_a_task_id_that_is_not_an_integer_key_is_rejected_not_a_500(
    token: str, task_id: str
) -> None:
    """Digits int() cannot read (superscripts, circled, other scripts) and numbers beyond
    any primary key are not task ids: the span is rejected (partial success), no 500."""
    response = _client(token).post(ENDPOINT, _json_export(task_id), content_type="application/json")
    assert response.status_code == 200, response.content
    partial = response.json()["partialSuccess"]
    assert partial["rejectedSpans"] == "1"
    assert "is not a task id" in partial["errorMessage"]
    assert OtlpSpan.objects.count() == 0


@pytest.mark.finding(24, 7)
@pytest.mark.django_db
def test_a_json_body_nested_5000_levels_deep_gets_400(token: str) -> None:
    body = '{"resourceSpans": ' + "[" * 5000 + "]" * 5000 + "}"
    response = _client(token).post(ENDPOINT, body, content_type="application/json")
    assert response.status_code == 400
    assert "nested deeper than" in response.json()["message"]
    assert OtlpSpan.objects.count() == 0


@pytest.mark.finding(24, 14)
@pytest.mark.django_db
def test_a_nul_in_an_otlp_json_body_is_stored_as_the_protobuf_one_is(token: str) -> None:
    """Issue 24 item 14: schemathesis found an undocumented 422 (the API's own NUL guard,
    in the API's error shape) for an OTLP/JSON body with a NUL in an object key. OTLP
    answers in its own encoding and documents 200/400/413/415/429: a NUL in a key or a
    value of an OTLP/JSON span becomes U+FFFD as in a protobuf body, and a body that is
    no export request at all is a 400 google.rpc.Status, whatever its keys hold."""
    document = json.loads(_json_export("1"))
    span = document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span["attributes"] = [
        {"key": "tool\x00name", "value": {"stringValue": "search\x00the web"}},
    ]
    span["name"] = "invoke\x00agent"
    response = _client(token).post(ENDPOINT, json.dumps(document), content_type="application/json")
    assert response.status_code == 200, response.content
    stored = OtlpSpan.objects.get()
    assert stored.name == "invoke\ufffdagent"
    assert stored.attributes == {"tool\ufffdname": "search\ufffdthe web"}

    junk = json.dumps({"\x00key": [1, {"a\x00": "b\x00"}], "filters": []})
    response = _client(token).post(ENDPOINT, junk, content_type="application/json")
    assert response.status_code in (200, 400), response.content
    assert "code" not in response.json()  # google.rpc.Status or an export response
    assert OtlpSpan.objects.count() == 1


def _with_trace_id(body: bytes, trace_id: bytes) -> bytes:
    """The export request ``body`` with every span moved to ``trace_id``."""
    export = ExportTraceServiceRequest.FromString(body)
    for resource_spans in export.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                span.trace_id = trace_id
    return export.SerializeToString()


@pytest.mark.finding(24, 12)
@pytest.mark.django_db(transaction=True)
def test_another_account_sending_a_trace_id_first_takes_nothing_from_its_owner(
    requester: Any, other_requester: Any, token: str, eager: Any
) -> None:
    """Issue 24 item 12: trace ids were one global namespace, so an account that sent a
    span with another account's trace id first made all of that account's spans refused
    ("the trace belongs to another account"). Trace ids are now per account: B's spans
    come first under A's trace id and make B's own trace and task; A's spans are all
    accepted and assembled into A's task; neither sees a span of the other."""
    from tasks_app.workflow.services import task_create

    task = task_create(owner=requester, request=otlp_client.QUESTION, agent="external")
    body_a = otlp_client.protobuf_body(
        otlp_client.finished_spans({"evidentia.task_id": task.pk, "evidentia.final": True})
    )
    export_a = ExportTraceServiceRequest.FromString(body_a)
    trace_id = export_a.resource_spans[0].scope_spans[0].spans[0].trace_id
    span_count = sum(len(ss.spans) for rs in export_a.resource_spans for ss in rs.scope_spans)
    body_b = _with_trace_id(
        otlp_client.protobuf_body(otlp_client.finished_spans({"evidentia.final": True})),
        trace_id,
    )
    token_b = api_token_create(user=other_requester, name="otlp")[1]
    eager()

    first = _client(token_b).post(ENDPOINT, body_b, content_type=PROTOBUF)
    assert first.status_code == 200
    assert ExportTraceServiceResponse.FromString(first.content).partial_success.rejected_spans == 0
    second = _client(token).post(ENDPOINT, body_a, content_type=PROTOBUF)
    assert second.status_code == 200
    answer = ExportTraceServiceResponse.FromString(second.content)
    assert answer.partial_success.rejected_spans == 0, answer.partial_success.error_message

    tasks = _settle(eager, trace_count=2)
    trace_a = OtlpTrace.objects.get(owner=requester, trace_id=trace_id.hex())
    trace_b = OtlpTrace.objects.get(owner=other_requester, trace_id=trace_id.hex())
    assert trace_a.span_count == span_count and trace_a.task_id == task.pk
    assert trace_b.task_id != task.pk and trace_b.task is not None
    assert trace_b.task.owner_id == other_requester.pk
    assert {t.pk for t in tasks} == {task.pk, trace_b.task_id}
    task.refresh_from_db()
    _assert_judged_on_the_tool_results(task)
    assert set(OtlpSpan.objects.filter(trace=trace_a).values_list("trace__owner", flat=True)) == {
        requester.pk
    }
    assert (
        Run.objects.filter(task=task).count()
        == Run.objects.filter(task=task, task__owner=requester).count()
    )
