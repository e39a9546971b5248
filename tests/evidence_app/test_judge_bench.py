"""judge_bench ships with the product and runs in CI on a subset (issue 12)."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from evidence_app.judge_bench import CI_SUBSET, load_cases
from evidence_app.models import ValidationSnapshot
from tasks_app.models import Task
from tests.evidence_app.validation_helpers import ScriptedJudge

pytestmark = pytest.mark.django_db

CATEGORIES = {
    "supported",
    "contradicted",
    "missing",
    "irrelevant",
    "partial",
    "deep_2mb",
    "duplicated",
    "injection",
    "wrong_block",
}


def test_the_repository_holds_at_least_60_labelled_cases_of_every_category() -> None:
    """Issue 12: >= 60 cases with request, evidence, answer and expected verdicts."""
    cases = load_cases()
    assert len(cases) >= 60
    assert {c["category"] for c in cases} == CATEGORIES
    assert len({c["id"] for c in cases}) == len(cases)
    for case in cases:
        assert case["request"] and case["answer"] and case["evidence"]
        assert case["expected"]["status"] in ("accepted", "rejected", "insufficient_evidence")
        assert case["expected"]["claims"]
    assert set(CI_SUBSET) <= {c["id"] for c in cases}


def test_offline_judge_meets_the_labels_on_the_ci_subset(tmp_path: Path, settings: Any) -> None:
    """Issue 12: the CI subset (one or two cases per category but the 2 MB one) through
    the full validation path of offline:judge: every verdict as labelled, nothing kept."""
    settings.VALIDATOR_MODEL = "offline:judge"
    out = StringIO()
    report = tmp_path / "judge.json"
    call_command("judge_bench", *[f"--case={c}" for c in CI_SUBSET], json=str(report), stdout=out)

    summary = json.loads(report.read_text())
    misses = [r for r in summary["results"] if not r["correct"]]
    assert summary["cases"] == len(CI_SUBSET)
    assert not misses, out.getvalue()
    assert all(t["met"] for t in summary["targets"]), out.getvalue()
    assert "Confusion" in out.getvalue()
    # Every case was rolled back.
    assert not Task.objects.exists() and not ValidationSnapshot.objects.exists()


def test_a_judge_that_accepts_everything_is_caught_by_the_bench(
    scripted_judge: ScriptedJudge,
) -> None:
    """Issue 12: the bench measures any model; a judge accepting everything without
    claims is reconciled to insufficient_evidence and misses the labels."""
    scripted_judge.replies = [json.dumps({"status": "accepted", "score": 1.0})]
    out = StringIO()
    call_command(
        "judge_bench",
        "--model=test:judge",
        "--case=irrelevant-01",
        "--case=supported-01",
        stdout=out,
    )
    text = out.getvalue()
    assert "MISSED" in text
    assert "irrelevant-01: expected rejected, got insufficient_evidence" in text
