"""No account's OTLP traces can delay another's (issue 34 item 1): poisoned traces are
parsed with bounds, an assembly that fails is retried a bounded number of times and then
marked unusable with the reason (listed by the API, shown on the task page, sent as the
``trace.unusable`` webhook), and the sweep takes due traces fairly across accounts."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from project.celery import app as celery_app
from tasks_app.accounts.auth import api_token_create
from tasks_app.intake.otlp.assembly import otlp_due_traces
from tasks_app.jobs import otlp_sweep_job
from tasks_app.models import OtlpTrace, Task, WebhookDelivery, WebhookEndpoint
from tests import factories
from tests.tasks_app.otlp_poison import (
    ENDPOINT,
    FAILS_ASSEMBLY,
    POISON,
    agent_trace,
    new_trace_id,
    poison_trace,
)


@pytest.fixture
def eager(settings: Any) -> Any:
    """Jobs (the validation after a submission) run in-process, on the offline judge."""
    previous = celery_app.conf.task_always_eager
    settings.VALIDATOR_MODEL = "offline:judge"
    settings.CELERY_TASK_ALWAYS_EAGER = True
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = previous


@pytest.fixture
def retry_at_once(settings: Any) -> None:
    settings.OTLP_TRACE_ASSEMBLY_ATTEMPTS = 3
    settings.OTLP_TRACE_RETRY_SECONDS = 0


def _client(user: Any) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {api_token_create(user=user, name='otlp')[1]}")


def _send(client: Client, body: dict[str, Any]) -> None:
    response = client.post(ENDPOINT, json.dumps(body), content_type="application/json")
    assert response.status_code == 200, response.content


@pytest.mark.finding(34, 1)
@pytest.mark.django_db
def test_poisoned_traces_never_stop_the_sweep_and_another_accounts_trace_is_submitted(
    requester: Any, other_requester: Any, eager: Any, retry_at_once: Any
) -> None:
    """Issue 34 finding 1: before, the sweep crashed on the first poisoned trace (a string
    attribute holding JSON 5,000 levels deep raised RecursionError) every 5 s, and another
    account's complete trace behind it stayed ``collecting``. Now every sweep returns; the
    bounded parses keep the poisoned strings as text (those traces become attempts), and
    the trace that still fails (a token count over the schema's bound) is tried
    ``OTLP_TRACE_ASSEMBLY_ATTEMPTS`` times, then marked unusable with the reason."""
    alice, bob = _client(requester), _client(other_requester)
    poisoned = {kind: new_trace_id() for kind in POISON}
    for kind, trace_id in poisoned.items():
        _send(alice, poison_trace(kind, trace_id))
    theirs = new_trace_id()
    _send(bob, agent_trace(theirs))

    for _ in range(3):
        otlp_sweep_job()  # raises nothing

    bobs = OtlpTrace.objects.get(owner=other_requester, trace_id=theirs)
    assert bobs.state == "submitted"
    assert Task.objects.get(pk=bobs.task_id).owner == other_requester
    states = {
        kind: OtlpTrace.objects.get(owner=requester, trace_id=trace_id)
        for kind, trace_id in poisoned.items()
    }
    failing = states.pop(FAILS_ASSEMBLY)
    assert {t.state for t in states.values()} == {"submitted"}, {
        k: (t.state, t.error) for k, t in states.items()
    }
    assert failing.state == "unusable" and failing.assembly_failures == 3
    assert "assembly failed 3 time(s)" in failing.error and "input_tokens" in failing.error


@pytest.mark.finding(34, 1)
@pytest.mark.django_db
def test_a_failed_assembly_waits_for_its_retry_and_is_not_due_before(
    requester: Any, eager: Any, settings: Any
) -> None:
    """Issue 34 finding 1: a trace whose assembly failed is not taken again by every sweep
    (before: every 5 s, a traceback each time) but after ``OTLP_TRACE_RETRY_SECONDS``."""
    settings.OTLP_TRACE_RETRY_SECONDS = 60
    trace_id = new_trace_id()
    _send(_client(requester), poison_trace(FAILS_ASSEMBLY, trace_id))
    otlp_sweep_job()
    trace = OtlpTrace.objects.get(trace_id=trace_id)
    assert (trace.state, trace.assembly_failures) == ("collecting", 1)
    assert "try 1 of 3" in trace.error
    assert trace.pk not in otlp_due_traces()
    assert trace.pk in otlp_due_traces(now=timezone.now() + timedelta(seconds=61))


@pytest.mark.finding(34, 1)
@pytest.mark.django_db
def test_the_sweep_takes_due_traces_fairly_across_accounts(
    requester: Any, other_requester: Any
) -> None:
    """Issue 34 finding 1: before, the sweep took the 200 oldest due traces, so one
    account's backlog (or its traces that keep failing) filled every batch; now each
    account's oldest due trace comes first."""
    old = timezone.now() - timedelta(hours=1)
    floods = [
        OtlpTrace(
            owner=requester,
            trace_id=f"{n:032x}",
            final=True,
            root_ended=True,
            first_span_at=old + timedelta(seconds=n),
            last_span_at=old + timedelta(seconds=n),
        )
        for n in range(1, 31)
    ]
    OtlpTrace.objects.bulk_create(floods)
    late = OtlpTrace.objects.create(owner=other_requester, trace_id="f" * 32, final=True)

    batch = otlp_due_traces(limit=10)
    assert late.pk in batch[:2]
    assert len(batch) == 10


@pytest.mark.finding(34, 1)
@pytest.mark.django_db
def test_an_unusable_trace_is_shown_to_its_owner_by_api_page_and_webhook(
    requester: Any, other_requester: Any, eager: Any, retry_at_once: Any
) -> None:
    """Issue 34 finding 1: the reason a trace could not be used reaches its owner, and no
    one else: ``GET /otlp/traces`` (before: no such endpoint), the page of the task the
    trace names, and a ``trace.unusable`` webhook."""
    task = factories.TaskFactory(owner=requester, agent="external", status="open")
    endpoint = WebhookEndpoint.objects.create(
        owner=requester, url="http://93.184.216.34/hook", events=["trace.unusable"], secret="s"
    )
    trace_id = new_trace_id()
    alice = _client(requester)
    _send(alice, poison_trace(FAILS_ASSEMBLY, trace_id, task_id=task.pk))
    for _ in range(3):
        otlp_sweep_job()

    listed = alice.get("/api/v1/otlp/traces", {"state": "unusable"})
    assert listed.status_code == 200
    [item] = listed.json()["items"]
    assert item["trace_id"] == trace_id and item["task_id"] == task.pk
    assert "input_tokens" in item["error"] and item["assembly_failures"] == 3
    assert _client(other_requester).get("/api/v1/otlp/traces").json()["items"] == []

    page = Client()
    page.force_login(requester)
    html = page.get(f"/tasks/{task.pk}/").content.decode()
    assert trace_id in html and "input_tokens" in html

    [delivery] = WebhookDelivery.objects.filter(endpoint=endpoint)
    body = json.loads(delivery.payload)
    assert body["type"] == "trace.unusable"
    assert body["data"]["trace"]["trace_id"] == trace_id
    assert "input_tokens" in body["data"]["trace"]["error"]
