"""Evidence, validation snapshots and knowledge documents over the API (A1, E1, V7, X8)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from tasks_app.models import KnowledgeDocument
from tests.factories import (
    KnowledgeDocumentFactory,
    RunFactory,
    TaskFactory,
    ToolEvidenceFactory,
    ValidationSnapshotFactory,
)

pytestmark = pytest.mark.django_db

BIG = "x" * 50_000 + " the deep fact is 1,800 EUR " + "y" * 50_000


def test_run_evidence_list_has_no_bodies(alice: Client, requester: Any) -> None:
    """E1, A1: the evidence list gives sizes and hashes, never the content, and does not
    even load the content column."""
    task = TaskFactory(owner=requester)
    run = RunFactory(task=task)
    first = ToolEvidenceFactory(run=run, sequence=0, content=BIG, title="Travel policy")
    ToolEvidenceFactory(run=run, sequence=1, content="short")

    with CaptureQueriesContext(connection) as queries:
        response = alice.get(f"/api/v1/runs/{run.pk}/evidence")
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 2
    item = body["items"][0]
    assert item["id"] == first.pk
    assert item["content_chars"] == len(BIG)
    assert item["title"] == "Travel policy"
    assert "content" not in item
    evidence_sql = [q["sql"] for q in queries if "tasks_app_toolevidence" in q["sql"]]
    assert evidence_sql
    assert not any('"tasks_app_toolevidence"."content"' in sql for sql in evidence_sql)
    assert "deep fact" not in response.content.decode()


def test_evidence_detail_has_the_full_content(alice: Client, requester: Any) -> None:
    """E1, E5: one evidence item comes back whole, with no truncation."""
    evidence = ToolEvidenceFactory(run=RunFactory(task=TaskFactory(owner=requester)), content=BIG)
    body = alice.get(f"/api/v1/evidence/{evidence.pk}").json()
    assert body["content"] == BIG
    assert body["content_sha256"] == evidence.content_sha256


@pytest.mark.parametrize(
    ("query", "headers"),
    [("?format=text", {}), ("", {"Accept": "text/plain"})],
)
def test_evidence_downloads_as_text(
    alice: Client, requester: Any, query: str, headers: dict[str, str]
) -> None:
    """A1: ?format=text or Accept: text/plain gives a text/plain attachment."""
    evidence = ToolEvidenceFactory(run=RunFactory(task=TaskFactory(owner=requester)), content=BIG)
    response = alice.get(f"/api/v1/evidence/{evidence.pk}{query}", headers=headers)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    assert response["Content-Disposition"].startswith("attachment;")
    assert f"evidence-{evidence.pk}" in response["Content-Disposition"]
    assert response.content.decode() == BIG


def test_evidence_of_another_requester_is_404(bob: Client, requester: Any) -> None:
    """A2: evidence follows its task's visibility."""
    evidence = ToolEvidenceFactory(run=RunFactory(task=TaskFactory(owner=requester)))
    for query in ("", "?format=text"):
        response = bob.get(f"/api/v1/evidence/{evidence.pk}{query}")
        assert response.status_code == 404
        assert response.json()["code"] == "not_found"


def test_reviewer_reads_any_evidence(rita: Client, requester: Any) -> None:
    """A2: reviewers see all evidence."""
    evidence = ToolEvidenceFactory(run=RunFactory(task=TaskFactory(owner=requester)))
    assert rita.get(f"/api/v1/evidence/{evidence.pk}").status_code == 200


def test_validations_list_without_bodies_and_detail_with_everything(
    alice: Client, rita: Client, requester: Any
) -> None:
    """V7, V9, A1: the list skips rendered input and raw responses; one snapshot shows
    every V7 field, and to a reviewer the rendered input and the raw responses."""
    task = TaskFactory(owner=requester)
    original = ValidationSnapshotFactory(
        task=task,
        status="rejected",
        score=0.2,
        failure_category="unsupported_claim",
        result={
            "status": "rejected",
            "issues": ["wrong figure"],
            "missing_requirements": [],
            "evidence_gaps": ["no source for 2,000"],
            "recommended_revision_prompt": "Use the handbook figure.",
            "reasoning": "The handbook says 1,800.",
        },
        rendered_input="RENDERED " + BIG,
        system_prompt="You are a validator.",
        raw_responses=['{"status": "rejected"}'],
        template_name="default",
        template_version="default@1a2b",
        model_name="offline:judge",
        evidence_run_ids=[1, 2],
        session_ids=["s-1"],
        tool_result_count=3,
        evidence_chars=1234,
        latency_ms=15,
        input_tokens=100,
        output_tokens=20,
        schema_retry_count=1,
        schema_errors=[{"stage": "json-parse"}],
    )
    replay = ValidationSnapshotFactory(
        task=task, status="accepted", kind="replay", replay_of=original
    )

    with CaptureQueriesContext(connection) as queries:
        listing = alice.get(f"/api/v1/tasks/{task.pk}/validations").json()
    assert [i["id"] for i in listing["items"]] == [original.pk, replay.pk]
    assert listing["items"][1]["replay_of_id"] == original.pk
    assert "rendered_input" not in listing["items"][0]
    assert not any(
        '"evidence_app_validationsnapshot"."rendered_input"' in q["sql"] for q in queries
    )

    body = rita.get(f"/api/v1/validations/{original.pk}").json()
    assert body["status"] == "rejected"
    assert body["passed"] is False
    assert body["issues"] == ["wrong figure"]
    assert body["evidence_gaps"] == ["no source for 2,000"]
    assert body["recommended_revision_prompt"] == "Use the handbook figure."
    assert body["reasoning"] == "The handbook says 1,800."
    assert body["rendered_input"] == "RENDERED " + BIG
    assert body["system_prompt"] == "You are a validator."
    assert body["raw_responses"] == ['{"status": "rejected"}']
    assert body["template_version"] == "default@1a2b"
    assert body["model"] == "offline:judge"
    assert body["evidence_run_ids"] == [1, 2]
    assert body["session_ids"] == ["s-1"]
    assert body["tool_result_count"] == 3
    assert body["evidence_chars"] == 1234
    assert body["latency_ms"] == 15
    assert (body["input_tokens"], body["output_tokens"]) == (100, 20)
    assert body["schema_retry_count"] == 1
    assert body["schema_errors"] == [{"stage": "json-parse"}]


@pytest.mark.finding(34, 6)
def test_a_requester_gets_the_verdict_without_the_validators_internals(
    alice: Client, rita: Client, requester: Any
) -> None:
    """Issue 34 finding 6: before, a requester read the rendered validator input and the
    raw responses through the API, which the pages show to reviewers and operators only.
    Now the verdict in words comes with those fields empty; a reviewer gets them."""
    snapshot = ValidationSnapshotFactory(
        task=TaskFactory(owner=requester),
        result={"status": "rejected", "issues": ["wrong figure"], "reasoning": "Because."},
        rendered_input="RENDERED INPUT",
        system_prompt="You are a validator.",
        raw_responses=['{"status": "rejected"}'],
        schema_errors=[{"stage": "json-parse"}],
    )
    mine = alice.get(f"/api/v1/validations/{snapshot.pk}").json()
    assert (mine["issues"], mine["reasoning"]) == (["wrong figure"], "Because.")
    assert (mine["rendered_input"], mine["system_prompt"]) == ("", "")
    assert (mine["raw_responses"], mine["schema_errors"]) == ([], [])
    staff = rita.get(f"/api/v1/validations/{snapshot.pk}").json()
    assert staff["rendered_input"] == "RENDERED INPUT"
    assert staff["raw_responses"] == ['{"status": "rejected"}']
    snapshot.refresh_from_db()
    assert snapshot.rendered_input == "RENDERED INPUT"  # nothing written


def test_validations_of_another_requester_are_404(bob: Client, requester: Any) -> None:
    """A2: validation snapshots follow their task's visibility."""
    snapshot = ValidationSnapshotFactory(task=TaskFactory(owner=requester))
    assert bob.get(f"/api/v1/validations/{snapshot.pk}").status_code == 404
    assert bob.get(f"/api/v1/tasks/{snapshot.task_id}/validations").status_code == 404


# --- Knowledge documents ----------------------------------------------------------------


def test_operator_adds_and_searches_documents(otto: Client) -> None:
    """X8, A1: operators write documents and search them; lists carry no bodies."""
    KnowledgeDocumentFactory(title="Parking", body="Spaces are free.")
    response = otto.post(
        "/api/v1/documents",
        {"title": "Training budget", "body": "Each employee gets 1,800 EUR a year."},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    created = response.json()
    assert created["body"].startswith("Each employee")
    assert KnowledgeDocument.objects.filter(title="Training budget").exists()

    found = otto.get("/api/v1/documents?q=1,800").json()
    assert found["count"] == 1
    assert found["items"][0]["id"] == created["id"]
    assert "body" not in found["items"][0]
    assert otto.get("/api/v1/documents").json()["count"] == 2
    assert otto.get(f"/api/v1/documents/{created['id']}").json()["body"].endswith("a year.")


def test_only_operators_touch_documents(alice: Client, rita: Client) -> None:
    """A2: requesters and reviewers get 403 on documents; nothing is written."""
    existing = KnowledgeDocumentFactory()
    for client in (alice, rita):
        assert client.get(f"/api/v1/documents/{existing.pk}").status_code == 403
        response = client.post(
            "/api/v1/documents", {"title": "t", "body": "b"}, content_type="application/json"
        )
        assert response.status_code == 403
        assert response.json()["code"] == "permission_denied"
        assert client.get("/api/v1/documents").status_code == 403
    assert list(KnowledgeDocument.objects.all()) == [existing]


def test_blank_document_is_422(otto: Client) -> None:
    """A3: a document needs a title and a body."""
    response = otto.post(
        "/api/v1/documents", {"title": " ", "body": "b"}, content_type="application/json"
    )
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "title"


@pytest.mark.finding(24, 6)
def test_evidence_download_header_names_only_a_safe_file_name(
    alice: Client, requester: Any
) -> None:
    """A tool name an agent chose (quotes, filename*=, CR/LF) never reaches the
    Content-Disposition header raw: the download still answers 200 and names only a
    file name made of safe characters."""
    evidence = ToolEvidenceFactory(
        run=RunFactory(task=TaskFactory(owner=requester)),
        tool_name="x\"; filename*=UTF-8''evil.html; x=\"\r\nSet-Cookie: a=b",
        content=BIG,
    )
    response = alice.get(f"/api/v1/evidence/{evidence.pk}?format=text")
    assert response.status_code == 200
    header = response["Content-Disposition"]
    assert header.startswith("attachment; filename=")
    assert "filename*" not in header
    name = header.removeprefix("attachment; filename=").strip('"')
    assert re.fullmatch(r"[A-Za-z0-9_.-]+", name), header
    assert name.startswith(f"evidence-{evidence.pk}") and name.endswith(".txt")
    assert "\r" not in header and "\n" not in header and "Set-Cookie" not in response
