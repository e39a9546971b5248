"""Issue 46, item 1 (issue 43, item 3): an auditor using the API sees what the audit page
shows, blind: the request, rules, answer as claims and the evidence served through the
audit with ids that do not lead back to the task; never the verdict, route, score, task
id or title. The first GET is the auditor's first view; refusals and non-blind reads as
on the page."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import Group

from evidence_app.models import Audit, AuditView
from evidence_app.trust.audits import audit_judge
from evidence_app.trust.blinding import audit_exposures_record
from tasks_app.models import ToolEvidence
from tests.api.conftest import bearer_client
from tests.audit_helpers import ANSWER, drawn_audit
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def _reviewer(name: str) -> Any:
    user = UserFactory(username=name, is_staff=True)
    user.groups.add(Group.objects.get_or_create(name="reviewers")[0])
    return user


def test_an_open_audit_answers_its_material_and_nothing_of_the_verdict(requester: Any) -> None:
    """Issue 46, item 1: request, rules, answer, claims and the audited attempt's
    evidence in full, numbered 1..n; no verdict, route, score, task id, title nor any
    evidence id; the first GET is the auditor's first view, counted once."""
    audit = drawn_audit("accepted", owner=requester, title="Material target", rules="Cite.")
    auditor = _reviewer("auditor")
    client = bearer_client(auditor)
    response = client.get(f"/api/v1/audits/{audit.pk}")
    assert response.status_code == 200
    body = response.json()
    material = body["material"]
    assert material["request"] == audit.task.request and material["rules"] == "Cite."
    assert material["answer"] == ANSWER
    evidence = list(ToolEvidence.objects.filter(task=audit.task, attempt_index=audit.attempt_index))
    assert [e["item"] for e in material["evidence"]] == list(range(1, len(evidence) + 1))
    assert material["evidence"][0]["content"] == evidence[0].content
    assert [c["text"] for c in body["claims"]] == [
        "The budget is 1,750 EUR per employee",
        "It is paid once a year",
    ]
    assert (body["task_id"], body["task_title"], body["verdict"], body["route"]) == (
        None,
        None,
        None,
        None,
    )
    text = json.dumps(body)
    assert "0.93" not in text and "Material target" not in text and "auto_accepted" not in text
    assert all(f'"{e.pk}"' not in text and f": {e.pk}," not in text for e in evidence[1:])
    assert body["refusal"] is None and body["not_blind"] is None
    first = AuditView.objects.get(audit=audit, user=auditor).first_viewed_at
    client.get(f"/api/v1/audits/{audit.pk}")
    assert AuditView.objects.get(audit=audit, user=auditor).first_viewed_at == first
    judged = client.post(
        f"/api/v1/audits/{audit.pk}/judgement",
        data=json.dumps({"correct": True}),
        content_type="application/json",
    ).json()
    assert judged["blind"] is True and judged["verdict"] == "accepted"
    assert Audit.objects.get(pk=audit.pk).judge_first_viewed_at == first


def test_the_requester_is_told_they_may_not_judge_and_a_peek_is_named(requester: Any) -> None:
    """Issue 46, item 1: same rules as the page: the task's requester (a reviewer too) is
    told why they may not judge; a reviewer who read the verdict first is told their
    judgement will not be blind, and it is stored so."""
    requester.is_staff = True
    requester.save(update_fields=["is_staff"])
    requester.groups.add(Group.objects.get_or_create(name="reviewers")[0])
    audit = drawn_audit("accepted", owner=requester)
    own = bearer_client(requester).get(f"/api/v1/audits/{audit.pk}").json()
    assert own["refusal"] and "no one audits their own work" in own["refusal"]
    peeker = _reviewer("peeker")
    audit_exposures_record(user=peeker, task_ids=[audit.task_id], channel="GET /tasks/1/")
    client = bearer_client(peeker)
    assert client.get(f"/api/v1/audits/{audit.pk}").json()["not_blind"] == "GET /tasks/1/"
    judged = client.post(
        f"/api/v1/audits/{audit.pk}/judgement",
        data=json.dumps({"correct": True}),
        content_type="application/json",
    ).json()
    assert judged["blind"] is False


def test_a_judgement_without_a_first_view_is_recorded_as_such(requester: Any) -> None:
    """Issue 46, item 1: judging without any GET is allowed; the judgement has no first
    view (time per item unknown)."""
    audit = drawn_audit("accepted", owner=requester)
    judged = audit_judge(audit.pk, user=_reviewer("hasty"), correct=True)
    assert judged.judge_first_viewed_at is None
