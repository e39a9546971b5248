"""Drill 6: the authorization matrix (A2, U1–U6).

Every API operation (from the ninja OpenAPI schema) and every page (from the URL
resolver) is requested as each of five people: anonymous, the requester who owns the
task, another requester, a reviewer and an operator. Each cell has an expected status.
An endpoint or page added without a row here fails the test, so a new URL cannot ship
without someone deciding who may use it.

Each state-changing request gets fresh objects (a task in ``needs_review`` owned by the
requester, with a run, two tool results and a validation snapshot), so a call in one
cell cannot change the outcome of another; reads share one set.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from evidence_app.models import Audit, AutoAcceptThreshold, JudgeComparison, ReplayRequest
from project.api import api
from tasks_app.accounts.auth import api_token_create
from tasks_app.models import LLMRequestSnapshot, WebhookDelivery, WebhookEndpoint
from tasks_app.workflow import services
from tests.drills.support import report
from tests.factories import KnowledgeDocumentFactory
from tests.ui.conftest import make_reviewable_task

pytestmark = [pytest.mark.drill, pytest.mark.django_db]

ROLES = ("anonymous", "requester", "other", "reviewer", "operator")


def row(anonymous: int, requester: int, other: int, reviewer: int, operator: int) -> dict:
    return dict(zip(ROLES, (anonymous, requester, other, reviewer, operator), strict=True))


# Requesters see only their own tasks: anyone else's is a 404, so ids do not leak (A2).
OWNED = row(401, 200, 404, 200, 200)
SIGNED_IN = row(401, 200, 200, 200, 200)
OPERATORS_ONLY = row(401, 403, 403, 403, 200)

API_MATRIX: dict[str, dict[str, int]] = {
    "GET /api/v1/health": row(200, 200, 200, 200, 200),
    "GET /api/v1/me": SIGNED_IN,
    "POST /api/v1/tasks": row(401, 201, 201, 201, 201),
    "GET /api/v1/tasks": SIGNED_IN,
    "GET /api/v1/tasks/active": SIGNED_IN,
    "GET /api/v1/tasks/{task_id}": OWNED,
    # Decisions belong to the requester and reviewers; operators inspect (S5, as in the UI).
    "POST /api/v1/tasks/{task_id}/feedback": row(401, 200, 404, 200, 403),
    # Undo (issue 26): the person who decided (here the requester) or a reviewer.
    "POST /api/v1/tasks/{task_id}/feedback/{feedback_id}/undo": row(401, 200, 404, 200, 403),
    "POST /api/v1/tasks/{task_id}/claim": row(401, 403, 404, 200, 403),
    "DELETE /api/v1/tasks/{task_id}/claim": row(401, 403, 404, 200, 403),
    "GET /api/v1/tasks/{task_id}/events": OWNED,
    "GET /api/v1/tasks/{task_id}/runs": OWNED,
    # Transcripts are reviewers' and operators' material, as on the pages (issue 34).
    "GET /api/v1/runs/{run_id}/messages": row(401, 403, 404, 200, 200),
    "GET /api/v1/runs/{run_id}/evidence": OWNED,
    "GET /api/v1/evidence/{evidence_id}": OWNED,
    "GET /api/v1/tasks/{task_id}/validations": OWNED,
    "GET /api/v1/validations/{validation_id}": OWNED,
    # Operators only, checked before the lookup: the same 403 whether the id exists or not.
    "POST /api/v1/validations/{validation_id}/replay": row(401, 403, 403, 403, 202),
    "GET /api/v1/replays/{replay_id}": OPERATORS_ONLY,
    "POST /api/v1/documents": row(401, 403, 403, 403, 201),
    "GET /api/v1/documents": OPERATORS_ONLY,
    "GET /api/v1/documents/{document_id}": OPERATORS_ONLY,
    "GET /api/v1/stats/agreement": OPERATORS_ONLY,
    # The review team's figures (issue 27 item 6).
    "GET /api/v1/team": OPERATORS_ONLY,
    # The certified false-accept rate (issue 27): operators, as agreement.
    "GET /api/v1/trust": OPERATORS_ONLY,
    # External attempts (issue 14): only the task's owner submits; this task is run by
    # Evidentia's own agent and is in needs_review, so even the owner gets 409.
    "POST /api/v1/tasks/{task_id}/attempts": row(401, 409, 404, 403, 403),
    "POST /api/v1/tasks/{task_id}/attempts/{attempt_index}/events": row(401, 409, 404, 403, 403),
    "POST /api/v1/tasks/{task_id}/attempts/{attempt_index}/finish": row(401, 409, 404, 403, 403),
    # Webhooks belong to whoever registered them; for anyone else they do not exist.
    "POST /api/v1/webhooks": row(401, 201, 201, 201, 201),
    "GET /api/v1/webhooks": SIGNED_IN,
    "GET /api/v1/webhooks/{webhook_id}": row(401, 200, 404, 404, 404),
    "POST /api/v1/webhooks/{webhook_id}/disable": row(401, 200, 404, 404, 404),
    "GET /api/v1/webhooks/{webhook_id}/deliveries": row(401, 200, 404, 404, 404),
    "POST /api/v1/webhooks/deliveries/{delivery_id}/resend": row(401, 202, 404, 404, 404),
    # OTLP ingestion (issue 15): any signed-in account sends its own traces; an empty
    # export request is a valid one.
    "POST /api/v1/otlp/v1/traces": SIGNED_IN,
    # Each account's own traces and what became of them (issue 34).
    "GET /api/v1/otlp/traces": SIGNED_IN,
    # Claim labels (issue 27): only the person who took the pending decision (the
    # requester here); a reviewer or operator is refused another's decision.
    "POST /api/v1/tasks/{task_id}/claim-labels": row(401, 201, 404, 403, 403),
    # Audits (issue 27): the review queue's roles; reviewers judge, operators look.
    "GET /api/v1/audits": row(401, 403, 403, 200, 200),
    "GET /api/v1/audits/{audit_id}": row(401, 403, 403, 200, 200),
    "POST /api/v1/audits/{audit_id}/judgement": row(401, 403, 403, 200, 403),
    # Judges, their thresholds and the judge gate (issue 46): the Trust and judge pages'
    # operations, operators only. The threshold is a proposal: approving it before its
    # shadow, or stopping it, is a 409; the comparison judged too few cases (422).
    "GET /api/v1/judges": OPERATORS_ONLY,
    "POST /api/v1/judges/certify": row(401, 403, 403, 403, 202),
    "GET /api/v1/judges/thresholds/{threshold_id}": OPERATORS_ONLY,
    "POST /api/v1/judges/thresholds/{threshold_id}/shadow": OPERATORS_ONLY,
    "POST /api/v1/judges/thresholds/{threshold_id}/approve": row(401, 403, 403, 403, 409),
    "POST /api/v1/judges/thresholds/{threshold_id}/stop": row(401, 403, 403, 403, 409),
    "GET /api/v1/judges/comparisons": OPERATORS_ONLY,
    "POST /api/v1/judges/comparisons": row(401, 403, 403, 403, 202),
    "GET /api/v1/judges/comparisons/{comparison_id}": OPERATORS_ONLY,
    "POST /api/v1/judges/comparisons/{comparison_id}/default": row(401, 403, 403, 403, 422),
    "GET /api/v1/judges/shadow": OPERATORS_ONLY,
    # In this order: the operator's start leaves a candidate in shadow for the stop.
    "POST /api/v1/judges/shadow": row(401, 403, 403, 403, 201),
    "POST /api/v1/judges/shadow/stop": OPERATORS_ONLY,
    # The labelled cases taken out (issue 46): operators only.
    "GET /api/v1/labelled-cases": OPERATORS_ONLY,
}

API_BODIES: dict[str, dict[str, Any]] = {
    "POST /api/v1/tasks": {"request": "How many days of leave?"},
    "POST /api/v1/tasks/{task_id}/feedback": {"action": "satisfied"},
    "POST /api/v1/validations/{validation_id}/replay": {},
    "POST /api/v1/documents": {"title": "Doc", "body": "Body"},
    "POST /api/v1/tasks/{task_id}/attempts": {
        "final_answer": "An answer.",
        "runs": [{"model": "acme:agent"}],
    },
    "POST /api/v1/tasks/{task_id}/attempts/{attempt_index}/events": {"events": []},
    "POST /api/v1/tasks/{task_id}/attempts/{attempt_index}/finish": {"final_answer": "x"},
    # A public address literal: registration resolves nothing and connects nowhere.
    "POST /api/v1/webhooks": {"url": "http://93.184.216.34/hook"},
    "POST /api/v1/otlp/v1/traces": {"resourceSpans": []},
    "POST /api/v1/tasks/{task_id}/claim-labels": {
        "claims": [{"claim_index": 0, "label": "supported"}]
    },
    "POST /api/v1/audits/{audit_id}/judgement": {"correct": True},
    "POST /api/v1/judges/thresholds/{threshold_id}/stop": {"reason": "The audits look wrong"},
    "POST /api/v1/judges/comparisons": {
        "template": "terse",
        "model": "offline:judge",
        "cases": ["supported-02"],
    },
    "POST /api/v1/judges/shadow": {"template": "terse", "model": "offline:judge"},
}

LOGIN = 302  # anonymous: redirected to the login page
DONE = 302  # a plain (non-htmx) form POST that worked redirects back (post/redirect/get)
PAGE = row(LOGIN, 200, 200, 200, 200)
OWNED_PAGE = row(LOGIN, 200, 404, 200, 200)
STAFF_PAGE = row(LOGIN, 403, 403, 200, 200)
OPERATOR_PAGE = row(LOGIN, 403, 403, 403, 200)
STAFF_MATERIAL = row(LOGIN, 403, 404, 200, 200)

# (method, route name) -> expectations. POST pages are sent a valid form.
PAGE_MATRIX: dict[str, dict[str, int]] = {
    "GET login": row(200, 200, 200, 200, 200),
    "POST logout": row(302, 302, 302, 302, 302),
    "GET api-docs": row(302, 302, 302, 302, 302),
    "GET admin:index": row(LOGIN, LOGIN, LOGIN, 200, 200),
    "GET account": PAGE,
    "POST account_token_create": row(LOGIN, DONE, DONE, DONE, DONE),
    # Only the token's owner can revoke it; for anyone else it does not exist.
    "POST account_token_revoke": row(LOGIN, DONE, 404, 404, 404),
    "POST account_webhook_create": row(LOGIN, DONE, DONE, DONE, DONE),
    # Only the webhook's owner disables it or sends its deliveries again (issue 14).
    "POST account_webhook_disable": row(LOGIN, DONE, 404, 404, 404),
    "POST account_webhook_resend": row(LOGIN, DONE, 404, 404, 404),
    # Reviewers and operators start at the review queue (issue 13); requesters at their tasks.
    "GET home": row(LOGIN, 200, 200, 302, 302),
    "GET my_tasks": PAGE,
    "GET task_list_all": STAFF_PAGE,
    "GET task_new": PAGE,
    "GET task_detail": OWNED_PAGE,
    "GET task_progress": OWNED_PAGE,
    "POST task_feedback": row(LOGIN, DONE, 404, DONE, 403),
    "POST decision_undo": row(LOGIN, DONE, 404, DONE, 403),
    "POST task_claim": row(LOGIN, 403, 404, DONE, 403),
    "POST task_note": row(LOGIN, DONE, 404, DONE, 403),
    "GET task_section": OWNED_PAGE,
    # The validator's input and raw responses, and transcripts, are staff material
    # (issue 13): the owner is refused, anyone else's task does not exist for them.
    "GET snapshot_section": STAFF_MATERIAL,
    "GET snapshot_download": STAFF_MATERIAL,
    "GET evidence_content": OWNED_PAGE,
    # The Evidence list's pages and its search (issue 39): as the task page.
    "GET evidence_list": OWNED_PAGE,
    "GET claim_evidence": OWNED_PAGE,
    "GET run_transcript": STAFF_MATERIAL,
    # The trace tree's fragments (issue 26): runs, model calls and tool calls.
    "GET trace_runs": STAFF_MATERIAL,
    "GET trace_steps": STAFF_MATERIAL,
    "GET trace_call": STAFF_MATERIAL,
    "GET trace_tool": STAFF_MATERIAL,
    # Assignment is the reviewers' (issue 13); operators inspect, they do not triage.
    "POST task_assign": row(LOGIN, 403, 403, DONE, 403),
    # The knowledge base, searched by reviewers from the task page (issue 13).
    "GET kb_search": STAFF_PAGE,
    "GET kb_document": STAFF_PAGE,
    "GET review_queue": STAFF_PAGE,
    "GET ops_index": OPERATOR_PAGE,
    "GET ops_templates": OPERATOR_PAGE,
    "GET ops_task_inputs": OPERATOR_PAGE,
    "GET ops_llm_requests": OPERATOR_PAGE,
    "GET ops_llm_request": OPERATOR_PAGE,
    "GET ops_validator_requests": OPERATOR_PAGE,
    "GET ops_validation": OPERATOR_PAGE,
    "POST ops_replay": row(LOGIN, 403, 403, 403, DONE),
    "GET ops_bulk_replay": OPERATOR_PAGE,
    "GET ops_agreement": OPERATOR_PAGE,
    "GET ops_trust": OPERATOR_PAGE,
    # A proposed auto-accept threshold's shadow and approval (issue 38), an approved
    # one's stop (issue 46): operators only.
    "POST ops_threshold": row(LOGIN, 403, 403, 403, DONE),
    "GET ops_charts": OPERATOR_PAGE,
    "GET ops_team": OPERATOR_PAGE,
    # Changing the judge (issue 27): the gate's page and its forms are the operators'.
    "GET ops_judge": OPERATOR_PAGE,
    "POST ops_judge": row(LOGIN, 403, 403, 403, DONE),
    # The drill's comparison is not finished: the operator passes the role check and the
    # gate refuses, the page coming back with the form and the reason kept (issue 47).
    "POST ops_judge_default": row(LOGIN, 403, 403, 403, 422),
    "POST ops_judge_shadow": row(LOGIN, 403, 403, 403, DONE),
    # Audits (issue 27): the review queue's roles; only reviewers judge.
    "GET audit_queue": STAFF_PAGE,
    "GET audit_detail": STAFF_PAGE,
    # The blind page's request, rules and tool results, by the audit's id (issue 36).
    "GET audit_section": STAFF_PAGE,
    "GET audit_evidence": STAFF_PAGE,
    "POST audit_detail": row(LOGIN, 403, 403, DONE, 403),
}


def api_operations() -> set[str]:
    schema = api.get_openapi_schema()
    return {f"{method.upper()} {path}" for path, ops in schema["paths"].items() for method in ops}


def page_routes() -> dict[str, URLPattern]:
    """Every named page outside the API and the admin (whose own views Django guards;
    only its index is in the matrix), plus the unnamed API-docs redirect."""
    found: dict[str, URLPattern] = {}

    def walk(patterns: list[Any], prefix: str, namespace: str) -> None:
        for p in patterns:
            if isinstance(p, URLResolver):
                if p.namespace == "admin":
                    continue
                if str(p.pattern).startswith("api/v1/"):
                    continue  # the NinjaAPI: covered by the OpenAPI operations
                walk(p.url_patterns, prefix + str(p.pattern), p.namespace or namespace)
            elif isinstance(p, URLPattern):
                route = prefix + str(p.pattern)
                if route.startswith("^api/v1/"):
                    continue  # the JSON 404 for unknown API paths
                name = p.name or ("api-docs" if route == "api/docs" else route)
                found[name] = p

    walk(get_resolver().url_patterns, "", "")
    return found


@dataclass
class World:
    users: dict[str, Any]
    tokens: dict[str, str]
    shared: dict[str, Any] | None = None


@pytest.fixture
def world(requester: Any, other_requester: Any, reviewer: Any, operator: Any) -> World:
    users = {
        "requester": requester,
        "other": other_requester,
        "reviewer": reviewer,
        "operator": operator,
    }
    tokens = {role: api_token_create(user=user, name="matrix")[1] for role, user in users.items()}
    return World(users=users, tokens=tokens)


def fresh_objects(world: World) -> dict[str, Any]:
    task = make_reviewable_task(world.users["requester"])
    run = task.runs.get()
    # One claim in the verdict, so its evidence fragment (issue 12) has something to show.
    snapshot = task.validations.get()
    snapshot.result = {
        **(snapshot.result or {}),
        "claims": [{"id": "1", "text": "a claim", "verdict": "unsupported", "citations": []}],
    }
    snapshot.save(update_fields=["result"])
    endpoint = WebhookEndpoint.objects.create(
        owner=world.users["requester"], url="http://93.184.216.34/hook", events=["task.closed"]
    )
    delivery = WebhookDelivery.objects.create(
        endpoint=endpoint, task=task, event_type="task.closed", msg_id=f"msg_{uuid.uuid4().hex}"
    )
    call = LLMRequestSnapshot.objects.create(
        run=run,
        iteration=0,
        provider="test",
        model_name="test:model",
        message_count=1,
        message_chars=10,
        tool_schema_chars=0,
    )
    return {
        "webhook_id": endpoint.pk,
        "endpoint_id": endpoint.pk,
        "delivery_id": delivery.pk,
        "attempt_index": 1,
        "task_id": task.pk,
        "run_id": run.pk,
        "call_id": call.pk,
        "request_id": call.pk,
        "evidence_id": run.tool_evidence.order_by("sequence").first().pk,
        "validation_id": task.validations.get().pk,
        "snapshot_id": task.validations.get().pk,
        "replay_id": ReplayRequest.objects.create(original=snapshot).pk,
        "comparison_id": JudgeComparison.objects.create(
            template="terse",
            model="offline:judge",
            baseline_template="default",
            baseline_model="offline:judge",
            state="succeeded",
        ).pk,
        "document_id": KnowledgeDocumentFactory().pk,
        "token_id": api_token_create(user=world.users["requester"], name="revoke-me")[0].pk,
        "section": "request",
        "claim_id": "1",
        "audit_id": Audit.objects.create(
            snapshot=snapshot, task=task, attempt_index=1, route="auto_accepted", probability=1.0
        ).pk,
        "threshold_id": AutoAcceptThreshold.objects.create(
            template_version="default",
            model_name="offline:judge",
            target=0.02,
            delta=0.05,
            threshold=0.9,
        ).pk,
        "task": task,
    }


def with_pending_decision(world: World, objects: dict[str, Any]) -> dict[str, Any]:
    """The objects plus ``feedback_id``: the requester's decision in its undo window."""
    decision = services.task_decide(
        task_id=objects["task_id"],
        actor=world.users["requester"],
        action="satisfied",
        undo_seconds=30,
    )
    return {**objects, "feedback_id": decision.pk}


def objects_for(world: World, method: str) -> dict[str, Any]:
    """Fresh objects for a call that may change state; reads share one set."""
    if method in {"GET", "HEAD"}:
        if world.shared is None:
            world.shared = fresh_objects(world)
        return world.shared
    return fresh_objects(world)


def call_api(world: World, role: str, operation: str) -> int:
    method, path = operation.split(" ", 1)
    objects = objects_for(world, method)
    if "{feedback_id}" in path:
        objects = with_pending_decision(world, objects)
    if operation == "POST /api/v1/tasks/{task_id}/claim-labels":
        objects = with_pending_decision(world, objects)
    url = re.sub(r"\{(\w+)\}", lambda m: str(objects[m.group(1)]), path)
    if operation == "POST /api/v1/tasks/{task_id}/feedback":
        API_BODIES[operation]["expected_version"] = objects["task"].version
    headers = {}
    if role != "anonymous":
        headers["Authorization"] = f"Bearer {world.tokens[role]}"
    client = Client()
    response = client.generic(
        method,
        url,
        data=json.dumps(API_BODIES.get(operation, {})) if method != "GET" else "",
        content_type="application/json",
        headers=headers,
    )
    return response.status_code


PAGE_KWARGS = {
    "task_section": ("task_id", "section"),
    "snapshot_section": ("task_id", "snapshot_id", "section"),
}
PAGE_FORMS: dict[str, Any] = {
    "task_feedback": lambda o: {"action": "satisfied", "version": o["task"].version},
    "task_claim": lambda o: {"op": "claim"},
    "task_note": lambda o: {"comment": "a note"},
    "account_token_create": lambda o: {"name": "new"},
    "account_webhook_create": lambda o: {"url": "http://93.184.216.34/hook"},
    "task_assign": lambda o: {"assignee": ""},
    "ops_replay": lambda o: {},
    "ops_judge": lambda o: {"template": "terse", "model": "offline:judge", "cases": "supported-02"},
    "ops_judge_default": lambda o: {"confirm": "yes"},
    "ops_judge_shadow": lambda o: {
        "op": "start",
        "shadow-template": "terse",
        "shadow-model": "offline:judge",
    },
    "audit_detail": lambda o: {"correct": "correct"},
    "ops_threshold": lambda o: {"op": "shadow"},
}


def call_page(world: World, role: str, entry: str, routes: dict[str, URLPattern]) -> int:
    method, name = entry.split(" ", 1)
    objects = objects_for(world, method)
    if name == "decision_undo":
        objects = with_pending_decision(world, objects)
    if name == "admin:index":
        url = "/admin/"
    elif name == "api-docs":
        url = "/api/docs"
    else:
        pattern = routes[name]
        params = [g for g in re.findall(r"<(?:\w+:)?(\w+)>", str(pattern.pattern))]
        if name == "snapshot_section":
            objects = {**objects, "section": "input"}
        url = reverse(name, kwargs={p: objects[p] for p in params})
    # A client per request: the logout cell must not sign out the cells after it.
    client = Client()
    if role != "anonymous":
        client.force_login(world.users[role])
    if method == "POST":
        form = PAGE_FORMS.get(name, lambda o: {})(objects)
        return client.post(url, form).status_code
    return client.get(url).status_code


def test_every_api_operation_and_page_has_an_expectation() -> None:
    """A2: no endpoint or page exists without a row in the matrix (and no stale rows)."""
    assert api_operations() == set(API_MATRIX)
    names = {entry.split(" ", 1)[1] for entry in PAGE_MATRIX} - {"admin:index"}
    assert set(page_routes()) == names


def test_authorization_matrix(world: World) -> None:
    """A2/U1–U6: every API operation and page × {anonymous, requester, other requester,
    reviewer, operator} gets its expected status."""
    routes = page_routes()
    mismatches = []
    cells = 0
    for operation, expected in API_MATRIX.items():
        for role in ROLES:
            got = call_api(world, role, operation)
            cells += 1
            if got != expected[role]:
                mismatches.append(f"{operation} as {role}: {got}, expected {expected[role]}")
    for entry, expected in PAGE_MATRIX.items():
        for role in ROLES:
            got = call_page(world, role, entry, routes)
            cells += 1
            if got != expected[role]:
                mismatches.append(f"{entry} as {role}: {got}, expected {expected[role]}")
    assert not mismatches, "\n".join(mismatches)
    report(
        "authz matrix",
        f"{len(API_MATRIX)} API operations + {len(PAGE_MATRIX)} pages x {len(ROLES)} roles = "
        f"{cells} cells, 0 unexpected",
    )
