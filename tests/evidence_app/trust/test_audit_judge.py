"""Issue 27, item 1: a person judges a drawn audit blind (audit_judge): the call, the
comment and the claim labels are stored together or not at all; a second judgement is
refused; audit.opened and audit.judged go out as signed webhooks."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.db import connection

from evidence_app.models import Audit, ClaimLabel
from evidence_app.trust.audits import audit_judge
from project.errors import Forbidden, InvalidInput, StaleAction
from tasks_app.models import WebhookDelivery
from tasks_app.notifications.webhooks import webhook_endpoint_create, webhook_send_pending
from tests.audit_helpers import drawn_audit
from tests.factories import UserFactory
from tests.webhook_receiver import running_receiver

pytestmark = pytest.mark.django_db


@pytest.fixture
def other_reviewer(db: Any) -> Any:
    user = UserFactory(username="ravi", is_staff=True)
    user.groups.add(Group.objects.get_or_create(name="reviewers")[0])
    return user


def _unchanged(audit: Audit) -> None:
    audit.refresh_from_db()
    assert audit.state == "open" and audit.correct is None and audit.reviewer_id is None
    assert audit.decided_at is None and audit.comment == ""
    assert not ClaimLabel.objects.exists()


def test_a_judgement_stores_the_call_the_comment_and_the_claim_labels(reviewer: Any) -> None:
    """Issue 27, item 1: not correct on an auto-accept is a false accept."""
    audit = drawn_audit("accepted")
    judged = audit_judge(
        audit.pk,
        user=reviewer,
        correct=False,
        comment="  the budget is 1,800 EUR  ",
        claim_labels=[
            {"claim_index": 0, "label": "contradicted"},
            {"claim_index": 1, "label": "supported"},
        ],
    )
    assert judged.state == "done" and judged.correct is False and judged.false_verdict is True
    assert judged.reviewer == reviewer and judged.comment == "the budget is 1,800 EUR"
    assert judged.decided_at is not None
    # Issue 36: judged without opening it: no first view (not a view at the decision).
    assert judged.first_viewed_at is None and judged.judge_first_viewed_at is None
    assert judged.blind is True
    labels = list(ClaimLabel.objects.order_by("claim_index"))
    assert [(c.claim_index, c.label, c.judge_verdict) for c in labels] == [
        (0, "contradicted", "supported"),
        (1, "supported", "supported"),
    ]
    assert all(c.audit_id == audit.pk and c.author == reviewer for c in labels)
    assert labels[0].claim_text == "The budget is 1,750 EUR per employee"


def test_correct_on_an_auto_reject_is_a_false_reject(reviewer: Any) -> None:
    """Issue 27, item 1."""
    audit = drawn_audit("rejected")
    judged = audit_judge(audit.pk, user=reviewer, correct=True)
    assert judged.route == "auto_rejected" and judged.false_verdict is True


def test_a_second_judgement_is_refused_and_changes_nothing(reviewer: Any, operator: Any) -> None:
    """Issue 27, item 1: the conditional update on state=open lets one judgement in."""
    audit = drawn_audit("accepted")
    audit_judge(audit.pk, user=reviewer, correct=True)
    before = Audit.objects.filter(pk=audit.pk).values().get()
    with pytest.raises(StaleAction, match="already judged"):
        audit_judge(
            audit.pk,
            user=reviewer,
            correct=False,
            comment="second thoughts",
            claim_labels=[{"claim_index": 0, "label": "unsupported"}],
        )
    assert Audit.objects.filter(pk=audit.pk).values().get() == before
    assert not ClaimLabel.objects.exists()


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        (
            [{"claim_index": 0, "label": "supported"}, {"claim_index": 7, "label": "supported"}],
            "claim_index 7",
        ),
        (
            [{"claim_index": 0, "label": "supported"}, {"claim_index": 1, "label": "maybe"}],
            "label 'maybe'",
        ),
        (
            [{"claim_index": 0, "label": "supported"}, {"claim_index": 0, "label": "unsupported"}],
            "twice",
        ),
    ],
)
def test_a_bad_claim_label_refuses_the_whole_judgement(
    reviewer: Any, labels: list[dict[str, Any]], message: str
) -> None:
    """Issue 27, item 1: one bad label and neither the call nor any label is stored."""
    audit = drawn_audit("accepted")
    with pytest.raises(InvalidInput, match=message):
        audit_judge(audit.pk, user=reviewer, correct=True, claim_labels=labels)
    _unchanged(audit)


def test_not_correct_needs_a_comment_and_a_requester_cannot_judge(
    reviewer: Any, requester: Any
) -> None:
    """Issue 27, item 1."""
    audit = drawn_audit("accepted")
    with pytest.raises(InvalidInput, match="comment"):
        audit_judge(audit.pk, user=reviewer, correct=False, comment="   ")
    with pytest.raises(Forbidden):
        audit_judge(audit.pk, user=requester, correct=True)
    _unchanged(audit)


def test_audit_events_are_signed_webhooks_blind_when_opened(
    requester: Any, reviewer: Any, settings: Any
) -> None:
    """Issue 27, item 1: audit.opened (no verdict in it) when drawn, audit.judged with the
    person's call, the verdict and false_verdict; verified with standardwebhooks."""
    settings.WEBHOOK_ALLOW_PRIVATE = True
    with running_receiver() as receiver:
        endpoint = webhook_endpoint_create(
            owner=requester, url=receiver.url, events=["audit.opened", "audit.judged"]
        )
        receiver.secret = endpoint.secret
        audit = drawn_audit("accepted", owner=requester)
        opened = json.loads(WebhookDelivery.objects.get(event_type="audit.opened").payload)
        assert set(opened["data"]["audit"]) == {
            "id",
            "state",
            "attempt_index",
            "created_at",
            "url",
        }
        audit_judge(audit.pk, user=reviewer, correct=False, comment="wrong figure")
        webhook_send_pending(endpoint_id=endpoint.pk, task_id=audit.task_id)
    got = receiver.accepted()
    assert [r.event_type for r in got] == ["audit.opened", "audit.judged"]
    assert all(r.task_id == audit.task_id for r in got)
    assert got[0].payload["data"]["audit"]["id"] == audit.pk
    judged = got[1].payload["data"]["audit"]
    assert judged["id"] == audit.pk and judged["correct"] is False
    assert judged["verdict"] == "accepted" and judged["false_verdict"] is True
    assert judged["route"] == "auto_accepted" and judged["comment"] == "wrong figure"


def test_a_refused_judgement_sends_no_webhook(requester: Any, reviewer: Any, settings: Any) -> None:
    """Issue 27, item 1: the audit.judged delivery is written in the judgement's
    transaction, so a refused one leaves none."""
    settings.WEBHOOK_ALLOW_PRIVATE = True
    webhook_endpoint_create(
        owner=requester, url="http://127.0.0.1:9/hooks", events=["audit.judged"]
    )
    audit = drawn_audit("accepted", owner=requester)
    with pytest.raises(InvalidInput):
        audit_judge(
            audit.pk,
            user=reviewer,
            correct=True,
            claim_labels=[{"claim_index": 9, "label": "supported"}],
        )
    assert not WebhookDelivery.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_judgements_exactly_one_is_stored(
    reviewer: Any, other_reviewer: Any
) -> None:
    """Issue 27, item 1: two people submit at once (two threads, two connections):
    the conditional update lets one in; the other is refused with nothing of its own
    written (no call, no claim label)."""
    audit = drawn_audit("accepted")
    barrier = threading.Barrier(2)
    outcomes: dict[str, str] = {}
    lock = threading.Lock()

    def judge(user: Any, correct: bool, label: str) -> None:
        try:
            barrier.wait(timeout=10)
            audit_judge(
                audit.pk,
                user=user,
                correct=correct,
                comment="" if correct else "wrong",
                claim_labels=[{"claim_index": 0, "label": label}],
            )
            result = "ok"
        except StaleAction:
            result = "refused"
        finally:
            connection.close()
        with lock:
            outcomes[user.username] = result

    threads = [
        threading.Thread(target=judge, args=(reviewer, True, "supported")),
        threading.Thread(target=judge, args=(other_reviewer, False, "contradicted")),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert sorted(outcomes.values()) == ["ok", "refused"]
    winner = next(name for name, result in outcomes.items() if result == "ok")
    audit.refresh_from_db()
    assert audit.state == "done" and audit.reviewer.username == winner
    [label] = ClaimLabel.objects.all()
    assert label.author.username == winner and label.audit_id == audit.pk
    assert label.label == ("supported" if audit.correct else "contradicted")
