"""Drill: audits nobody can bend (issue 36). A reviewer, a requester and an attacker try
to move the certified false-accept and false-reject figures: peeking at an open audit's
verdict through every channel, auditing their own work, lowering audit rates, forging,
replaying and racing judgements through the page and the API at once (parallel clients
on a live server). Each attack ends with the certified figures (eligible, judged, wrong
and the 95 % interval of both rates over the last 30 days) as they were without it.

Issue 43 adds the certified auto-accept threshold to what must not move and the lines a
person holding several roles at once would try: a second model that skips the judge's
threshold, a requester labelling their own agent's answers, the evidence ids of the
audit page read through the API, the operator pages (requests, replay and its filters,
validation requests) and the outstanding audits of Trust, ``GET /trust`` and /metrics.

One summary line per attack (``make drills``; docs/drills.md). Runs on SQLite and on
PostgreSQL (``DATABASE_URL``)."""

from __future__ import annotations

import json
import re
import threading
from datetime import timedelta
from typing import Any

import httpx
import pytest
from django.contrib.auth.models import Group
from django.test import Client, override_settings
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from evidence_app.autoaccept.recompute import thresholds_recompute
from evidence_app.autoaccept.services import threshold_approve, threshold_shadow_start
from evidence_app.models import (
    Audit,
    AuditExposure,
    AutoAcceptThreshold,
    ClaimLabel,
    TaskAuditSettings,
    ThresholdState,
    ValidationSnapshot,
)
from evidence_app.trust.audits import audit_judge
from evidence_app.trust.rates import trust_report
from evidence_app.validation.services import validation_run
from evidence_app.validator.templates import get_template
from tasks_app.accounts.auth import api_token_create
from tasks_app.models import Feedback, Task, ToolEvidence, WebhookDelivery
from tasks_app.notifications.webhooks import webhook_endpoint_create
from tests.audit_helpers import ANSWER, drawn_audit, scripted_validator, two_claim_verdict
from tests.drills.support import report
from tests.evidence_app.trust_helpers import labelled_accepts
from tests.evidence_app.validation_helpers import JUDGE, validating_task
from tests.factories import TaskFactory, ToolEvidenceFactory, UserFactory

pytestmark = [
    pytest.mark.drill,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(300),
]

# What would tell an open audit's verdict, route or where its task went.
TELLS = (
    "accepted by the validator",
    "awaiting_feedback",
    "awaiting feedback",
    "auto_accepted",
    '"accepted"',
    "0.93",
)


def reviewer_named(name: str) -> Any:
    user = UserFactory(username=name, is_staff=True)
    user.groups.add(Group.objects.get_or_create(name="reviewers")[0])
    return user


def operator_reviewer(name: str) -> Any:
    """A person in both groups, as the demo's ``operator``."""
    user = reviewer_named(name)
    user.groups.add(Group.objects.get_or_create(name="operators")[0])
    return user


def token(user: Any) -> str:
    return api_token_create(user=user, name="drill")[1]


def api(user: Any) -> Client:
    return Client(headers={"Authorization": f"Bearer {token(user)}"})


def page(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def certified() -> list[tuple[Any, ...]]:
    """The certified figures of the last 30 days, per group and rate."""
    figures = []
    for group in trust_report().groups:
        for rate in (group.window.false_accepts, group.window.false_rejects):
            if rate is not None:
                figures.append(
                    (
                        group.model_name,
                        rate.route,
                        rate.eligible,
                        rate.judged,
                        rate.wrong,
                        rate.interval.estimate,
                        rate.interval.high,
                    )
                )
    return sorted(figures)


def thresholds() -> list[tuple[Any, ...]]:
    """Every judge's certified auto-accept thresholds after the job recertifies them:
    (model, state, τ, labels, stopped)."""
    thresholds_recompute()
    return sorted(
        (row.model_name, row.state, row.threshold, row.labelled, row.stopped)
        for row in AutoAcceptThreshold.objects.exclude(state=ThresholdState.RETIRED)
    )


@pytest.fixture
def world(requester: Any) -> dict[str, Any]:
    """Four audits judged blind by an honest reviewer (one false accept): the figures
    every attack must leave as they are."""
    honest = reviewer_named("honest")
    for correct in (True, True, False):
        audit = drawn_audit("accepted", owner=requester)
        audit_judge(audit.pk, user=honest, correct=correct, comment="" if correct else "wrong")
    audit = drawn_audit("rejected", owner=requester)
    audit_judge(audit.pk, user=honest, correct=False, comment="rightly rejected")
    return {"honest": honest, "mallory": reviewer_named("mallory"), "requester": requester}


def leaks(body: str, audit: Audit, title: str) -> list[str]:
    """The tells of ``audit``'s verdict in ``body``: in its task's list row when there is
    one; nothing when the body does not name the task at all (an aggregate count)."""
    row = f'data-task-id="{audit.task_id}"'
    # A search box echoing the words searched for names nothing.
    body = body.replace(f'value="{title}"', "")
    if row in body:
        body = body.split(row, 1)[1].split("</tr>", 1)[0]
    elif title not in body and f"/tasks/{audit.task_id}/" not in body:
        return []
    lowered = body.lower()
    return [tell for tell in TELLS if tell in lowered]


PEEKS = [
    # (channel, client kind, url; {task}, {validation}, {title} filled in)
    ("task page", "page", "/tasks/{task}/"),
    ("task page, opened anyway", "page", "/tasks/{task}/?reveal=1"),
    ("task page section (answer)", "page", "/tasks/{task}/sections/answer/"),
    ("task progress fragment", "page", "/tasks/{task}/progress/"),
    ("verdict input download", "page", "/tasks/{task}/validations/{validation}/download/input.txt"),
    ("All tasks", "page", "/tasks/"),
    ("All tasks by status", "page", "/tasks/?status=awaiting_feedback"),
    ("review queue and its search", "page", "/review/?q={title}"),
    ("audit list page", "page", "/review/audits/"),
    ("GET /tasks/{id}", "api", "/api/v1/tasks/{task}"),
    ("GET /tasks/{id}/events", "api", "/api/v1/tasks/{task}/events"),
    ("GET /tasks/{id}/validations", "api", "/api/v1/tasks/{task}/validations"),
    ("GET /validations/{id}", "api", "/api/v1/validations/{validation}"),
    ("GET /tasks?status=awaiting_feedback", "api", "/api/v1/tasks?status=awaiting_feedback"),
    ("GET /tasks?q= (search)", "api", "/api/v1/tasks?q={title}"),
    ("GET /tasks/active (counts)", "api", "/api/v1/tasks/active"),
    ("GET /audits", "api", "/api/v1/audits"),
    ("GET /audits/{id}", "api", "/api/v1/audits/{audit}"),
    # Issue 43: the evidence ids of the audit page, and the operator pages of a person in
    # both groups (kind "ops": mallory is an operator too).
    ("GET /evidence/{id} (an id of the audit page)", "api", "/api/v1/evidence/{evidence}"),
    ("GET /evidence/{id} as text", "api", "/api/v1/evidence/{evidence}?format=text"),
    ("model requests", "ops", "/ops/requests/"),
    ("model requests of the task", "ops", "/ops/requests/?task={task}"),
    ("validation requests", "ops", "/ops/requests/validations/{validation}/"),
    ("replay filtered by verdict", "ops", "/ops/replay/?validator_statuses=accepted"),
    ("replay filtered by another verdict", "ops", "/ops/replay/?validator_statuses=rejected"),
    ("validation and its replays", "ops", "/ops/validations/{validation}/"),
    ("validator inputs of the task", "ops", "/ops/tasks/{task}/inputs/"),
    ("Trust", "ops", "/ops/trust/"),
    ("GET /trust", "opsapi", "/api/v1/trust"),
    ("/metrics", "ops", "/metrics"),
]

# Issue 43: these name the task or show its verdict beside it: the read must be recorded
# (before, each showed the task, its later attempts or its verdict and recorded nothing).
MUST_RECORD = {
    "GET /evidence/{id} (an id of the audit page)",
    "GET /evidence/{id} as text",
    "model requests",
    "model requests of the task",
    "validation requests",
    "replay filtered by verdict",
    "replay filtered by another verdict",
}


@pytest.mark.parametrize(("channel", "kind", "url"), PEEKS, ids=[p[0] for p in PEEKS])
def test_peeking_through_a_channel_never_moves_the_figures(
    world: dict[str, Any], channel: str, kind: str, url: str
) -> None:
    """Item 1: a channel either shows no verdict (withheld) or records the read, and the
    peeker's judgement is then counted apart: the certified figures do not move."""
    mallory = world["mallory"]
    if kind.startswith("ops"):
        mallory.groups.add(Group.objects.get_or_create(name="operators")[0])
    target = drawn_audit("accepted", owner=world["requester"], title="Peek target 7f3a")
    before = certified()
    client = page(mallory) if kind in ("page", "ops") else api(mallory)
    # The audit page lists the audited attempt's evidence; its ids are all a peeker has.
    shown = page(mallory).get(f"/review/audits/{target.pk}/").content.decode()
    evidence = re.findall(r'id="ev-(\d+)"', shown)[0]
    response = client.get(
        url.format(
            task=target.task_id,
            validation=target.snapshot_id,
            audit=target.pk,
            evidence=evidence,
            title="Peek target 7f3a",
        )
    )
    assert response.status_code == 200, (channel, response.status_code)
    body = response.content.decode()
    exposed = AuditExposure.objects.filter(audit=target, user=mallory).exists()
    assert exposed or channel not in MUST_RECORD, channel
    if not exposed:
        told = leaks(body, target, "Peek target 7f3a")
        assert not told, (channel, told)
        outcome = "withheld: nothing in the response tells the verdict"
    else:
        # The peeker judges against the truth; it is stored, not counted.
        judged = audit_judge(target.pk, user=mallory, correct=False, comment="peeked")
        assert judged.blind is False
        outcome = "recorded: the judgement after it is not blind, not counted"
    assert certified() == before
    report(f"audit tampering · peek · {channel}", f"{outcome}; figures unmoved")


def test_webhooks_and_team_figures_tell_no_open_audit(world: dict[str, Any], settings: Any) -> None:
    """Item 1: webhooks go to the task's owner only (who may not judge it); the team
    figures name the oldest audit by its own id."""
    settings.WEBHOOK_ALLOW_PRIVATE = True
    mallory = world["mallory"]
    endpoint = webhook_endpoint_create(
        owner=mallory, url="http://127.0.0.1:9/hook", events=["audit.opened", "audit.judged"]
    )
    target = drawn_audit("accepted", owner=world["requester"])
    before = certified()
    assert not WebhookDelivery.objects.filter(endpoint=endpoint).exists()
    operator = UserFactory(username="op-drill", is_staff=True)
    operator.groups.add(Group.objects.get_or_create(name="operators")[0])
    team = api(operator).get("/api/v1/team").json()
    assert team["audits"]["oldest_audit_id"] is not None and "oldest_task_id" not in team["audits"]
    assert Audit.objects.get(pk=target.pk).state == "open" and certified() == before
    report(
        "audit tampering · peek · webhooks and team figures",
        "no delivery to a would-be judge, no task id; figures unmoved",
    )


def test_auditing_ones_own_work_is_refused_everywhere(world: dict[str, Any]) -> None:
    """Item 2: the requester (a reviewer too) and a reviewer who decided the task are
    refused on the page and through the API; the audit stays open."""
    requester = world["requester"]
    requester.groups.add(Group.objects.get_or_create(name="reviewers")[0])
    decider = reviewer_named("decider")
    target = drawn_audit("accepted", owner=requester)
    Feedback.objects.create(task=target.task, author=decider, action="satisfied")
    before = certified()
    statuses = []
    for user in (requester, decider):
        statuses.append(page(user).post(f"/review/audits/{target.pk}/", {"correct": "correct"}))
        statuses.append(
            api(user).post(
                f"/api/v1/audits/{target.pk}/judgement",
                data=json.dumps({"correct": True}),
                content_type="application/json",
            )
        )
        assert api(user).get("/api/v1/audits").json()["count"] == 0
    assert [r.status_code for r in statuses] == [403, 403, 403, 403]
    assert Audit.objects.get(pk=target.pk).state == "open" and certified() == before
    report("audit tampering · self-audit", "4 × 403 (page and API), audit open; figures unmoved")


def test_lowering_audit_rates_is_refused_or_recorded_and_not_covered(
    world: dict[str, Any], settings: Any
) -> None:
    """Item 3: a requester's rate below the floor is a 422 naming the field; an
    operator's exception is recorded, and its verdicts are listed as not covered
    instead of turning the window unknown."""
    settings.AUDIT_RATE, settings.AUDIT_REJECT_RATE = 0.05, 0.02
    before = certified()
    client = api(world["requester"])
    refused = [
        client.post(
            "/api/v1/tasks",
            data=json.dumps({"request": "Measure me less", field: 0}),
            content_type="application/json",
        )
        for field in ("audit_rate", "audit_reject_rate")
    ]
    assert [r.status_code for r in refused] == [422, 422]
    assert "audit_rate" in refused[0].content.decode()
    assert "audit_reject_rate" in refused[1].content.decode()
    assert not Task.objects.filter(request="Measure me less").exists()
    operator = UserFactory(username="op-rates", is_staff=True)
    operator.groups.add(Group.objects.get_or_create(name="operators")[0])
    made = api(operator).post(
        "/api/v1/tasks",
        data=json.dumps({"request": "Load", "audit_rate": 0, "audit_rate_reason": "load test"}),
        content_type="application/json",
    )
    assert made.status_code == 201, made.content
    # Six of somebody else's verdicts at rate 0 (as issue 36 found them).
    for _ in range(6):
        zero = drawn_audit("accepted", owner=operator)
        zero.snapshot.__class__.objects.filter(pk=zero.snapshot_id).update(audit_probability=0)
        TaskAuditSettings.objects.create(
            task_id=zero.task_id,
            audit_rate=0,
            audit_rate_set_by=operator,
            audit_rate_reason="load test",
        )
        zero.delete()
    assert certified() == before
    uncovered = trust_report().uncovered
    assert [(u.count, u.set_by, u.reason) for u in uncovered] == [(6, "op-rates", "load test")]
    report(
        "audit tampering · lowering rates",
        "requester 2 × 422; operator's exception recorded, 6 verdicts listed not covered; "
        "figures unmoved",
    )


def test_forged_judgements_are_refused_and_write_nothing(world: dict[str, Any]) -> None:
    """Item 4/5: a corrected citation to another task's evidence, a claim that does not
    exist, a field the schema does not have (``blind``), an audit that does not exist
    and a requester without the reviewer role: each refused, nothing written."""
    mallory = world["mallory"]
    target = drawn_audit("accepted", owner=world["requester"])
    foreign = ToolEvidenceFactory(task=TaskFactory(), content="other")
    before = certified()
    labels = ClaimLabel.objects.count()
    client = api(mallory)
    bodies = [
        {
            "correct": True,
            "claims": [
                {
                    "claim_index": 0,
                    "label": "supported",
                    "corrected_citation": {"evidence_id": foreign.pk, "quote": "other"},
                }
            ],
        },
        {"correct": True, "claims": [{"claim_index": 99, "label": "supported"}]},
        {"correct": True, "blind": True},
        {"correct": "yes"},
    ]
    codes = [
        client.post(
            f"/api/v1/audits/{target.pk}/judgement",
            data=json.dumps(body),
            content_type="application/json",
        ).status_code
        for body in bodies
    ]
    codes.append(
        client.post(
            "/api/v1/audits/999999/judgement",
            data=json.dumps({"correct": True}),
            content_type="application/json",
        ).status_code
    )
    outsider = UserFactory(username="outsider")
    codes.append(
        api(outsider)
        .post(
            f"/api/v1/audits/{target.pk}/judgement",
            data=json.dumps({"correct": True}),
            content_type="application/json",
        )
        .status_code
    )
    assert codes == [422, 422, 422, 422, 404, 403], codes
    assert Audit.objects.get(pk=target.pk).state == "open"
    assert ClaimLabel.objects.count() == labels and certified() == before
    assert ToolEvidence.objects.filter(pk=foreign.pk).exists()
    report("audit tampering · forging", f"{len(codes)} forged judgements refused; figures unmoved")


def test_replayed_judgements_store_one(world: dict[str, Any]) -> None:
    """Item 5: the same judgement sent again (with its idempotency key: the stored
    answer; without: 409) stores one judgement; the figures move by that one only."""
    honest = world["honest"]
    target = drawn_audit("accepted", owner=world["requester"])
    before = certified()
    client = api(honest)
    body = json.dumps({"correct": True})
    replies = [
        client.post(
            f"/api/v1/audits/{target.pk}/judgement",
            data=body,
            content_type="application/json",
            headers={"Idempotency-Key": "drill-replay-1"},
        )
        for _ in range(3)
    ]
    again = client.post(
        f"/api/v1/audits/{target.pk}/judgement", data=body, content_type="application/json"
    )
    assert [r.status_code for r in replies] == [200, 200, 200] and again.status_code == 409
    judged = [(row[3], row[4]) for row in certified() if row[1] == "auto_accepted"]
    was = [(row[3], row[4]) for row in before if row[1] == "auto_accepted"]
    assert judged == [(was[0][0] + 1, was[0][1])]
    report(
        "audit tampering · replaying",
        "3 replays answer the stored judgement, 1 without key 409; one judgement counted",
    )


def _csrf_of(client: httpx.Client, path: str) -> str:
    html = client.get(path).text
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    assert found, "no CSRF token on the audit page"
    return found.group(1)


def test_racing_judgements_through_page_and_api_store_one(
    live_server: Any, world: dict[str, Any]
) -> None:
    """Item 5: ten reviewers judge one audit at once, five through the page and five
    through the API: exactly one judgement is stored and counted."""
    target = drawn_audit("accepted", owner=world["requester"])
    before = certified()
    racers = [reviewer_named(f"racer{i}") for i in range(10)]
    clients: list[tuple[str, httpx.Client, dict[str, Any]]] = []
    for i, user in enumerate(racers):
        if i % 2:
            http = httpx.Client(
                base_url=live_server.url,
                headers={"Authorization": f"Bearer {token(user)}"},
                timeout=60,
            )
            clients.append(("api", http, {}))
        else:
            session = page(user).cookies["sessionid"].value
            http = httpx.Client(
                base_url=live_server.url, cookies={"sessionid": session}, timeout=60
            )
            csrf = _csrf_of(http, f"/review/audits/{target.pk}/")
            clients.append(("page", http, {"csrf": csrf}))
    barrier = threading.Barrier(len(clients))
    results: list[Any] = [None] * len(clients)

    def judge(index: int, kind: str, http: httpx.Client, extra: dict[str, Any]) -> None:
        barrier.wait(timeout=30)
        if kind == "api":
            response = http.post(
                f"/api/v1/audits/{target.pk}/judgement", json={"correct": False, "comment": "x"}
            )
        else:
            response = http.post(
                f"/review/audits/{target.pk}/",
                data={
                    "csrfmiddlewaretoken": extra["csrf"],
                    "correct": "not_correct",
                    "comment": "x",
                },
                headers={"Referer": f"{live_server.url}/review/audits/{target.pk}/"},
            )
        results[index] = (kind, response.status_code)

    threads = [threading.Thread(target=judge, args=(i, *clients[i])) for i in range(len(clients))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    for _, http, _ in clients:
        http.close()
    assert all(r is not None for r in results), results
    api_wins = sum(1 for kind, code in results if kind == "api" and code == 200)
    api_conflicts = sum(1 for kind, code in results if kind == "api" and code == 409)
    assert api_wins + api_conflicts == 5, results
    assert all(code in (302, 200) for kind, code in results if kind == "page"), results
    stored = Audit.objects.get(pk=target.pk)
    assert stored.state == "done" and stored.reviewer in racers and stored.blind is True
    after = {row[1]: row for row in certified()}
    was = {row[1]: row for row in before}
    assert after["auto_accepted"][3:5] == (was["auto_accepted"][3] + 1, was["auto_accepted"][4] + 1)
    assert after["auto_rejected"] == was["auto_rejected"]
    report(
        "audit tampering · racing page and API",
        f"10 parallel judgements (5 page, 5 API): 1 stored ({api_wins} API win, "
        f"{api_conflicts} API 409); counted once",
    )


def _approved_threshold(operator: Any, settings: Any) -> AutoAcceptThreshold:
    """The drill judge's threshold certified on 200 right, blind, independent audits
    scoring 0.95 to 0.99 (τ = 0.95) and approved after its shadow."""
    labelled_accepts([0.95 + (i % 5) / 100 for i in range(200)], [False] * 200)
    thresholds_recompute()
    row = AutoAcceptThreshold.objects.get(model_name=JUDGE, state=ThresholdState.PROPOSED)
    threshold_shadow_start(threshold_id=row.pk, user=operator)
    settings.AUTOACCEPT_SHADOW_HOURS = 0
    return threshold_approve(threshold_id=row.pk, user=operator)


def test_a_second_model_does_not_skip_the_certified_threshold(
    world: dict[str, Any], settings: Any
) -> None:
    """Issue 43, item 1: with τ = 0.95 approved for the judge, a requester's task that
    asks for a second judge (the same model, agreeing) and scores 0.93 goes to a person,
    as without it; before, the pair was an uncertified judge and kept its own word."""
    row = _approved_threshold(operator_reviewer("op-gate"), settings)
    before, gates = certified(), thresholds()
    statuses = []
    for second in ("", JUDGE):
        with scripted_validator() as judge:
            judge.replies = [two_claim_verdict("accepted"), two_claim_verdict("accepted")]
            task = validating_task(answer=ANSWER, owner=world["requester"], second_model=second)
            validation_run(task_id=task.pk, attempt_index=1)
        task.refresh_from_db()
        statuses.append(task.status)
    assert statuses == ["needs_review", "needs_review"], statuses
    row.refresh_from_db()
    assert row.state == ThresholdState.APPROVED and row.threshold == pytest.approx(0.95)
    assert certified() == before and thresholds() == gates
    report(
        "audit tampering · second model",
        "score 0.93 under τ 0.95: to a person with and without a second judge; "
        "figures and threshold unmoved",
    )


def test_a_requester_labelling_their_own_answers_certifies_nothing(
    world: dict[str, Any],
) -> None:
    """Issue 43, item 2: a requester's external answers (invented sources) accepted by
    the judge, each marked satisfied by the requester, three through the API and 160
    more as rows: no label, no threshold; the judge stays uncertified."""
    requester = world["requester"]
    before, gates = certified(), thresholds()
    client = api(requester)
    for _ in range(3):
        with (
            scripted_validator() as judge,
            override_settings(AUDIT_RATE=0, AUDIT_REJECT_RATE=0),
        ):
            judge.replies = [two_claim_verdict("accepted")]
            task = validating_task(answer="Hotels cost up to 900 EUR a night.", owner=requester)
            validation_run(task_id=task.pk, attempt_index=1)
        marked = client.post(
            f"/api/v1/tasks/{task.pk}/feedback",
            data=json.dumps({"action": "satisfied"}),
            content_type="application/json",
        )
        assert marked.status_code == 200, marked.content
    for i in range(160):
        task = TaskFactory(owner=requester, status="closed", agent="external")
        ValidationSnapshot.objects.create(
            task=task,
            attempt_index=1,
            status="accepted",
            score=0.97,
            route="auto_accepted",
            template_version=get_template("default").version,
            model_name=JUDGE,
            audit_probability=0,
            created_at=timezone.now() - timedelta(minutes=10, seconds=-i),
        )
        Feedback.objects.create(task=task, author=requester, action="satisfied", state="applied")
    assert Feedback.objects.filter(author=requester, action="satisfied").count() == 163
    assert thresholds() == gates and certified() == before
    assert not AutoAcceptThreshold.objects.filter(threshold__isnull=False).exists()
    report(
        "audit tampering · self-labelling",
        "163 answers self-marked satisfied: 0 labels, no threshold; figures unmoved",
    )


def test_outstanding_audits_are_shown_without_their_route(world: dict[str, Any]) -> None:
    """Issue 43, item 3: an open audit of a rejected verdict: Trust, GET /trust and
    /metrics count it outstanding without its route (per route, one open audit's count
    said where its task went), and reading them records nothing."""
    mallory = operator_reviewer("op-metrics")
    target = drawn_audit("rejected", owner=world["requester"])
    before = certified()
    trust = api(mallory).get("/api/v1/trust").json()
    window = trust["items"][0]["window"]
    assert window["outstanding"] == 1
    assert "outstanding" not in window["false_accepts"]
    assert "outstanding" not in window["false_rejects"]
    metrics = page(mallory).get("/metrics").content.decode()
    outstanding = [
        sample
        for family in text_string_to_metric_families(metrics)
        for sample in family.samples
        if sample.name == "evidentia_audits_outstanding"
    ]
    assert outstanding and all("route" not in s.labels for s in outstanding)
    assert sum(s.value for s in outstanding) == 1
    html = page(mallory).get("/ops/trust/").content.decode()
    assert "Outstanding: 1 audit drawn" in html
    assert not AuditExposure.objects.filter(audit=target).exists()
    assert Audit.objects.get(pk=target.pk).state == "open" and certified() == before
    report(
        "audit tampering · metrics",
        "Trust, GET /trust and /metrics: 1 outstanding, no route; figures unmoved",
    )
