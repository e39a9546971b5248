"""Issue 27, item 1: the audits API. Blind before the judgement (an open audit shows no
verdict, route or probability), revealed after; 409 and 422 leave every row unchanged;
per-task audit rates at creation."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from evidence_app.models import Audit, ClaimLabel, TaskAuditSettings
from tasks_app.models import Task
from tests.audit_helpers import drawn_audit

pytestmark = pytest.mark.django_db

BLIND = ("verdict", "route", "false_verdict", "probability", "correct")


def post(client: Client, url: str, data: Any, **headers: str) -> Any:
    return client.post(url, data=json.dumps(data), content_type="application/json", headers=headers)


def rows() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    return list(Audit.objects.values()), list(ClaimLabel.objects.values())


def test_an_open_audit_shows_no_verdict_in_the_list_or_alone(rita: Client) -> None:
    """Issue 27, item 1: blind before; issue 36: nor does it name its task (its page and
    API would tell the verdict)."""
    audit = drawn_audit("accepted")
    listed = rita.get("/api/v1/audits")
    assert listed.status_code == 200, listed.content
    [item] = listed.json()["items"]
    assert item["id"] == audit.pk and item["state"] == "open"
    assert item["task_title"] is None and item["task_id"] is None
    assert all(item[k] is None for k in BLIND)
    one = rita.get(f"/api/v1/audits/{audit.pk}").json()
    assert all(one[k] is None for k in BLIND)
    assert [c["text"] for c in one["claims"]] == [
        "The budget is 1,750 EUR per employee",
        "It is paid once a year",
    ]
    assert all(c["verdict"] is None and c["label"] is None for c in one["claims"])
    assert "accepted" not in json.dumps(one["claims"])


def test_the_judgement_reveals_the_verdict(rita: Client) -> None:
    """Issue 27, item 1: revealed after; the done list holds it."""
    audit = drawn_audit("accepted")
    response = post(
        rita,
        f"/api/v1/audits/{audit.pk}/judgement",
        {
            "correct": False,
            "comment": "The handbook says 1,800 EUR.",
            "claims": [{"claim_index": 0, "label": "contradicted"}],
        },
    )
    assert response.status_code == 200, response.content
    data = response.json()
    assert data["state"] == "done" and data["correct"] is False
    assert data["verdict"] == "accepted" and data["route"] == "auto_accepted"
    assert data["false_verdict"] is True and data["probability"] == 1.0
    assert data["reviewer"] == "rita"
    assert data["claims"][0] == {
        "claim_index": 0,
        "text": "The budget is 1,750 EUR per employee",
        "verdict": "supported",
        "label": "contradicted",
    }
    assert rita.get("/api/v1/audits").json()["items"] == []
    [done] = rita.get("/api/v1/audits?state=done").json()["items"]
    assert done["id"] == audit.pk and done["verdict"] == "accepted"


def test_a_second_judgement_is_409_and_changes_nothing(rita: Client) -> None:
    """Issue 27, item 1."""
    audit = drawn_audit("accepted")
    url = f"/api/v1/audits/{audit.pk}/judgement"
    assert post(rita, url, {"correct": True}).status_code == 200
    before = rows()
    again = post(rita, url, {"correct": False, "comment": "no", "claims": []})
    assert again.status_code == 409, again.content
    assert again.json()["code"] == "stale_action"
    assert rows() == before


@pytest.mark.parametrize(
    "body",
    [
        {"correct": False, "comment": "  "},
        {"correct": True, "claims": [{"claim_index": 5, "label": "supported"}]},
        {
            "correct": True,
            "claims": [
                {"claim_index": 0, "label": "supported"},
                {"claim_index": 1, "label": "wrong"},
            ],
        },
        {"correct": "perhaps"},
        {"comment": "no call"},
    ],
)
def test_bad_input_is_422_and_writes_nothing(rita: Client, body: dict[str, Any]) -> None:
    """Issue 27, item 1: the whole judgement is refused."""
    audit = drawn_audit("accepted")
    before = rows()
    response = post(rita, f"/api/v1/audits/{audit.pk}/judgement", body)
    assert response.status_code == 422, response.content
    assert rows() == before


def test_requesters_see_no_audits_and_operators_do_not_judge(alice: Client, otto: Client) -> None:
    """Issue 27, item 1: the review queue's roles."""
    audit = drawn_audit("accepted")
    assert alice.get("/api/v1/audits").status_code == 403
    assert alice.get(f"/api/v1/audits/{audit.pk}").status_code == 403
    assert otto.get(f"/api/v1/audits/{audit.pk}").status_code == 200
    before = rows()
    assert post(otto, f"/api/v1/audits/{audit.pk}/judgement", {"correct": True}).status_code == 403
    assert rows() == before
    assert otto.get("/api/v1/audits/999999").status_code == 404


def test_a_retried_judgement_with_its_idempotency_key_is_replayed(rita: Client) -> None:
    """Issue 27, item 1: the same key answers the first response, not a 409."""
    audit = drawn_audit("accepted")
    url = f"/api/v1/audits/{audit.pk}/judgement"
    first = post(rita, url, {"correct": True}, **{"Idempotency-Key": "audit-1"})
    second = post(rita, url, {"correct": True}, **{"Idempotency-Key": "audit-1"})
    assert first.status_code == second.status_code == 200
    assert second.json() == first.json()
    assert second.headers.get("Idempotent-Replayed") == "true"


def test_the_audit_list_pages_by_cursor(rita: Client) -> None:
    """Issue 27, item 1: oldest first, ``next`` reads the following page."""
    ids = [drawn_audit("accepted").pk for _ in range(3)]
    first = rita.get("/api/v1/audits?limit=2").json()
    assert [a["id"] for a in first["items"]] == ids[:2] and first["count"] == 3
    second = rita.get(first["next"]).json()
    assert [a["id"] for a in second["items"]] == ids[2:] and second["next"] is None


def test_per_task_audit_rates_are_set_at_creation_and_checked(alice: Client) -> None:
    """Issue 27, item 1: audit_rate and audit_reject_rate in TaskCreateIn, 0..1."""
    made = post(
        alice,
        "/api/v1/tasks",
        {"request": "What is the budget?", "audit_rate": 0.5, "audit_reject_rate": 0},
    )
    assert made.status_code == 201, made.content
    assert made.json()["audit_rate"] == 0.5 and made.json()["audit_reject_rate"] == 0.0
    own = TaskAuditSettings.objects.get(task_id=made.json()["id"])
    assert (own.audit_rate, own.audit_reject_rate) == (0.5, 0.0)
    for bad in ({"audit_rate": 1.5}, {"audit_reject_rate": -0.1}):
        refused = post(alice, "/api/v1/tasks", {"request": "Again?", **bad})
        assert refused.status_code == 422, refused.content
    assert Task.objects.count() == 1
