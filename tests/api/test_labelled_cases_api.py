"""Issue 46, item 4: the blind, independent labels taken out through the API as JSON Lines
in judge_bench's case format, filtered by judge and period; judge_bench reads the export
as it is and gives the same figures as ``--from-reviews --queue audit``."""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from evidence_app.autoaccept.selectors import certifying_audits
from evidence_app.models import Audit, AuditExposure, ValidationSnapshot
from evidence_app.trust.claim_labels import claim_labels_record
from evidence_app.validation.services import validation_run
from tasks_app.models import Task
from tasks_app.workflow.services import task_decide
from tests.api.conftest import bearer_client
from tests.evidence_app.validation_helpers import validating_task
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

API = "/api/v1"
FACT = "The annual training budget per employee is 1,750 EUR."
STALE = "The annual training budget per employee is 1,500 EUR."


@pytest.fixture
def offline(settings: Any) -> None:
    settings.VALIDATOR_MODEL = "offline:judge"


def _validated(answer: str = FACT) -> Task:
    task = validating_task(answer=answer, evidence=[FACT])
    snapshot = validation_run(task_id=task.pk, attempt_index=1)
    assert snapshot is not None and snapshot.result.get("claims"), snapshot.result
    return task


def _latest(task: Task) -> ValidationSnapshot:
    return ValidationSnapshot.objects.filter(task=task).latest("created_at", "id")


def _judged_audit(
    task: Task, *, correct: bool, label: str, days_ago: int = 0, blind: bool = True
) -> Audit:
    """An audit of the task's verdict, judged. (Test setup: the audit queue's judging is
    covered by its own tests, so the judged state is written directly.)"""
    snapshot = _latest(task)
    audit = Audit.objects.create(
        snapshot=snapshot,
        task=task,
        attempt_index=snapshot.attempt_index,
        route="auto_accepted",
        probability=0.1,
        template_version=snapshot.template_version,
        model_name=snapshot.model_name,
        state="done",
        correct=correct,
        blind=blind,
        decided_at=timezone.now() - timedelta(days=days_ago),
    )
    claim_labels_record(
        snapshot=snapshot, labels=[{"claim_index": 0, "label": label}], author=None, audit=audit
    )
    return audit


def _export(client: Client, **params: str) -> tuple[Any, list[dict[str, Any]]]:
    response = client.get(f"{API}/labelled-cases", params)
    assert response.status_code == 200, response.content
    assert response.streaming
    text = b"".join(response.streaming_content).decode()
    return response, [json.loads(line) for line in text.splitlines()]


def _figures(report: Path) -> dict[str, Any]:
    """A judge_bench report without its timings (which differ between two runs)."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "seconds"}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(json.loads(report.read_text()))


def test_exported_cases_run_through_judge_bench_with_the_figures_of_from_reviews(
    otto: Client, offline: None, tmp_path: Path
) -> None:
    """Issue 46, item 4 (done when): the audit cases exported through the API, written to
    a file as they come, run through ``judge_bench --cases-file`` unchanged and give the
    same figures, case for case, as ``judge_bench --from-reviews --queue audit``; a
    judgement that was not blind and a decision are not in the audit export."""
    _judged_audit(_validated(), correct=True, label="supported")
    _judged_audit(_validated(STALE), correct=False, label="contradicted")
    _judged_audit(_validated(), correct=False, label="unsupported")
    _judged_audit(_validated(), correct=True, label="supported", blind=False)
    decided = _validated()
    task_decide(
        task_id=decided.pk,
        actor=UserFactory(),
        action="satisfied",
        comment="",
        claim_labels=[],
        validation_id=_latest(decided).pk,
    )

    response, cases = _export(otto)
    assert response["Content-Type"].startswith("application/x-ndjson")
    assert "labelled-cases-audit.jsonl" in response["Content-Disposition"]
    assert len(cases) == 3 and all(c["source"]["queue"] == "audit" for c in cases)
    first = cases[0]
    assert first["dataset"] == "team" and first["request"] and first["answer"] == FACT
    assert first["evidence"] == [{"title": "read_document", "content": FACT}]
    assert first["expected"]["claims"][0]["verdict"] == "supported"
    assert [c["expected"]["status"] for c in cases] == ["accepted", "rejected", "rejected"]

    exported = tmp_path / "team.jsonl"
    exported.write_bytes(
        b"".join(otto.get(f"{API}/labelled-cases", {"queue": "audit"}).streaming_content)
    )
    from_file, from_reviews = tmp_path / "file.json", tmp_path / "reviews.json"
    call_command(
        "judge_bench",
        f"--cases-file={exported}",
        "--split=all",
        f"--json={from_file}",
        "--quiet",
        stdout=StringIO(),
    )
    call_command(
        "judge_bench",
        "--from-reviews",
        "--queue=audit",
        "--split=all",
        f"--json={from_reviews}",
        "--quiet",
        stdout=StringIO(),
    )
    figures = _figures(from_file)
    assert figures["cases"] == 3 and figures["datasets"]["team"]["all"]["cases"] == 3
    assert figures == _figures(from_reviews)


def test_the_audit_export_holds_exactly_the_audits_that_certify(
    otto: Client, offline: None
) -> None:
    """Issues 43 and 46: the exported audit labels are the certifying ones
    (``certifying_audits``): an audit judged by the task's own requester is left out like
    a judgement that was not blind; the same audit by someone else is exported."""
    independent = _judged_audit(_validated(), correct=True, label="supported")
    self_judged = _judged_audit(_validated(), correct=True, label="supported")
    Audit.objects.filter(pk=self_judged.pk).update(reviewer=self_judged.task.owner)
    by_other = _judged_audit(_validated(), correct=False, label="unsupported")
    Audit.objects.filter(pk=by_other.pk).update(reviewer=UserFactory())

    exported = {case["id"] for case in _export(otto, queue="audit")[1]}
    assert exported == {f"team-audit-{independent.pk}", f"team-audit-{by_other.pk}"}
    assert {a.pk for a in certifying_audits()} == {independent.pk, by_other.pk}


def test_the_export_is_filtered_by_judge_queue_and_period(otto: Client, offline: None) -> None:
    """Issue 46, item 4: ``template_version`` and ``model`` keep the labels of that judge's
    verdicts (audits and decisions alike), ``since``/``until`` whole days, ``queue`` which
    labels; a period that ends before it starts is a 422."""
    recent = _judged_audit(_validated(), correct=True, label="supported")
    old = _judged_audit(_validated(), correct=True, label="supported", days_ago=10)
    other = _judged_audit(_validated(), correct=False, label="unsupported")
    ValidationSnapshot.objects.filter(pk=other.snapshot_id).update(model_name="other:judge")
    Audit.objects.filter(pk=other.pk).update(model_name="other:judge")
    decided = _validated()
    decision = task_decide(
        task_id=decided.pk,
        actor=UserFactory(),
        action="revise",
        comment="Use the 2026 figure.",
        claim_labels=[{"claim_index": 0, "label": "contradicted"}],
        validation_id=_latest(decided).pk,
    )
    version = _latest(decided).template_version

    def ids(**params: str) -> set[str]:
        return {case["id"] for case in _export(otto, **params)[1]}

    audit_ids = {f"team-audit-{a.pk}" for a in (recent, old, other)}
    assert ids() == audit_ids
    assert ids(model="offline:judge") == audit_ids - {f"team-audit-{other.pk}"}
    assert ids(model="other:judge") == {f"team-audit-{other.pk}"}
    assert ids(template_version="nosuch@0") == set()
    assert ids(queue="review") == {f"team-decision-{decision.pk}"}
    assert ids(queue="review", model="offline:judge", template_version=version) == {
        f"team-decision-{decision.pk}"
    }
    assert ids(queue="review", model="other:judge") == set()
    assert ids(queue="all", model="other:judge") == {f"team-audit-{other.pk}"}
    today = timezone.localdate()
    assert f"team-audit-{old.pk}" not in ids(since=str(today))
    assert ids(until=str(today - timedelta(days=1))) == {f"team-audit-{old.pk}"}

    backwards = otto.get(
        f"{API}/labelled-cases", {"since": str(today), "until": str(today - timedelta(days=1))}
    )
    assert backwards.status_code == 422 and "until" in backwards.json()["detail"]
    assert otto.get(f"{API}/labelled-cases", {"queue": "everything"}).status_code == 422
    # A day is YYYY-MM-DD, not a number of seconds.
    assert otto.get(f"{API}/labelled-cases", {"until": "0"}).status_code == 422


def test_only_operators_export_and_a_reviewers_read_is_recorded(
    rita: Client, operator: Any, reviewer: Any, offline: None
) -> None:
    """Issue 46, item 4: a reviewer (not an operator) gets 403; an operator who also
    reviews has seen the verdicts of the exported tasks, so an audit still open on one
    of them records that read (their judgement of it would not be blind)."""
    assert rita.get(f"{API}/labelled-cases").status_code == 403
    task = _validated()
    _judged_audit(task, correct=True, label="supported")
    # A later verdict on the same task, drawn for an audit that is still open.
    second = ValidationSnapshot.objects.create(
        task=task, attempt_index=2, status="accepted", model_name="offline:judge"
    )
    still_open = Audit.objects.create(
        snapshot=second, task=task, attempt_index=2, route="auto_accepted", probability=0.1
    )
    reviewer.groups.add(*operator.groups.all())
    _export(bearer_client(reviewer))
    assert AuditExposure.objects.filter(audit=still_open, user=reviewer).exists()
