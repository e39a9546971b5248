"""Operator pages that inspect (issue 26 item 5): the LLM requests page lists the
validator's requests beside the agent's, each row opens its details, raw responses are
indented and foldable, and a template version has one spelling on every page."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from evidence_app.validation.services import validation_run
from tasks_app.models import LLMRequestSnapshot
from tests.evidence_app.validation_helpers import validating_task


def _validated(settings: Any, owner: Any) -> Any:
    """A task the offline judge validated, whose agent run made one recorded request."""
    settings.VALIDATOR_MODEL = "offline:judge"
    task = validating_task(owner=owner)
    LLMRequestSnapshot.objects.create(
        run=task.runs.get(),
        iteration=1,
        provider="offline",
        model_name="offline:researcher",
        message_count=3,
        tool_names=["search_documents"],
        message_chars=1234,
        tool_schema_chars=456,
        latency_ms=12,
        full_request={"messages": [{"role": "user", "content": "budget?"}], "tools": []},
    )
    return validation_run(task_id=task.pk, attempt_index=1)


def _rows(html: str) -> list[str]:
    return re.findall(r'<tr class="req-[a-z]+" data-source="([a-z]+)"', html)


@pytest.mark.django_db
def test_llm_requests_page_lists_the_validators_requests_and_filters_by_its_model(
    client: Client, operator: Any, requester: Any, settings: Any
) -> None:
    """Issue 26 item 5: filtering by offline:judge lists the validation (it said "none
    were recorded"); unfiltered, agent and validator rows are both listed, newest first."""
    snapshot = _validated(settings, requester)
    client.force_login(operator)

    judged = client.get(reverse("ops_llm_requests"), {"model": "offline:judge"})
    everything = client.get(reverse("ops_llm_requests")).content.decode()
    of_task = client.get(reverse("ops_task_inputs", args=[snapshot.task_id])).content.decode()

    html = judged.content.decode()
    assert judged.status_code == 200
    assert _rows(html) == ["validator"]
    assert "No model requests recorded" not in html
    assert f'href="{reverse("ops_validator_requests", args=[snapshot.pk])}">details</a>' in html
    assert f"{snapshot.request_count} request" in html
    assert _rows(everything) == ["validator", "agent"]
    assert _rows(of_task) == ["validator", "agent"]
    agent = LLMRequestSnapshot.objects.get()
    assert f'href="{reverse("ops_llm_request", args=[agent.pk])}">details</a>' in everything
    assert (
        _rows(client.get(reverse("ops_llm_requests"), {"model": "no-such-model"}).content.decode())
        == []
    )


@pytest.mark.django_db
def test_request_details_show_indented_foldable_json(
    client: Client, operator: Any, reviewer: Any, requester: Any, settings: Any
) -> None:
    """Issue 26 item 5: a validator row opens its raw responses, JSON indented inside a
    <details>, the exact text one fold deeper; an agent row opens its full request."""
    snapshot = _validated(settings, requester)
    agent = LLMRequestSnapshot.objects.get()
    client.force_login(operator)

    validator_page = client.get(reverse("ops_validator_requests", args=[snapshot.pk]))
    agent_page = client.get(reverse("ops_llm_request", args=[agent.pk])).content.decode()

    html = validator_page.content.decode()
    assert validator_page.status_code == 200
    fold = re.search(
        r'<details class="raw-response" id="raw-response-1" open>.*?'
        r'<pre class="text raw-json"[^>]*>(.*?)</pre>',
        html,
        re.S,
    )
    assert fold, "the raw response is not an open <details> with indented JSON"
    assert "\n  &quot;status&quot;: &quot;accepted&quot;" in fold.group(1)
    assert '<details class="raw-exact"><summary class="small">As received' in html
    assert "&quot;messages&quot;: [\n" in agent_page  # indented, not one line
    assert "offline:researcher" in agent_page and "search_documents" in agent_page
    # Operators only, like the list.
    client.force_login(reviewer)
    assert client.get(reverse("ops_validator_requests", args=[snapshot.pk])).status_code == 403
    assert client.get(reverse("ops_llm_request", args=[agent.pk])).status_code == 403


@pytest.mark.django_db
def test_template_version_has_one_spelling_on_every_page(
    client: Client, operator: Any, requester: Any, settings: Any
) -> None:
    """Issue 26 item 5: "default @ 8b043b30" on the task page, the operator overview,
    the agreement page, the inputs page and the request details, never "default@…" or
    "default, version …"."""
    snapshot = _validated(settings, requester)
    name, digest = snapshot.template_version.split("@")
    spelled = f"{name} @ {digest[:8]}"
    # The owner's decision, so the agreement page has a group to name.
    client.force_login(requester)
    snapshot.task.refresh_from_db()
    decided = client.post(
        reverse("task_feedback", args=[snapshot.task_id]),
        {"action": "satisfied", "version": snapshot.task.version},
    )
    assert decided.status_code == 302, decided.content
    client.force_login(operator)
    pages = {
        "task": reverse("task_detail", args=[snapshot.task_id]),
        "overview": reverse("ops_index"),
        "inputs": reverse("ops_task_inputs", args=[snapshot.task_id]),
        "requests": reverse("ops_validator_requests", args=[snapshot.pk]),
        "validation": reverse("ops_validation", args=[snapshot.pk]),
        "agreement": reverse("ops_agreement"),
    }
    for page, url in pages.items():
        html = client.get(url).content.decode()
        shown = html.replace(f"{name}@{digest}</code>", "")  # the verdict JSON may hold it
        assert spelled in html, f"{page}: no '{spelled}'"
        assert f", version {digest[:8]}" not in html, page
        assert f">{name}@{digest}<" not in shown, page
