"""Issue 27, item 1: the audit queue and the blind audit page. Before the judgement the
pages show request, answer, evidence and the claims' text, never the validator's verdict,
score, reason or the task's status; after it, the verdict beside the person's call."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from evidence_app.models import Audit, ClaimLabel, TaskAuditSettings
from tasks_app.models import Task, ToolEvidence
from tests.audit_helpers import ANSWER, drawn_audit

pytestmark = pytest.mark.django_db

# What would tell a reviewer the verdict: its words, the score, the route, the status.
VERDICT_TELLS = ("accepted", "0.93", "auto_accepted", "awaiting", "validator's verdict:")


def blind(html: str) -> bool:
    lowered = html.lower()
    return not any(tell in lowered for tell in VERDICT_TELLS)


def test_the_audit_queue_lists_open_audits_oldest_first_blind(client: Any, reviewer: Any) -> None:
    """Issue 27, item 1: attempt and age; no verdict; issue 36: no task title or id."""
    first = drawn_audit("accepted", title="Budget question")
    second = drawn_audit("rejected", title="Leave question")
    Audit.objects.filter(pk=first.pk).update(
        created_at=timezone.now() - timezone.timedelta(hours=3)
    )
    client.force_login(reviewer)
    response = client.get("/review/audits/")
    assert response.status_code == 200
    html = response.content.decode()
    assert html.index(f"audit-row-{first.pk}") < html.index(f"audit-row-{second.pk}")
    assert "Budget question" not in html and "Leave question" not in html
    assert f"/tasks/{first.task_id}/" not in html and "3\xa0hours" in html
    assert '<strong id="audits-open">2</strong>' in html
    assert blind(html.split('id="audit-list"')[1]) and "rejected" not in html.lower()
    # The nav names the page, and the review queue links to it with the count.
    assert 'href="/review/audits/" class="active"' in html
    queue = client.get("/review/").content.decode()
    assert 'id="queue-audits" href="/review/audits/">2 open audits</a>' in queue


def test_the_blind_page_shows_the_attempt_and_no_verdict(client: Any, reviewer: Any) -> None:
    """Issue 27, item 1: request, answer, evidence, the claims' text; nothing that says
    what the validator decided; the first view is recorded once."""
    audit = drawn_audit("accepted")
    client.force_login(reviewer)
    response = client.get(f"/review/audits/{audit.pk}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert audit.task.request in html and ANSWER in html
    assert f'id="ev-{ToolEvidence.objects.get(task=audit.task).pk}"' in html
    assert "The budget is 1,750 EUR per employee" in html and "It is paid once a year" in html
    assert 'class="claim' not in html  # no claim marks in the answer
    assert blind(html), [t for t in VERDICT_TELLS if t in html.lower()]
    audit.refresh_from_db()
    seen = audit.first_viewed_at
    assert seen is not None
    client.get(f"/review/audits/{audit.pk}/")
    audit.refresh_from_db()
    assert audit.first_viewed_at == seen


def test_not_correct_without_a_comment_is_refused_and_nothing_changes(
    client: Any, reviewer: Any
) -> None:
    """Issue 27, item 1: the comment is required when not correct."""
    audit = drawn_audit("accepted")
    client.force_login(reviewer)
    response = client.post(
        f"/review/audits/{audit.pk}/",
        {"correct": "not_correct", "comment": "  ", "claim_0": "contradicted"},
    )
    assert response.status_code == 422
    html = response.content.decode()
    assert "needs a comment" in html and blind(html)
    audit.refresh_from_db()
    assert audit.state == "open" and audit.correct is None
    assert not ClaimLabel.objects.exists()
    missing = client.post(f"/review/audits/{audit.pk}/", {"comment": "x"})
    assert (
        missing.status_code == 422
        and "Say whether the answer is correct" in missing.content.decode()
    )


def test_the_judgement_reveals_the_verdict_and_a_second_is_refused(
    client: Any, reviewer: Any
) -> None:
    """Issue 27, item 1: audit done and claim labels in one step; then the verdict beside
    the person's call; a second submit changes nothing."""
    audit = drawn_audit("accepted")
    client.force_login(reviewer)
    url = f"/review/audits/{audit.pk}/"
    response = client.post(
        url,
        {"correct": "not_correct", "comment": "It is 1,800 EUR.", "claim_0": "contradicted"},
        follow=True,
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "You said not correct; the validator accepted it: a false accept." in html
    assert 'id="audit-verdict">Accepted<' in html and 'id="audit-form"' not in html
    audit.refresh_from_db()
    assert audit.state == "done" and audit.correct is False and audit.reviewer == reviewer
    assert [(c.claim_index, c.label) for c in ClaimLabel.objects.all()] == [(0, "contradicted")]
    before = list(Audit.objects.values()), list(ClaimLabel.objects.values())
    again = client.post(url, {"correct": "correct", "claim_1": "supported"}, follow=True)
    assert "Not recorded: Audit" in again.content.decode()
    assert (list(Audit.objects.values()), list(ClaimLabel.objects.values())) == before


def test_requesters_cannot_open_audits(client: Any, requester: Any) -> None:
    """Issue 27, item 1: the review queue's roles."""
    audit = drawn_audit("accepted", owner=requester)
    client.force_login(requester)
    assert client.get("/review/audits/").status_code == 403
    assert client.get(f"/review/audits/{audit.pk}/").status_code == 403
    assert client.post(f"/review/audits/{audit.pk}/", {"correct": "correct"}).status_code == 403
    audit.refresh_from_db()
    assert audit.state == "open" and audit.first_viewed_at is None


def test_the_new_task_page_takes_audit_rates_between_0_and_1(client: Any, requester: Any) -> None:
    """Issue 27, item 1: per-task rates at creation, in the Advanced part."""
    client.force_login(requester)
    page = client.get("/tasks/new/").content.decode()
    assert 'id="advanced-audits"' in page and 'name="audit_rate"' in page
    base = {"request": "What is the budget?", "validation_policy": "always"}
    refused = client.post("/tasks/new/", {**base, "audit_rate": "1.5"})
    assert refused.status_code == 422
    assert "less than or equal to 1" in refused.content.decode()
    assert not Task.objects.exists()
    made = client.post("/tasks/new/", {**base, "audit_rate": "0.25", "audit_reject_rate": ""})
    assert made.status_code == 302
    own = TaskAuditSettings.objects.get(task=Task.objects.get())
    assert (own.audit_rate, own.audit_reject_rate) == (0.25, None)
