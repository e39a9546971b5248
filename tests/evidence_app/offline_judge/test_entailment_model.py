"""Issue 44: the embedded judge's entailment model is shipped, checked and measured.

The real model file is loaded (never a stand-in): its checksum is the one its card
states, it reads public pairs it was not trained on as their labels say, and what it was
trained on holds none of judge_bench's cases.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from pathlib import Path

import pytest

from evidence_app.judge_bench import CERTIFY_CASES_PATH, CONFLICT_CASES_PATH, PUBLIC_CASES_PATH
from evidence_app.offline_judge.entailment import MODEL_DIR, EntailmentModel, shared_model

CARD = MODEL_DIR / "MODEL_CARD.md"
RECORD = MODEL_DIR / "training_data.json"
ROWS = MODEL_DIR / "training_rows.txt.gz"


def _cases(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))


def test_the_shipped_model_is_the_one_its_card_describes() -> None:
    """Issue 44: CI checks the model file against its card's checksum."""
    stated = re.search(r"sha256 `([0-9a-f]{64})`", CARD.read_text(encoding="utf-8"))
    assert stated, "the model card states the file's SHA-256"
    digest = hashlib.sha256((MODEL_DIR / "entailment.onnx").read_bytes()).hexdigest()
    assert digest == stated.group(1)


def test_the_model_reads_held_out_public_pairs_as_their_labels_say() -> None:
    """Issue 44: a small evaluation on data the model was not trained on: the conflict
    cases' sentences (FEVER-Symmetric, held back from training) beside a claim labelled
    REFUTES or SUPPORTS. The model must rank them: more contradiction for the refuting
    claim, more entailment for the supporting one."""
    cases = [c for c in _cases(CONFLICT_CASES_PATH) if c["split"] == "heldout"][:60]
    pairs = [(c["answer"], c["evidence"][1]["content"]) for c in cases]
    scores = shared_model().score(pairs)
    right = 0
    for case, score in zip(cases, scores, strict=True):
        if case["category"] == "conflicting_source":
            right += score.contradiction > score.entailment
        else:
            right += score.entailment > score.contradiction
    assert right / len(cases) >= 0.7, f"{right} of {len(cases)}"


def test_the_model_is_loaded_once_per_process_and_scores_in_any_order() -> None:
    """Issue 44: one session per process; a pair's probabilities do not depend on what is
    scored beside it (a replay reads the same), and they sum to one."""
    model = shared_model()
    assert shared_model() is model
    premise = "The Eiffel Tower is a wrought-iron lattice tower in Paris, France."
    alone = EntailmentModel(MODEL_DIR).score([(premise, "The Eiffel Tower is in Paris.")])[0]
    batched = EntailmentModel(MODEL_DIR).score(
        [("A short one.", "Short."), (premise, "The Eiffel Tower is in Paris."), (premise, "x")]
    )[1]
    assert alone.entailment == pytest.approx(batched.entailment, abs=1e-6)
    assert alone.contradiction + alone.neutral + alone.entailment == pytest.approx(1.0, abs=1e-4)


def test_nothing_judge_bench_measures_was_trained_on() -> None:
    """Issue 44: none of judge_bench's cases or their source rows are in the training
    data: no FEVER row of the fever or fever_certify cases, nothing of FEVER-Symmetric
    (the conflict cases' source), as the shipped record of the training rows says."""
    trained = set(gzip.decompress(ROWS.read_bytes()).decode("utf-8").split())
    record = json.loads(RECORD.read_text(encoding="utf-8"))
    assert len(trained) == record["rows"]
    fever_rows = {
        f"fever:fever:dev:{c['source']['row']}"
        for c in _cases(PUBLIC_CASES_PATH) + _cases(CERTIFY_CASES_PATH)
        if c["dataset"] in ("fever", "fever_certify")
    }
    assert len(fever_rows) == 200 + 2400
    assert not fever_rows & trained
    # The rows made by rule name the FEVER row they were made from.
    for made in ("fever_mutations", "fever_not_entailed"):
        mutated_from = {
            "fever:" + r.removeprefix(f"{made}:").rsplit(":", 1)[0]
            for r in trained
            if r.startswith(f"{made}:")
        }
        assert mutated_from and not fever_rows & mutated_from, made
    repositories = {s["repository"] for s in record["sources"]}
    assert "TalSchuster/FeverSymmetric" not in repositories
    assert record["held_back"]["repository"] == "TalSchuster/FeverSymmetric"
    assert any(r.startswith("fever:fever:dev:") for r in trained)


def test_every_training_source_names_its_commit_and_a_licence_we_may_use() -> None:
    """Issue 44: each source recorded with repository, commit, path and licence; no
    non-commercial or unlicensed source."""
    for source in json.loads(RECORD.read_text(encoding="utf-8"))["sources"]:
        assert re.fullmatch(r"[0-9a-f]{40}", source["commit"]), source["name"]
        assert source["paths"] and source["repository"].count("/") == 1
        licence = source["licence"]
        assert re.search(r"CC BY|MIT|Apache|OANC", licence), source["name"]
        assert "NC" not in licence.replace("OANC", ""), source["name"]
