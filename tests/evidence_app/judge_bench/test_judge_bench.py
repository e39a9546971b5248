"""judge_bench ships with the product and runs in CI on a subset (issue 12)."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evidence_app.autoaccept.bench import certified_figures, format_certified_table
from evidence_app.judge_bench import (
    BENCH_CASE_FILES,
    CERTIFY_CASES_PATH,
    CI_SUBSET,
    CONFLICT_CASES_PATH,
    DEFAULT_CASE_FILES,
    PUBLIC_CASES_PATH,
    CaseResult,
    load_cases,
)
from evidence_app.judge_bench.conflict import conflict_targets
from evidence_app.models import ValidationSnapshot
from project.llm.registry import register_model, unregister_model
from tasks_app.models import Task
from tests.evidence_app.validation_helpers import ScriptedJudge, verdict

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


def test_public_cases_two_datasets_with_halves_and_their_own_labels() -> None:
    """Issue "An honest judge": >= 300 public cases from two or more datasets, each with a
    declared development and held-out half, a category and the kind of answer its label
    makes it; the source and licence are beside the file."""
    cases = load_cases(PUBLIC_CASES_PATH)
    assert len(cases) >= 300
    datasets = {c["dataset"] for c in cases}
    assert len(datasets) >= 2
    for name in datasets:
        mine = [c for c in cases if c["dataset"] == name]
        halves = {c["split"] for c in mine}
        assert halves == {"dev", "heldout"}
        assert {c["kind"] for c in mine} >= {"correct", "wrong"}
        for category in {c["category"] for c in mine}:
            split = [c["split"] for c in mine if c["category"] == category]
            assert abs(split.count("dev") - split.count("heldout")) <= 1
    assert all(c["source"]["label"] and c["evidence"][0]["content"] for c in cases)
    notes = (PUBLIC_CASES_PATH.parent / "PUBLIC_DATA.md").read_text()
    for name in datasets:
        assert f"`{name}`" in notes
    assert "licence" in notes and "commit" in notes


def test_offline_judge_meets_the_targets_on_the_held_out_public_cases(
    tmp_path: Path, settings: Any
) -> None:
    """The report per dataset and category on the held-out half: no wrong or irrelevant
    answer accepted, no correct answer rejected, both targets printed MET."""
    settings.VALIDATOR_MODEL = "offline:judge"
    out = StringIO()
    report = tmp_path / "judge.json"
    call_command(
        "judge_bench",
        f"--cases-file={PUBLIC_CASES_PATH}",
        "--quiet",
        "--no-certify",
        json=str(report),
        stdout=out,
    )
    summary = json.loads(report.read_text())
    assert summary["split"] == "heldout"
    assert {r["split"] for r in summary["results"]} == {"heldout"}
    for name, data in summary["datasets"].items():
        overall = data["all"]
        assert overall["false_accepts"] == [], (name, out.getvalue())
        assert overall["false_reject_ids"] == [], (name, out.getvalue())
        assert set(data["categories"]) and all(t["met"] for t in data["targets"])
    text = out.getvalue()
    assert "false accept" in text and "to a person" in text
    assert "fever: wrong or irrelevant answers accepted" in text and "MET" in text


def test_a_team_measures_its_own_labelled_cases_with_cases_file(
    tmp_path: Path, scripted_judge: ScriptedJudge
) -> None:
    """--cases-file takes a team's own cases in the documented format; a judge that
    accepts a wrong answer is reported as a false accept, with the target MISSED."""
    own = tmp_path / "own.json"
    evidence = [{"title": "Note", "content": "The depot opens at 6:00 and closes at 22:00."}]
    own.write_text(
        json.dumps(
            [
                {
                    "id": "own-1",
                    "dataset": "ours",
                    "split": "heldout",
                    "category": "wrong",
                    "kind": "wrong",
                    "request": "When does the depot open?",
                    "evidence": evidence,
                    "answer": "The depot opens at 7:00.",
                    "expected": {"status": "rejected", "claims": []},
                }
            ]
        )
    )
    claim = {
        "id": "1",
        "text": "The depot opens at 7:00.",
        "verdict": "supported",
        "citations": [{"ref": "R1", "quote": "The depot opens at 6:00 and closes at 22:00."}],
    }
    scripted_judge.replies = [
        json.dumps(
            {
                "status": "accepted",
                "score": 1.0,
                "claims": [claim],
                "requirements": [{"text": "When", "met": "yes", "claim_ids": ["1"]}],
            }
        )
    ]
    out = StringIO()
    call_command("judge_bench", "--model=test:judge", f"--cases-file={own}", stdout=out)
    text = out.getvalue()
    assert "ours: wrong or irrelevant answers accepted" in text
    assert "MISSED" in text and "own-1: wrong answer accepted" in text


def test_cases_can_be_filtered_by_split_and_dataset() -> None:
    both = load_cases(DEFAULT_CASE_FILES, split="dev", datasets=["handbook", "halueval"])
    assert both and {c["split"] for c in both} == {"dev"}
    assert {c["dataset"] for c in both} == {"handbook", "halueval"}


def test_second_model_reports_the_pairs_figures_beside_the_single_judges(
    tmp_path: Path, settings: Any
) -> None:
    """Issue 27, item 3: ``--second-model`` judges each case with both judges on the same
    prompt and reports the pair's false accepts, false rejects and share sent to a
    person beside the first judge's; a disagreement counts as sent to a person."""
    settings.VALIDATOR_MODEL = "offline:judge"
    settings.MODEL_MAX_RETRIES = 0
    doubter = ScriptedJudge([verdict("rejected", claims=[])])
    register_model("test:doubter", doubter.factory())
    report = tmp_path / "pair.json"
    out = StringIO()
    try:
        call_command(
            "judge_bench",
            "--case=supported-01",
            "--case=contradicted-01",
            "--case=irrelevant-01",
            "--second-model=test:doubter",
            json=str(report),
            stdout=out,
        )
    finally:
        unregister_model("test:doubter")
    summary = json.loads(report.read_text())
    assert len(doubter.calls) == 3 and summary["second_model"] == "test:doubter"
    by_id = {r["id"]: r for r in summary["results"]}
    assert by_id["supported-01"]["got"] == "accepted"
    assert by_id["supported-01"]["pair_got"] == "judges_disagree"
    assert by_id["contradicted-01"]["pair_got"] == by_id["contradicted-01"]["got"]
    pair = summary["pair"]["(all)"]
    assert pair["cases"] == 3 and pair["disagreements"] == 1
    assert pair["false_accept_rate"] == 0.0 and pair["false_reject_rate"] == 0.0
    assert pair["person_share"] > pair["single"]["person_share"]
    assert "The pair: first offline:judge, second test:doubter" in out.getvalue()
    assert not Task.objects.exists() and not ValidationSnapshot.objects.exists()


def test_an_unknown_second_model_stops_judge_bench_before_any_case() -> None:
    """Issue 27, item 3: a second model the registry cannot resolve is refused."""
    with pytest.raises(CommandError, match="--second-model"):
        call_command("judge_bench", "--case=supported-01", "--second-model=offline:nobody")


def _case(i: int, *, split: str, kind: str, got: str, score: float | None) -> CaseResult:
    return CaseResult(
        id=f"c-{split}-{i}",
        category="x",
        dataset="fever",
        split=split,
        kind=kind,
        expected="accepted" if kind == "correct" else "rejected",
        got=got,
        model_status=got,
        correct=True,
        claims_expected=0,
        claims_correct=0,
        accepted_all_verified=None,
        score=score,
    )


def test_the_threshold_certified_on_the_dev_half_is_applied_to_the_held_out_half() -> None:
    """Issue 38, item 6: per dataset the threshold certified on the dev half's accepted
    verdicts, the share of held-out correct answers auto-accepted at it and the wrong
    ones auto-accepted, beside the judge's own accepts."""
    dev = [_case(i, split="dev", kind="correct", got="accepted", score=0.9) for i in range(160)]
    dev += [_case(i, split="dev", kind="wrong", got="accepted", score=0.4) for i in range(160, 170)]
    held = [_case(i, split="heldout", kind="correct", got="accepted", score=0.95) for i in range(6)]
    held += [_case(i, split="heldout", kind="correct", got="accepted", score=0.5) for i in (6, 7)]
    held += [_case(8, split="heldout", kind="wrong", got="accepted", score=0.3)]
    figures = certified_figures(dev + held, target=0.02)["datasets"]["fever"]
    assert figures["threshold"] == pytest.approx(0.9)
    assert figures["dev_accepted"] == 170
    assert figures["correct_auto_accepted"] == 6 and figures["heldout_correct"] == 8
    assert figures["wrong_auto_accepted"] == []
    assert figures["wrong_accepted_by_judge"] == ["c-heldout-8"]
    table = "\n".join(format_certified_table(certified_figures(dev + held, target=0.02)))
    assert "0.900" in table and "6/8 (75%)" in table


def test_too_few_dev_accepts_certify_no_threshold_and_auto_accept_nothing() -> None:
    """Issue 38, item 6: under 149 labelled accepts at 2 %, no threshold, nothing
    auto-accepted, and the table says why."""
    dev = [_case(i, split="dev", kind="correct", got="accepted", score=1.0) for i in range(50)]
    held = [_case(i, split="heldout", kind="correct", got="accepted", score=1.0) for i in range(5)]
    figures = certified_figures(dev + held, target=0.02)
    assert figures["datasets"]["fever"]["threshold"] is None
    assert figures["datasets"]["fever"]["correct_auto_accepted"] == 0
    assert "too few" in "\n".join(format_certified_table(figures))


def test_judge_bench_prints_the_certified_threshold_per_dataset(tmp_path: Path) -> None:
    """Issue 38, item 6: the command judges the dev half too and prints the table."""
    out = StringIO()
    report = tmp_path / "judge.json"
    call_command(
        "judge_bench",
        "--case=supported",
        "--case=contradicted",
        "--dataset=handbook",
        "--split=heldout",
        "--quiet",
        "--target=0.3",
        json=str(report),
        stdout=out,
    )
    text = out.getvalue()
    assert "At a certified risk (target 30.0% false accepts" in text
    summary = json.loads(report.read_text())
    assert {r["split"] for r in summary["results"]} == {"heldout"}
    handbook = summary["certified"]["datasets"]["handbook"]
    assert handbook["dev_cases"] > 0 and handbook["heldout_cases"] == summary["cases"]
    assert handbook["wrong_auto_accepted"] == []


def test_the_certification_set_holds_over_1000_cases_per_half_apart_from_the_fever_cases() -> None:
    """Issue 44, item 4: a public set large enough to certify on (>= 1,000 labelled cases
    per half, 600 correct and 600 wrong), none of its rows or evidence texts those of the
    ``fever`` cases, no evidence text in both halves; ``make judge-bench`` runs it."""
    cases = load_cases(CERTIFY_CASES_PATH)
    assert {c["dataset"] for c in cases} == {"fever_certify"}
    for half in ("dev", "heldout"):
        mine = [c for c in cases if c["split"] == half]
        assert len(mine) >= 1000
        assert {k: sum(c["kind"] == k for c in mine) for k in ("correct", "wrong")} == {
            "correct": 600,
            "wrong": 600,
        }
    assert len({c["id"] for c in cases}) == len(cases)
    fever = [c for c in load_cases(PUBLIC_CASES_PATH) if c["dataset"] == "fever"]
    assert not {c["source"]["row"] for c in cases} & {c["source"]["row"] for c in fever}
    fever_evidence = {c["evidence"][0]["content"] for c in fever}
    halves: dict[str, set[str]] = {}
    for case in cases:
        assert case["evidence"][0]["content"] not in fever_evidence
        halves.setdefault(case["evidence"][0]["content"], set()).add(case["split"])
    assert all(len(h) == 1 for h in halves.values())
    assert CERTIFY_CASES_PATH in BENCH_CASE_FILES
    assert "`fever_certify`" in (CERTIFY_CASES_PATH.parent / "PUBLIC_DATA.md").read_text()


def test_conflict_cases_quote_a_sentence_beside_a_claim_labelled_refutes_or_supports() -> None:
    """Issue 44, item 3: 60 conflicting and 60 control cases per half, the second source a
    FEVER-Symmetric claim labelled REFUTES (wrong) or SUPPORTS (control), the answer the
    first source word for word, both cases of a sentence in one half."""
    cases = load_cases(CONFLICT_CASES_PATH)
    for half in ("dev", "heldout"):
        for category in ("conflicting_source", "consistent_source"):
            assert sum(c["split"] == half and c["category"] == category for c in cases) == 60
    halves: dict[str, set[str]] = {}
    for case in cases:
        refutes = case["category"] == "conflicting_source"
        assert case["source"]["label"] == ("REFUTES" if refutes else "SUPPORTS")
        assert case["source"]["file"].startswith("symmetric_v0.")
        assert case["answer"] == case["evidence"][0]["content"]
        halves.setdefault(case["answer"], set()).add(case["split"])
    assert len(halves) == 120 and all(len(h) == 1 for h in halves.values())


def _conflict(i: int, category: str, got: str, alone: str = "accepted") -> CaseResult:
    result = _case(i, split="heldout", kind="wrong", got=got, score=None)
    result.dataset, result.category, result.alone_got = "conflict", category, alone
    return result


def test_conflict_targets_allow_3_of_60_accepted_and_want_80_percent_of_controls() -> None:
    """Issue 44, item 4: accepted beside a contradicting source <= 3 of 60; controls
    accepted alone still accepted >= 80 %."""
    conflicting = [_conflict(i, "conflicting_source", "insufficient_evidence") for i in range(60)]
    controls = [_conflict(100 + i, "consistent_source", "accepted") for i in range(60)]
    for i in range(3):
        conflicting[i].got = "accepted"
    for i in range(12):
        controls[i].got = "insufficient_evidence"
    met = {t: ok for t, _m, _w, ok in conflict_targets(conflicting + controls)}
    assert list(met.values()) == [True, True]
    conflicting[3].got = "accepted"
    controls[12].got = "insufficient_evidence"
    targets = conflict_targets(conflicting + controls)
    assert [(m, w, ok) for _t, m, w, ok in targets] == [
        ("4/60", "<= 3", False),
        ("47/60 78%", ">= 80%", False),
    ]


def test_judge_bench_runs_the_conflict_and_certification_cases_by_default(tmp_path: Path) -> None:
    """Issue 44, items 3-4: with no --cases-file, judge_bench reads the conflict and
    certification files beside the others."""
    report = tmp_path / "judge.json"
    call_command(
        "judge_bench",
        "--case=fever_certify-0001",
        "--case=conflict-001",
        "--quiet",
        "--no-certify",
        json=str(report),
        stdout=StringIO(),
    )
    summary = json.loads(report.read_text())
    assert {r["id"] for r in summary["results"]} == {"fever_certify-0001", "conflict-001"}
    assert set(summary["datasets"]) >= {"fever_certify", "conflict"}
