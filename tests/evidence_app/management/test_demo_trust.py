"""Issue 27, item 7: the demo shows the measuring of trust: seed_demo starts a candidate
in shadow and gives every demo task its audit rate (one a second judge); demo_audits
judges a share of the open audits from the demo's own labels, the rest stay open."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command

from evidence_app.management.commands.demo_audits import demo_label
from evidence_app.models import Audit, AutoAcceptThreshold, ShadowJudge, ValidationSnapshot
from evidence_app.validation.services import validation_run
from tasks_app.models import Task
from tests.factories import TaskFactory

pytestmark = pytest.mark.django_db

SPECS = {
    s["title"]: s
    for s in json.loads((settings.BASE_DIR / "demo" / "tasks.json").read_text("utf-8"))
}


def test_every_demo_task_is_audited_and_one_has_the_stricter_second_judge() -> None:
    assert all(spec.get("audit_rate") == 1.0 for spec in SPECS.values())
    second = [t for t, s in SPECS.items() if s.get("second_model")]
    assert second == ["Annual training budget"]
    assert SPECS[second[0]]["second_model"] == "offline:judge-corroborating"


def test_seed_demo_starts_the_shadow_candidate_once() -> None:
    call_command("seed_demo", no_tasks=True, stdout=io.StringIO())
    call_command("seed_demo", no_tasks=True, stdout=io.StringIO())
    shadow = ShadowJudge.objects.get()
    assert shadow.active and (shadow.template, shadow.model) == (
        "terse",
        "offline:judge-corroborating",
    )
    assert shadow.started_by is not None and shadow.started_by.username == "operator"


def _audited(owner: Any, title: str, answer: str) -> Audit:
    task = TaskFactory(owner=owner, title=title, status="awaiting_feedback", final_answer=answer)
    snapshot = ValidationSnapshot.objects.create(
        task=task, attempt_index=1, status="accepted", route="auto_accepted", audit_probability=1
    )
    return Audit.objects.create(
        snapshot=snapshot, task=task, attempt_index=1, route="auto_accepted", probability=1
    )


def test_demo_audits_judges_a_share_from_the_demo_labels_and_leaves_the_rest_open() -> None:
    call_command("seed_demo", no_tasks=True, stdout=io.StringIO())
    requester = get_user_model().objects.get(username="requester")
    right = _audited(requester, "Annual training budget", "It is 1,750 EUR (Training Budget).")
    wrong = _audited(requester, "Sabbatical programme length and eligibility", "Six months.")
    left = _audited(requester, "Minimum password length", "14 characters.")
    call_command("demo_audits", share=0.6, stdout=io.StringIO())
    for audit in (right, wrong, left):
        audit.refresh_from_db()
    assert (right.state, right.correct, right.reviewer.username) == ("done", True, "demo-labels")
    assert (wrong.state, wrong.correct) == ("done", False)
    assert "no single answer" in wrong.comment
    assert left.state == "open" and left.correct is None


def test_demo_label_reads_the_expected_figures() -> None:
    spec = SPECS["Annual training budget"]
    assert demo_label(spec, "The budget is 1,750 EUR per employee.")[0] is True
    correct, comment = demo_label(spec, "The budget is 1,500 EUR.")
    assert correct is False and "1750" in comment


def test_demo_autoaccept_shows_a_threshold_an_accept_above_it_a_person_below_it_and_drift(
    settings: Any,
) -> None:
    """Issue 38, item 8: on its scripted history the demo certifies and approves a
    threshold for its judge and for the shadow candidate; of two external answers the
    one two documents state is auto-accepted, the one stated once goes to a person below
    the threshold; the candidate's wrong audits after approval stop its auto-accept; a
    second run does nothing."""
    settings.VALIDATOR_MODEL = "offline:judge"
    call_command("seed_demo", no_tasks=True, stdout=io.StringIO())
    out = io.StringIO()
    call_command("demo_autoaccept", stdout=out)
    approved = {row.model_name: row for row in AutoAcceptThreshold.objects.filter(state="approved")}
    assert approved["offline:judge"].threshold == pytest.approx(0.95)
    assert not approved["offline:judge"].stopped
    assert approved["offline:judge-corroborating"].stopped
    for task in Task.objects.filter(title__startswith="Auto-accept demo:"):
        validation_run(task_id=task.pk, attempt_index=1)
    statuses = dict(
        Task.objects.filter(title__startswith="Auto-accept demo:").values_list("title", "status")
    )
    assert statuses == {
        "Auto-accept demo: hotel rate, stated by two documents": "awaiting_feedback",
        "Auto-accept demo: hotel rate, stated once": "needs_review",
        # Issue 43, item 1: the task's second judge (agreeing) does not skip the threshold.
        "Auto-accept demo: hotel rate, stated once, with a second judge": "needs_review",
    }
    assert "AUTOACCEPT_UNCERTIFIED=auto-accept" in out.getvalue()
    again = io.StringIO()
    call_command("demo_autoaccept", stdout=again)
    assert "already shown" in again.getvalue()
    assert AutoAcceptThreshold.objects.filter(state="approved").count() == 2
