"""Write ``evidence_app/judge_bench/conflict_cases.json``: judge_bench's ``conflict`` cases.

Built from FEVER (as redistributed in the COVID-Fact repository; source, commit and
licence in ``evidence_app/judge_bench/PUBLIC_DATA.md``). FEVER's annotators wrote several
claims about each Wikipedia sentence, some that the sentence entails and some that it
does not (mostly mutations that contradict it: another year, another name, a negation).
Each selected sentence gives two cases with the same answer, the sentence itself quoted
from the first tool result:

- ``conflicting_source`` (a wrong answer to accept): a second tool result holding one
  of the sentence's ``not_entailment`` claims, a statement the dataset labels as not
  following from the sentence about the same subject;
- ``consistent_source`` (a control, a correct answer): a second tool result holding one
  of its ``entailment`` claims, the same fact in other words.

judge_bench judges each case also with the first tool result alone: a control counts
only where the judge accepts the answer alone. Labels are the dataset's own; no judge's
output selects a case. Sentences are taken whole (one sentence of evidence, with at
least one claim of each label, naming the subject of the request: the leading name of
its entailed claim), ordered by the SHA-256 of their first line number, the
first N kept, alternating between the ``dev`` and ``heldout`` halves (both cases of a
sentence in the same half); within a sentence the claim of each label with the lowest
hash is used.

    python bench/judge_conflict_cases.py --fever-dir RAW/RTE-Fever/processed
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.judge_public_cases import detokenize, fever_rows, subject_of

OUT = Path(__file__).resolve().parents[1] / "evidence_app" / "judge_bench" / "conflict_cases.json"
SENTENCES = 120
DATASET = "conflict"


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _one_sentence(text: str) -> bool:
    inner = text.rstrip(". ")
    return ". " not in inner and "; " not in inner and len(text) <= 400


def groups(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Evidence sentences with a claim of each label, in selection order."""
    by_evidence: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_evidence[row["evidence"]].append(row)
    out = []
    for evidence, members in by_evidence.items():
        labels = {r["label"] for r in members}
        text = detokenize(evidence)
        if labels != {"entailment", "not_entailment"} or not _one_sentence(text):
            continue
        first = min(r["line"] for r in members)
        subject = subject_of(_claim({"members": members}, "entailment")["claim"])
        if subject.lower() not in text.lower():
            continue  # the request's subject must be named in the quoted sentence
        out.append({"first": first, "evidence": text, "members": members})
    return sorted(out, key=lambda g: _digest(f"fever-conflict:{g['first']}"))


def _claim(group: dict[str, Any], label: str) -> dict[str, Any]:
    rows = [r for r in group["members"] if r["label"] == label]
    return min(rows, key=lambda r: _digest(r["key"]))


def _case(number: int, group: dict[str, Any], split: str, second: dict[str, Any]) -> dict:
    subject = subject_of(_claim(group, "entailment")["claim"])
    conflicting = second["label"] == "not_entailment"
    category = "conflicting_source" if conflicting else "consistent_source"
    return {
        "id": f"{DATASET}-{number:03d}",
        "dataset": DATASET,
        "split": split,
        "category": category,
        "kind": "wrong" if conflicting else "correct",
        "source": {"label": second["label"], "row": second["line"], "evidence_row": group["first"]},
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


def conflict_cases(rows: list[dict[str, Any]], sentences: int = SENTENCES) -> list[dict]:
    cases: list[dict[str, Any]] = []
    for i, group in enumerate(groups(rows)[:sentences]):
        split = "dev" if i % 2 == 0 else "heldout"
        for label in ("not_entailment", "entailment"):
            cases.append(_case(len(cases) + 1, group, split, _claim(group, label)))
    return cases


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fever-dir", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--sentences", type=int, default=SENTENCES)
    args = parser.parse_args(argv)
    cases = conflict_cases(fever_rows(args.fever_dir), args.sentences)
    args.out.write_text(json.dumps(cases, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(cases)} cases to {args.out}")


if __name__ == "__main__":
    main()
