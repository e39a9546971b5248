"""Issue 44, item 3: the conflict cases come from FEVER-Symmetric, whose labels say
SUPPORTS or REFUTES, with the original Wikipedia sentence as the quoted answer."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from bench.judge_conflict_cases import SYMMETRIC_FILES, main

ORIGINAL = "Tenacious D is an American comedy rock duo formed in 1994 ."
CHANGED = "Tenacious D is an American comedy rock duo formed in 1997 ."


def _group(fever_id: str, sentence: str, changed: str, claim: str, other: str) -> list[dict]:
    """An original REFUTES pair and the three the dataset's authors wrote beside it."""
    return [
        {"id": fever_id, "label": "REFUTES", "claim": claim, "evidence_sentence": sentence},
        {
            "id": f"{fever_id}0000002",
            "label": "SUPPORTS",
            "claim": claim,
            "evidence_sentence": changed,
        },
        {
            "id": f"{fever_id}0000003",
            "label": "SUPPORTS",
            "claim": other,
            "evidence_sentence": sentence,
        },
        {
            "id": f"{fever_id}0000004",
            "label": "REFUTES",
            "claim": other,
            "evidence_sentence": changed,
        },
    ]


def _raw(tmp_path: Path) -> Path:
    full = _group(
        "101", ORIGINAL, CHANGED, "Tenacious D started in 1997 .", "Tenacious D started in 1994 ."
    )
    for i in range(10):
        full += _group(
            str(200 + i),
            f"Lake {i} Town lies in Norway , near Oslo .",
            f"Lake {i} Town lies in Spain , near Oslo .",
            f"Lake {i} Town is in Spain .",
            f"Lake {i} Town is in Norway .",
        )
    # A sentence whose supporting claim names no subject ("The ..."): not usable.
    full += _group(
        "300",
        "The album sold a million copies .",
        "The album sold ten copies .",
        "The album sold ten copies .",
        "The album sold a million copies .",
    )
    # v0.2 holds the same original sentence as v0.1 under another FEVER id (its claims pooled).
    dev = [
        {**row, "evidence": row.pop("evidence_sentence")}
        for row in _group(
            "102", ORIGINAL, CHANGED, "Tenacious D is Canadian .", "Tenacious D is American ."
        )
    ]
    files = {
        SYMMETRIC_FILES[0]: full,
        SYMMETRIC_FILES[1]: [r for r in full if len(r["id"]) > 7],
        SYMMETRIC_FILES[2]: dev,
        SYMMETRIC_FILES[3]: [],
    }
    for name, rows in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return tmp_path


def test_each_original_sentence_gives_a_refuting_and_a_supporting_case(tmp_path: Path) -> None:
    """Issue 44, item 3: the answer is the original sentence quoted word for word; the
    second source is a claim labelled REFUTES (a wrong answer, never to be accepted) or
    SUPPORTS (a control); a changed sentence is never used; a sentence present in two
    versions is one sentence; both cases of a sentence in one half."""
    out = tmp_path / "conflict.json"
    main(["--symmetric-dir", str(_raw(tmp_path)), "--out", str(out)])
    cases = json.loads(out.read_text(encoding="utf-8"))

    assert len(cases) == 22  # 11 usable sentences: the "The album" one names no subject
    assert Counter(c["category"] for c in cases) == {
        "conflicting_source": 11,
        "consistent_source": 11,
    }
    sentences = Counter(c["answer"] for c in cases)
    assert sentences["Tenacious D is an American comedy rock duo formed in 1994."] == 2
    assert not any("1997" in a or "Spain" in a or "album" in a for a in sentences)
    for case in cases:
        refutes = case["category"] == "conflicting_source"
        assert case["evidence"][0]["content"] == case["answer"]
        assert case["source"]["label"] == ("REFUTES" if refutes else "SUPPORTS")
        assert case["source"]["file"] in SYMMETRIC_FILES
        assert case["kind"] == ("wrong" if refutes else "correct")
        assert case["expected"]["status"] == ("insufficient_evidence" if refutes else "accepted")
        second = case["evidence"][1]["content"]
        assert ("Spain" in second or "1997" in second or "Canadian" in second) == refutes
    halves = {a: {c["split"] for c in cases if c["answer"] == a} for a in sentences}
    assert all(len(h) == 1 for h in halves.values())
    assert Counter(c["split"] for c in cases) == {"dev": 12, "heldout": 10}
    # The request names the supporting claim's subject, which the sentence names.
    assert all(
        c["request"].removeprefix("What does the source say about ").rstrip("?") in c["answer"]
        for c in cases
    )
