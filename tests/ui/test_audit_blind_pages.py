"""Issue 36, item 1 and 2 on the pages: while an audit is open, a reviewer who could
judge it reaches nothing of its task that tells the verdict or status without being told
(the task page is withheld, list rows show "audit open"); a deliberate look, a list by
status or the review queue is recorded and makes their judgement not blind; the blind
page loads its sections and evidence by the audit's id; their own work is refused."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group

from evidence_app.models import Audit, AuditExposure, TaskAuditSettings
from tasks_app.models import Feedback, Task, ToolEvidence
from tests.audit_helpers import drawn_audit
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

VERDICT_TELLS = ("accepted by the validator", "awaiting", "0.93", "auto_accepted")


def shows_verdict(html: str) -> bool:
    lowered = html.lower()
    return any(tell in lowered for tell in VERDICT_TELLS)


def test_the_task_page_is_withheld_until_a_deliberate_look_which_is_recorded(
    client: Any, reviewer: Any
) -> None:
    """Issue 36, item 1: the page says an audit is open and shows no verdict; opening
    it anyway records the exposure, and the audit page then says the judgement will
    not count."""
    audit = drawn_audit("accepted", title="Budget question")
    client.force_login(reviewer)
    withheld = client.get(f"/tasks/{audit.task_id}/").content.decode()
    assert 'id="task-withheld"' in withheld and not shows_verdict(withheld)
    assert "Budget question" not in withheld
    assert not AuditExposure.objects.exists()
    shown = client.get(f"/tasks/{audit.task_id}/?reveal=1").content.decode()
    assert shows_verdict(shown)
    exposure = AuditExposure.objects.get(audit=audit, user=reviewer)
    assert exposure.channel == f"GET /tasks/{audit.task_id}/"
    # Once seen, the page is not withheld again (nothing left to protect).
    assert 'id="task-withheld"' not in client.get(f"/tasks/{audit.task_id}/").content.decode()
    page = client.get(f"/review/audits/{audit.pk}/").content.decode()
    assert 'id="audit-not-blind"' in page


def test_the_requester_and_operators_see_the_task_page_as_before(
    client: Any, requester: Any, operator: Any
) -> None:
    """Issue 36, item 1: the requester sees their own task; an operator (who does not
    judge audits) too; neither read is an exposure."""
    audit = drawn_audit("accepted", owner=requester)
    for user in (requester, operator):
        client.force_login(user)
        html = client.get(f"/tasks/{audit.task_id}/").content.decode()
        assert 'id="task-withheld"' not in html and shows_verdict(html)
    assert not AuditExposure.objects.exists()


def test_all_tasks_withholds_the_rows_of_open_audits_and_a_status_filter_is_recorded(
    client: Any, reviewer: Any
) -> None:
    """Issue 36, item 1 (issue 43: without a marker): All tasks leaves out the row of a
    task with an open audit the reader could judge (a row marked "audit open" tied its
    title to the audit) and says how many it left out; listing by status tells where the
    task went, so it is recorded."""
    audit = drawn_audit("accepted")
    client.force_login(reviewer)
    html = client.get("/tasks/").content.decode()
    assert f'data-task-id="{audit.task_id}"' not in html and "audit open" not in html
    assert "1 task of this page is not listed" in html
    assert not AuditExposure.objects.exists()
    client.get("/tasks/?status=awaiting_feedback")
    assert AuditExposure.objects.get().channel == "all tasks filtered by awaiting_feedback"


def test_the_review_queue_lists_are_recorded(client: Any, reviewer: Any) -> None:
    """Issue 36, item 1: a task back in the queue after its audited verdict says where it
    went: listing it is recorded."""
    audit = drawn_audit("rejected")
    Task.objects.filter(pk=audit.task_id).update(status="needs_review")
    client.force_login(reviewer)
    assert client.get("/review/").status_code == 200
    assert AuditExposure.objects.get().channel == "the review queue"


def test_the_blind_page_loads_sections_and_evidence_by_the_audit_without_an_exposure(
    client: Any, reviewer: Any, settings: Any
) -> None:
    """Issue 36, item 1: the blind page's lazy request and evidence content come by the
    audit's URLs (no task id in the page); reading them records nothing."""
    settings.UI_LAZY_SECTION_CHARS = 100
    audit = drawn_audit("accepted", request="What is the budget? " * 20)
    client.force_login(reviewer)
    html = client.get(f"/review/audits/{audit.pk}/").content.decode()
    assert f"/tasks/{audit.task_id}/" not in html
    assert f"/review/audits/{audit.pk}/sections/request/" in html
    evidence = ToolEvidence.objects.get(task_id=audit.task_id)
    assert f"/review/audits/{audit.pk}/evidence/{evidence.pk}/" in html
    section = client.get(f"/review/audits/{audit.pk}/sections/request/")
    assert section.status_code == 200 and "What is the budget?" in section.content.decode()
    content = client.get(f"/review/audits/{audit.pk}/evidence/{evidence.pk}/")
    assert content.status_code == 200 and "1,750" in content.content.decode()
    assert not AuditExposure.objects.exists()


def test_a_reviewer_who_decided_the_task_is_refused_on_the_page(client: Any, reviewer: Any) -> None:
    """Issue 36, item 2: the audit page says why, the POST is a 403, the audit stays
    open, and the audit list does not offer it."""
    audit = drawn_audit("accepted")
    Feedback.objects.create(task=audit.task, author=reviewer, action="satisfied")
    client.force_login(reviewer)
    page = client.get(f"/review/audits/{audit.pk}/").content.decode()
    assert 'id="audit-refusal"' in page and "own work" in page
    refused = client.post(f"/review/audits/{audit.pk}/", {"correct": "correct"})
    assert refused.status_code == 403
    assert Audit.objects.get(pk=audit.pk).state == "open"
    assert f"audit-row-{audit.pk}" not in client.get("/review/audits/").content.decode()
    other = UserFactory(username="ray", is_staff=True)
    other.groups.add(Group.objects.get_or_create(name="reviewers")[0])
    client.force_login(other)
    assert f"audit-row-{audit.pk}" in client.get("/review/audits/").content.decode()


def test_trust_states_the_rules_and_lists_the_verdicts_it_does_not_cover(
    client: Any, operator: Any, requester: Any
) -> None:
    """Issue 36, items 1 and 3: the Trust page says what counts (blind, no self-audit,
    the rate floor) and lists the rate-0 verdicts: how many, whose, who set it, why."""
    zero = drawn_audit("accepted", owner=requester)
    zero.snapshot.__class__.objects.filter(pk=zero.snapshot_id).update(audit_probability=0)
    TaskAuditSettings.objects.create(
        task_id=zero.task_id,
        audit_rate=0,
        audit_rate_set_by=operator,
        audit_rate_reason="synthetic load",
    )
    zero.delete()
    client.force_login(operator)
    html = client.get("/ops/trust/").content.decode()
    integrity = html.split('id="trust-integrity"')[1].split("</p>")[0]
    assert "not blind" in integrity and "own work" in integrity and "floor" in integrity
    uncovered = html.split('id="trust-uncovered"')[1].split("</section>")[0]
    assert "alice" in uncovered and "otto" in uncovered and "synthetic load" in uncovered
