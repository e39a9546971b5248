"""Write ``evidence_app/judge_bench/conflict_cases.json``: judge_bench's ``conflict`` cases.

Built from FEVER-Symmetric (Schuster et al., EMNLP 2019; repository, commit and licence
in ``evidence_app/judge_bench/PUBLIC_DATA.md``), whose labels are FEVER's two verdicts
only: SUPPORTS and REFUTES, no NOT ENOUGH INFO. Each original FEVER pair (id ``X``: a
Wikipedia sentence S and a claim C) comes with three written by the dataset's authors:
``X0000002`` (a sentence S' changed to flip the verdict, with C), ``X0000003`` (S with a
new claim C' of the opposite verdict) and ``X0000004`` (S' with C'). So every original
sentence S has one claim it SUPPORTS and one it REFUTES. Only pairs whose evidence is an
original sentence are used (S' is not Wikipedia's text). Each selected sentence gives
two cases with the same answer, the sentence itself quoted from the first tool result:

- ``conflicting_source`` (a wrong answer to accept): a second tool result holding a
  claim the dataset labels REFUTES against the sentence;
- ``consistent_source`` (a control, a correct answer): a second tool result holding a
  claim it labels SUPPORTS, the same fact in other words.

judge_bench judges each case also with the first tool result alone: a control counts
only where the judge accepts the answer alone. Labels are the dataset's own; no judge's
output selects a case. Sentences are de-duplicated across the dataset's files and
versions (one group per de-tokenised sentence, its claims pooled) and kept when they
name the subject of the request: the leading name of a supporting claim, as a whole
word, holding a word that is not a function word or a number. They are ordered by the
SHA-256 of ``fever-symmetric:<lowest FEVER id of the sentence>``, the first N kept,
alternating between the ``dev`` and ``heldout`` halves (both cases of a sentence in the
same half); within a sentence the claim of each label with the lowest SHA-256 of
``<file>:<id>`` is used. Each case records its claim's file, id and label.

    python bench/judge_conflict_cases.py --symmetric-dir RAW/FeverSymmetric

(RAW/FeverSymmetric: a checkout of TalSchuster/FeverSymmetric at the commit named in
PUBLIC_DATA.md, holding ``symmetric_v0.1/`` and ``symmetric_v0.2/``.)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.judge_public_cases import detokenize, subject_of

OUT = Path(__file__).resolve().parents[1] / "evidence_app" / "judge_bench" / "conflict_cases.json"
SENTENCES = 120
DATASET = "conflict"
SYMMETRIC_FILES = (
    "symmetric_v0.1/fever_symmetric_full.jsonl",
    "symmetric_v0.1/fever_symmetric_generated.jsonl",
    "symmetric_v0.2/fever_symmetric_dev.jsonl",
    "symmetric_v0.2/fever_symmetric_test.jsonl",
)
# The suffixes of the pairs the dataset's authors wrote; ``0000003`` keeps the original
# sentence (the only original-sentence pair in ``fever_symmetric_generated.jsonl``).
_GENERATED = ("0000002", "0000003", "0000004")
_ORIGINAL_SENTENCE = "0000003"
# Leading words that name nothing: a subject made of these (or of numbers) is no subject.
_NOT_NAMES = frozenset(
    {"a", "an", "the", "in", "on", "at", "of", "there", "it", "he", "she", "they", "his", "her"}
)


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def symmetric_pairs(folder: Path) -> list[dict[str, Any]]:
    """Every pair of the dataset's files: file, id, label, claim and evidence as stored
    (v0.1 names the evidence ``evidence_sentence``, v0.2 ``evidence``)."""
    pairs = []
    for name in SYMMETRIC_FILES:
        for line in (folder / name).read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            pairs.append(
                {
                    "file": name,
                    "id": str(row["id"]),
                    "label": row["label"],
                    "claim": row["claim"],
                    "evidence": row.get("evidence_sentence", row.get("evidence")),
                }
            )
    return pairs


def fever_id(pair_id: str) -> str:
    """The original FEVER id of a pair (``1118970000003`` -> ``111897``)."""
    if len(pair_id) > len(_GENERATED[0]) and pair_id.endswith(_GENERATED):
        return pair_id[: -len(_GENERATED[0])]
    return pair_id


def _original_sentences(pairs: list[dict[str, Any]]) -> set[str]:
    """The Wikipedia sentences of the original pairs (an original FEVER id, or the new
    claim beside the original sentence)."""
    return {
        p["evidence"]
        for p in pairs
        if fever_id(p["id"]) == p["id"] or p["id"].endswith(_ORIGINAL_SENTENCE)
    }


def _names_something(subject: str) -> bool:
    return any(w.lower() not in _NOT_NAMES and not w[:1].isdigit() for w in subject.split())


def _named_in(subject: str, sentence: str) -> bool:
    pattern = r"(?<!\w)" + re.escape(subject.lower()) + r"(?!\w)"
    return _names_something(subject) and re.search(pattern, sentence.lower()) is not None


def _claim(members: list[dict[str, Any]], label: str) -> dict[str, Any] | None:
    rows = [r for r in members if r["label"] == label]
    return min(rows, key=lambda r: _digest(f"{r['file']}:{r['id']}")) if rows else None


def groups(pairs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Original sentences with a refuting claim and a supporting one that names the
    request's subject, in selection order."""
    originals = _original_sentences(pairs)
    by_sentence: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for pair in pairs:
        if pair["evidence"] in originals:
            text = detokenize(pair["evidence"])
            by_sentence[text].append({**pair, "claim": detokenize(pair["claim"])})
    out = []
    for text, members in by_sentence.items():
        naming = [
            m
            for m in members
            if m["label"] != "SUPPORTS" or _named_in(subject_of(m["claim"]), text)
        ]
        refutes, supports = _claim(naming, "REFUTES"), _claim(naming, "SUPPORTS")
        if refutes is None or supports is None:
            continue
        first = min((fever_id(m["id"]) for m in members), key=int)
        out.append({"first": first, "evidence": text, "claims": (refutes, supports)})
    return sorted(out, key=lambda g: _digest(f"fever-symmetric:{g['first']}"))


def _case(number: int, group: dict[str, Any], split: str, second: dict[str, Any]) -> dict:
    subject = subject_of(group["claims"][1]["claim"])
    conflicting = second["label"] == "REFUTES"
    category = "conflicting_source" if conflicting else "consistent_source"
    return {
        "id": f"{DATASET}-{number:03d}",
        "dataset": DATASET,
        "split": split,
        "category": category,
        "kind": "wrong" if conflicting else "correct",
        "source": {
            "label": second["label"],
            "file": second["file"],
            "id": second["id"],
            "fever_id": group["first"],
        },
        "rules": "",
        "request": f"What does the source say about {subject}?",
        "evidence": [
            {"title": "Wikipedia excerpt", "content": group["evidence"]},
            {"title": "Second source", "content": second["claim"]},
        ],
        "answer": group["evidence"],
        "judge_alone": True,
        "expected": {
            "status": "insufficient_evidence" if conflicting else "accepted",
            "claims": [],
        },
    }


def conflict_cases(pairs: list[dict[str, Any]], sentences: int = SENTENCES) -> list[dict]:
    cases: list[dict[str, Any]] = []
    for i, group in enumerate(groups(pairs)[:sentences]):
        split = "dev" if i % 2 == 0 else "heldout"
        for second in group["claims"]:
            cases.append(_case(len(cases) + 1, group, split, second))
    return cases


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--symmetric-dir", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--sentences", type=int, default=SENTENCES)
    args = parser.parse_args(argv)
    pairs = symmetric_pairs(args.symmetric_dir)
    cases = conflict_cases(pairs, args.sentences)
    args.out.write_text(json.dumps(cases, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(cases)} cases ({len(groups(pairs))} sentences usable) to {args.out}")


if __name__ == "__main__":
    main()
