"""Operator pages (U5, V5, V9, V10): templates, inputs with a diff between
attempts, LLM request snapshots, replay side by side, agreement, status charts."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from evidence_app.jobs import replay_validation_job
from evidence_app.models import ReplayRequest, ValidationSnapshot
from tasks_app.models import LLMRequestSnapshot
from tasks_app.workflow import services
from tests.factories import ValidationSnapshotFactory
from tests.ui.conftest import make_reviewable_task

pytestmark = pytest.mark.django_db


def test_template_page_lists_versions_and_text(client: Any, operator: Any) -> None:
    """U5, V5: every template with its name@hash version and its text."""
    from evidence_app.validator.templates import list_templates

    client.force_login(operator)
    page = client.get(reverse("ops_templates")).content.decode()
    for template in list_templates():
        assert template.version.split("@")[1][:8] in page  # issue 13: "name, version 1359c919"
    assert 'class="viewer"' in page


def test_inputs_page_diffs_two_attempts(client: Any, operator: Any, requester: Any) -> None:
    """U5: rendered inputs of each attempt and an escaped unified diff between them."""
    task = make_reviewable_task(requester)
    ValidationSnapshotFactory(
        task=task,
        attempt_index=2,
        status="accepted",
        rendered_input=task.validations.get().rendered_input.replace("1,800", "<b>2,000</b>"),
    )
    client.force_login(operator)
    page = client.get(reverse("ops_task_inputs", args=[task.pk])).content.decode()
    assert '<span class="del">-The annual training budget per employee is 1,800 EUR.</span>' in page
    assert (
        '<span class="add">+The annual training budget per employee is '
        "&lt;b&gt;2,000&lt;/b&gt; EUR.</span>" in page
    )


def test_llm_request_snapshots_page(client: Any, operator: Any, requester: Any) -> None:
    """U5, X2: compact request snapshots, filterable by task."""
    task = make_reviewable_task(requester)
    LLMRequestSnapshot.objects.create(
        run=task.runs.get(),
        iteration=1,
        provider="offline",
        model_name="offline:researcher",
        message_count=3,
        tool_names=["search_documents", "read_document"],
        message_chars=1234,
        tool_schema_chars=456,
        latency_ms=12,
    )
    client.force_login(operator)
    page = client.get(reverse("ops_llm_requests"), {"task": task.pk}).content.decode()
    assert "search_documents, read_document" in page and "1234" in page
    assert "offline:researcher (offline stand-in, not an LLM)" in page
    assert (
        "search_documents"
        in client.get(reverse("ops_task_inputs", args=[task.pk])).content.decode()
    )


def test_replay_is_queued_and_shown_side_by_side(
    client: Any,
    operator: Any,
    requester: Any,
    monkeypatch: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """V9, U5: the form enqueues the replay job by name after commit (the request never
    waits on the validator); once the worker ran it the replay sits beside the original."""
    from project.celery import app as celery_app

    sent: list[tuple[str, list[Any]]] = []
    monkeypatch.setattr(
        celery_app,
        "send_task",
        lambda name, args=None, kwargs=None, **kw: sent.append((name, list(args or []))),
    )
    task = make_reviewable_task(requester)
    original = task.validations.get()
    client.force_login(operator)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("ops_replay", args=[original.pk]),
            {"template": "terse", "model": "offline:judge"},
        )
    assert response.status_code == 302
    queued = ReplayRequest.objects.get()
    assert (queued.original, queued.template, queued.model) == (original, "terse", "offline:judge")
    assert sent == [("evidence_app.replay_validation", [queued.pk])]
    waiting = client.get(reverse("ops_validation", args=[original.pk])).content.decode()
    assert "The replay is queued" in waiting and 'hx-trigger="every 1s"' in waiting
    assert "Replay of validation" in waiting  # the message of the redirect
    # What the worker does with that message:
    replay_validation_job(*sent[0][1])
    replay = ValidationSnapshot.objects.get(kind="replay")
    assert replay.replay_of == original and replay.template_name == "terse"
    page = client.get(reverse("ops_validation", args=[original.pk])).content.decode()
    assert 'id="original-card"' in page and 'id="replay-card"' in page
    assert f"#{replay.pk}" in page and "every 1s" not in page
    task.refresh_from_db()
    assert task.status == "needs_review"  # a replay never changes the task


def test_agreement_table(client: Any, operator: Any, requester: Any) -> None:
    """V10, U5: validator status vs. human decision, per template and model."""
    task = make_reviewable_task(requester)
    services.task_apply_feedback(task_id=task.pk, actor=requester, action="satisfied")
    client.force_login(operator)
    page = client.get(reverse("ops_agreement")).content.decode()
    assert "default@abc123" in page and "insufficient_evidence" in page
    assert "Cohen" in page


def test_status_charts_are_server_side_svg(client: Any, operator: Any, requester: Any) -> None:
    """U5: task statuses and validator statuses over time, drawn as SVG without JS."""
    make_reviewable_task(requester)
    client.force_login(operator)
    response = client.get(reverse("ops_charts"), {"days": "7"})
    page = response.content.decode()
    assert page.count("<svg") == 2 and "<rect" in page
    assert "Needs review: 1" in page and "Insufficient evidence: 1" in page
    assert response.context["task_chart"]["bars"]


def test_operator_index(client: Any, operator: Any, requester: Any) -> None:
    """U5: the overview lists recent validations with links to replay and inputs."""
    task = make_reviewable_task(requester)
    client.force_login(operator)
    page = client.get(reverse("ops_index")).content.decode()
    assert reverse("ops_validation", args=[task.validations.get().pk]) in page


def test_bulk_replay_shows_the_estimate_first_and_respects_the_cap(
    client: Any,
    operator: Any,
    requester: Any,
    settings: Any,
    monkeypatch: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """V9: the preview shows how many tasks and the estimated input size; over
    REPLAY_BULK_MAX_TASKS nothing can be queued; within it, one job per task."""
    from project.celery import app as celery_app

    sent: list[list[Any]] = []
    monkeypatch.setattr(
        celery_app,
        "send_task",
        lambda name, args=None, kwargs=None, **kw: sent.append(list(args or [])),
    )
    first = make_reviewable_task(requester)
    second = make_reviewable_task(requester, title="Second")
    ValidationSnapshot.objects.update(rendered_input_chars=4000)
    client.force_login(operator)
    url = reverse("ops_bulk_replay")
    assert client.get(url).status_code == 200
    params = {"validator_statuses": ["insufficient_evidence"], "template": "terse"}
    preview = client.get(url, params).content.decode()
    assert (
        "2 tasks match" in preview
        and "Estimated input" in preview
        and "Replay 2 validations" in preview
    )
    settings.REPLAY_BULK_MAX_TASKS = 1
    assert "Narrow the filters" in client.get(url, params).content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        refused = client.post(url, params)
    assert refused.status_code == 409 and sent == []
    settings.REPLAY_BULK_MAX_TASKS = 50
    with django_capture_on_commit_callbacks(execute=True):
        queued = client.post(url, params)
    assert queued.status_code == 302
    snapshots = {first.validations.get().pk, second.validations.get().pk}
    requests = ReplayRequest.objects.all()
    assert {r.original_id for r in requests} == snapshots
    assert all((r.template, r.model, r.requested_by) == ("terse", "", operator) for r in requests)
    assert sorted(args[0] for args in sent) == sorted(r.pk for r in requests)
    # The page lists them with their state and polls while any is pending (issue 22).
    listed = client.get(url).content.decode()
    assert listed.count('data-state="queued"') == 2 and 'hx-trigger="every 2s"' in listed


def test_bulk_replay_lists_refuses_nothing_and_narrows_by_age(
    client: Any, operator: Any, requester: Any
) -> None:
    """V9: the poll gets only the list of replays; filters that do not parse show the
    error and no preview; a replay of nothing is refused (409, said why); the age filter
    keeps recent validations only."""
    make_reviewable_task(requester)
    ValidationSnapshot.objects.update(rendered_input_chars=4000)
    client.force_login(operator)
    url = reverse("ops_bulk_replay")
    poll = client.get(url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="replay-requests")
    html = poll.content.decode()
    assert html.lstrip().startswith('<section class="panel" id="replay-requests"')
    assert "bulk-filters" not in html
    wrong = client.get(url, {"task_ids": "7, x"}).content.decode()
    assert "&#x27;x&#x27; is not a task id." in wrong and "bulk-preview" not in wrong
    nothing = client.post(url, {"task_ids": "999999"})
    assert nothing.status_code == 409
    page = nothing.content.decode()
    assert "Nothing to replay: no validation matches these filters." in page
    assert "0 tasks match" in page and "Estimated input" not in page
    recent = client.get(url, {"since_days": "1"}).content.decode()
    assert "1 task match" in recent and "Estimated input" in recent
    ValidationSnapshot.objects.update(created_at=timezone.now() - timedelta(days=3))
    assert "0 tasks match" in client.get(url, {"since_days": "2"}).content.decode()
    assert ReplayRequest.objects.count() == 0


def _form_actions(html: str) -> list[str]:
    return re.findall(r'<form[^>]*\saction="([^"]*)"', html)


def _post_form_fields(html: str) -> list[tuple[str, str]]:
    form = re.search(r'<form method="post"[^>]*>(.*?)</form>', html, re.S)
    assert form, "no POST form on the preview"
    return re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', form.group(1))


def test_bulk_replay_urls_never_carry_the_csrf_token(
    client: Any,
    operator: Any,
    requester: Any,
    monkeypatch: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """Issue item 9: the CSRF token is posted in the body only; no redirect Location and
    no rendered form action carries ``csrfmiddlewaretoken`` (access log, history)."""
    from project.celery import app as celery_app

    monkeypatch.setattr(celery_app, "send_task", lambda *a, **kw: None)
    make_reviewable_task(requester)
    make_reviewable_task(requester, title="Second")
    client.force_login(operator)
    url = reverse("ops_bulk_replay")
    preview = client.get(url, {"validator_statuses": ["insufficient_evidence"]})
    html = preview.content.decode()
    assert "Replay 2 validations" in html
    assert all("csrfmiddlewaretoken" not in a for a in _form_actions(html))
    # Submit the POST form as a browser does: its action and every field it holds.
    action = re.search(r'<form method="post" action="([^"]*)"', html)
    assert action
    fields = _post_form_fields(html)
    assert any(name == "csrfmiddlewaretoken" for name, _ in fields)
    data: dict[str, list[str]] = {}
    for name, value in fields:
        data.setdefault(name, []).append(value)
    with django_capture_on_commit_callbacks(execute=True):
        queued = client.post(action.group(1).replace("&amp;", "&"), data)
    assert queued.status_code == 302
    assert "csrfmiddlewaretoken" not in queued["Location"]
    assert "validator_statuses=insufficient_evidence" in queued["Location"]
    after = _form_actions(client.get(queued["Location"]).content.decode())
    assert after and all("csrfmiddlewaretoken" not in a for a in after)
    # An old URL that still holds the token does not carry it on into the page's forms.
    stale = client.get(
        url, {"validator_statuses": ["insufficient_evidence"], "csrfmiddlewaretoken": "x" * 64}
    ).content.decode()
    assert all("csrfmiddlewaretoken" not in a for a in _form_actions(stale))
    # A refused queue (nothing matches) renders the page again: no token in its actions.
    refused = client.post(url, {"task_ids": "999999", "csrfmiddlewaretoken": "x" * 64})
    assert refused.status_code == 409
    assert all("csrfmiddlewaretoken" not in a for a in _form_actions(refused.content.decode()))
