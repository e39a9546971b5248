"""Write ``evidence_app/judge_bench/public_cases.json``: judge_bench cases from public data.

Public, labelled claim/evidence and question/answer datasets, each converted into
judge_bench's case format (docs/validator.md, "Case format"); their source, commit and
licence are in ``evidence_app/judge_bench/PUBLIC_DATA.md``. Every label is the dataset's
own annotation, never a judge's output. ``fever`` and ``halueval`` ship; ``wice`` is
built only on request (``--wice-dir``, ``--wice-out``), for a local measurement: its
evidence is the text of third-party web pages, whose licence does not clearly allow
shipping it. ``fever_certify`` (with ``--symmetric-dir``) is written to its own file,
``certify_cases.json``.

- ``fever``: FEVER claims with their gold Wikipedia evidence, as redistributed in the
  COVID-Fact repository (``RTE-Fever/processed/dev.raw.input0`` = evidence,
  ``dev.raw.input1`` = claim, ``dev.label``). ``entailment`` (FEVER SUPPORTS) is a
  correct answer; ``not_entailment`` (REFUTES or NOT ENOUGH INFO) a wrong one.
- ``wice`` (not shipped): WiCE claims from Wikipedia with the web page they cite
  (``data/entailment_retrieval/claim/{dev,test}.jsonl``). ``supported`` is a correct
  answer; ``partially_supported`` a wrong one (part of it is not in the source);
  ``not_supported`` an answer the source does not back at all (irrelevant).
- ``fever_certify``: a set large enough to certify a threshold on (1,200 cases per
  half), from the same FEVER rows as ``fever``, labelled the same way, and disjoint from
  what the embedded judge's entailment model trains on: only rows whose evidence is on
  the ``cases`` side of ``fever_bucket``, none of the ``fever`` cases' rows or evidence
  texts, none whose claim or evidence is (or holds) a FEVER-Symmetric text (the
  ``conflict`` cases' source; compared as lower-case letters and digits). Every claim
  about one evidence text is in the same half (the half is the parity of the evidence
  text's SHA-256); per label, the rows ordered by the SHA-256 of their source id fill
  each half up to 600.
- ``halueval``: HaluEval QA (``generation/qa/qa_one-turn_data.json``: a HotpotQA
  question, its Wikipedia knowledge, the ``right_answer`` and a ``hallucinated_answer``
  written to look right). Each selected row gives one case: its right answer (correct),
  its hallucinated answer (wrong), or the right answer of another row (irrelevant: the
  answer to another question; rows whose other answer occurs in the knowledge are
  skipped).

Selection is deterministic: per dataset and label, the rows ordered by the SHA-256 of
their source id, the first N taken; within each label the cases alternate between the
development half (``dev``) and the held-out half (``heldout``), so each half has the
same mix. Develop on ``dev``; report on ``heldout``.

    python bench/judge_public_cases.py --fever-dir RAW/RTE-Fever/processed \\
        --halueval-file RAW/generation/qa/qa_one-turn_data.json \\
        [--wice-dir RAW/data/entailment_retrieval/claim --wice-out var/wice_cases.json]

``--per-label N --out var/public_large.json`` takes up to N rows of every label instead
(a local measurement of how the judge's accepts grow with the data; not shipped).

``--symmetric-dir RAW/FeverSymmetric`` also writes the ``fever_certify`` cases to
``evidence_app/judge_bench/certify_cases.json`` (``--certify-out`` elsewhere):

    python bench/judge_public_cases.py --fever-dir RAW/RTE-Fever/processed \\
        --halueval-file RAW/generation/qa/qa_one-turn_data.json \\
        --symmetric-dir RAW/FeverSymmetric

(RAW: a checkout of each repository at the commit named in PUBLIC_DATA.md.)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "evidence_app" / "judge_bench" / "public_cases.json"
CERTIFY_OUT = OUT.with_name("certify_cases.json")

FEVER_PER_LABEL = {"entailment": 100, "not_entailment": 100}
FEVER_CATEGORY = {"entailment": "supported", "not_entailment": "not_entailed"}
CERTIFY = "fever_certify"
CERTIFY_PER_HALF = {"entailment": 600, "not_entailment": 600}
SPLITS = ("dev", "heldout")
SYMMETRIC_FILES = (
    "symmetric_v0.1/fever_symmetric_full.jsonl",
    "symmetric_v0.1/fever_symmetric_generated.jsonl",
    "symmetric_v0.2/fever_symmetric_dev.jsonl",
    "symmetric_v0.2/fever_symmetric_test.jsonl",
)
WICE_PER_LABEL = {"supported": 100, "partially_supported": 60, "not_supported": 40}
HALUEVAL_PER_LABEL = {"right_answer": 70, "hallucinated_answer": 70, "other_question": 70}
HALUEVAL_CATEGORY = {
    "right_answer": "right_answer",
    "hallucinated_answer": "hallucinated",
    "other_question": "other_question",
}
# What kind of answer each label is: the judge may accept only a correct one.
KIND = {
    "supported": "correct",
    "not_entailed": "wrong",
    "partially_supported": "wrong",
    "not_supported": "irrelevant",
    "right_answer": "correct",
    "hallucinated": "wrong",
    "other_question": "irrelevant",
}
EXPECTED = {"correct": "accepted", "wrong": "rejected", "irrelevant": "insufficient_evidence"}
# Evidence longer than this is cut at a sentence end (a web page's boilerplate tail).
MAX_EVIDENCE_CHARS = 12_000

_PTB = {
    "-LRB-": "(",
    "-RRB-": ")",
    "-LSB-": "[",
    "-RSB-": "]",
    "-LCB-": "{",
    "-RCB-": "}",
    "``": '"',
    "''": '"',
    "--": "–",
}


def detokenize(text: str) -> str:
    """FEVER's tokenised Wikipedia text as plain text ("( born 1943 ) ," -> "(born 1943),")."""
    for token, plain in _PTB.items():
        text = text.replace(token, plain)
    text = re.sub(r"\s+([,.;:!?)\]}%])", r"\1", text)
    text = re.sub(r"([(\[{$])\s+", r"\1", text)
    text = re.sub(r"\s+('s|'re|'ve|'ll|'d|n't)\b", r"\1", text)
    text = re.sub(r'"\s+([^"]*?)\s+"', r'"\1"', text)
    return re.sub(r"\s{2,}", " ", text).strip()


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


# FEVER rows are split by their evidence (every claim about one evidence text on the same
# side): the embedded judge's entailment model trains on the ``train`` bucket only
# (evidence_app/offline_judge/training/data.py), the cases come from the rest.
FEVER_TRAIN_SHARE = 70  # of 100


def fever_bucket(evidence: str) -> str:
    """``train`` or ``cases``: which side of the split a FEVER evidence text is on."""
    return (
        "train"
        if int(_digest(f"fever-evidence:{evidence}"), 16) % 100 < FEVER_TRAIN_SHARE
        else "cases"
    )


def _select(rows: list[dict[str, Any]], per_label: dict[str, int]) -> list[dict[str, Any]]:
    """The first N rows of each label by hash of their source id, alternating halves."""
    chosen: list[dict[str, Any]] = []
    for label, count in per_label.items():
        ranked = sorted((r for r in rows if r["label"] == label), key=lambda r: _digest(r["key"]))
        for i, row in enumerate(ranked[:count]):
            chosen.append({**row, "split": "dev" if i % 2 == 0 else "heldout"})
    return chosen


def subject_of(claim: str) -> str:
    """The leading name of a claim ("Fox 2000 Pictures released …" -> "Fox 2000 Pictures";
    "A View to a Kill is …" -> "A View to a Kill")."""
    words = claim.split()
    kept: list[str] = []
    for i, word in enumerate(words):
        bare = word.strip(',.;:()"')
        capital = bool(bare) and (bare[0].isupper() or bare[0].isdigit())
        linking = bare in _LINKING and i + 1 < len(words) and words[i + 1][:1].isupper()
        if not (capital or (kept and linking)):
            break
        kept.append(bare.removesuffix("'s"))
        if word.endswith(("'s", ",")):
            break
    return " ".join(kept) or words[0]


_LINKING = frozenset({"of", "the", "to", "a", "an", "and", "in", "for", "on", "at"})


def fever_rows(folder: Path) -> list[dict[str, Any]]:
    evidence = (folder / "dev.raw.input0").read_text(encoding="utf-8").splitlines()
    claims = (folder / "dev.raw.input1").read_text(encoding="utf-8").splitlines()
    labels = (folder / "dev.label").read_text(encoding="utf-8").splitlines()
    return [
        {
            "key": f"fever:dev:{i + 1}",
            "line": i + 1,
            "claim": c.strip(),
            "evidence": e,
            "label": lab,
        }
        for i, (e, c, lab) in enumerate(zip(evidence, claims, labels, strict=True))
    ]


def wice_rows(folder: Path) -> list[dict[str, Any]]:
    rows = []
    for split in ("dev", "test"):
        for line in (folder / f"{split}.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            rows.append(
                {
                    "key": f"wice:{row['meta']['id']}",
                    "line": row["meta"]["id"],
                    "claim": row["claim"].strip(),
                    "evidence": row["evidence"],
                    "title": row["meta"]["claim_title"],
                    "label": row["label"],
                }
            )
    return rows


def _clip(text: str) -> str:
    if len(text) <= MAX_EVIDENCE_CHARS:
        return text
    cut = text.rfind("\n", 0, MAX_EVIDENCE_CHARS)
    return text[: cut if cut > 0 else MAX_EVIDENCE_CHARS]


def _case(dataset: str, number: int, row: dict[str, Any], category: str, **fields: Any) -> dict:
    kind = KIND[category]
    return {
        "id": f"{dataset}-{number:03d}",
        "dataset": dataset,
        "split": row["split"],
        "category": category,
        "kind": kind,
        "source": {"label": row["label"], "row": row["line"]},
        "rules": "",
        **fields,
        "answer": row["claim"],
        "expected": {"status": EXPECTED[kind], "claims": []},
    }


def fever_cases(
    rows: Iterable[dict[str, Any]], per_label: dict[str, int] = FEVER_PER_LABEL
) -> list[dict[str, Any]]:
    out = []
    for n, row in enumerate(_select(list(rows), per_label), start=1):
        out.append(
            _case(
                "fever",
                n,
                row,
                FEVER_CATEGORY[row["label"]],
                request=f"What does the source say about {subject_of(row['claim'])}?",
                evidence=[{"title": "Wikipedia excerpt", "content": detokenize(row["evidence"])}],
            )
        )
    return out


def flat(text: str) -> str:
    """Text compared as lower-case letters and digits only."""
    return re.sub(r"[^a-z0-9]+", "", detokenize(text).lower())


def symmetric_texts(folder: Path) -> tuple[set[str], set[str]]:
    """FEVER-Symmetric's claims and evidence sentences, flattened."""
    claims, sentences = set(), set()
    for name in SYMMETRIC_FILES:
        for line in (folder / name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                claims.add(flat(row["claim"]))
                sentences.add(flat(row.get("evidence_sentence", row.get("evidence", ""))))
    return claims, sentences - {""}


def certify_rows(rows: list[dict[str, Any]], symmetric: tuple[set[str], set[str]]) -> list[dict]:
    """FEVER rows no model training and no other judge_bench case uses (module docstring)."""
    shipped = _select(rows, FEVER_PER_LABEL)
    shipped_rows = {r["line"] for r in shipped}
    shipped_evidence = {r["evidence"] for r in shipped}
    claims, sentences = symmetric
    kept = []
    for row in rows:
        if fever_bucket(row["evidence"]) != "cases" or row["line"] in shipped_rows:
            continue
        evidence = flat(row["evidence"])
        if row["evidence"] in shipped_evidence or flat(row["claim"]) in claims:
            continue
        if any(sentence in evidence for sentence in sentences):
            continue
        kept.append(row)
    return kept


def _half(evidence: str) -> str:
    return "dev" if int(_digest(f"fever-certify-half:{evidence}"), 16) % 2 == 0 else "heldout"


def certify_cases(
    rows: list[dict[str, Any]], per_half: dict[str, int] = CERTIFY_PER_HALF
) -> list[dict[str, Any]]:
    """Up to ``per_half`` rows of each label in each half, the half set by the evidence."""
    chosen: list[dict[str, Any]] = []
    for label, count in per_half.items():
        taken = dict.fromkeys(SPLITS, 0)
        for row in sorted(
            (r for r in rows if r["label"] == label), key=lambda r: _digest(r["key"])
        ):
            split = _half(row["evidence"])
            if taken[split] < count:
                taken[split] += 1
                chosen.append({**row, "split": split})
    cases = []
    for n, row in enumerate(chosen, start=1):
        case = _case(
            CERTIFY,
            n,
            row,
            FEVER_CATEGORY[row["label"]],
            request=f"What does the source say about {subject_of(row['claim'])}?",
            evidence=[{"title": "Wikipedia excerpt", "content": detokenize(row["evidence"])}],
        )
        cases.append({**case, "id": f"{CERTIFY}-{n:04d}"})
    return cases


def wice_cases(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for n, row in enumerate(_select(list(rows), WICE_PER_LABEL), start=1):
        content = _clip("\n".join(s.strip() for s in row["evidence"] if s.strip()))
        out.append(
            _case(
                "wice",
                n,
                row,
                row["label"],
                request=f"What does the source say about {row['title']}?",
                evidence=[{"title": f"Web page cited for {row['title']}", "content": content}],
            )
        )
    return out


def halueval_rows(path: Path) -> list[dict[str, Any]]:
    """One row per (question, answer kind): the labels of each row are assigned in turn
    over the rows ordered by hash, so a question appears once."""
    raw = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    keyed = sorted(
        ({**r, "key": f"halueval:{i + 1}", "line": i + 1} for i, r in enumerate(raw)),
        key=lambda r: _digest(r["key"]),
    )
    kinds = list(HALUEVAL_PER_LABEL)
    rows = []
    for n, row in enumerate(keyed):
        label = kinds[n % len(kinds)]
        answer = row.get(label, "")
        if label == "other_question":
            other = keyed[(n + 1) % len(keyed)]["right_answer"]
            if other.lower() in row["knowledge"].lower() or other == row["right_answer"]:
                continue
            answer = other
        rows.append({**row, "label": label, "claim": answer.strip()})
    return rows


def halueval_cases(
    rows: Iterable[dict[str, Any]], per_label: dict[str, int] = HALUEVAL_PER_LABEL
) -> list[dict[str, Any]]:
    out = []
    for n, row in enumerate(_select(list(rows), per_label), start=1):
        out.append(
            _case(
                "halueval",
                n,
                row,
                HALUEVAL_CATEGORY[row["label"]],
                request=row["question"].strip(),
                evidence=[{"title": "Wikipedia knowledge", "content": row["knowledge"].strip()}],
            )
        )
    return out


def _write(cases: list[dict[str, Any]], path: Path) -> None:
    path.write_text(json.dumps(cases, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(cases)} cases to {path}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fever-dir", type=Path, required=True)
    parser.add_argument("--halueval-file", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--wice-dir", type=Path, help="also build the WiCE cases (not shipped)")
    parser.add_argument("--wice-out", type=Path, help="where to write them (with --wice-dir)")
    parser.add_argument(
        "--symmetric-dir",
        type=Path,
        help="FEVER-Symmetric's files: also build the fever_certify cases, none of its text",
    )
    parser.add_argument("--certify-out", type=Path, default=CERTIFY_OUT)
    parser.add_argument(
        "--per-label",
        type=int,
        help="take up to this many rows of every FEVER and HaluEval label instead of the "
        "shipped counts (a local measurement: needs --out elsewhere than the shipped file)",
    )
    args = parser.parse_args(argv)
    fever, halueval = FEVER_PER_LABEL, HALUEVAL_PER_LABEL
    if args.per_label:
        if args.out.resolve() == OUT:
            parser.error("--per-label needs --out: the shipped file keeps the shipped counts")
        fever = dict.fromkeys(FEVER_PER_LABEL, args.per_label)
        halueval = dict.fromkeys(HALUEVAL_PER_LABEL, args.per_label)
    rows = fever_rows(args.fever_dir)
    cases = fever_cases(rows, fever)
    cases += halueval_cases(halueval_rows(args.halueval_file), halueval)
    _write(cases, args.out)
    if args.symmetric_dir:
        _write(
            certify_cases(certify_rows(rows, symmetric_texts(args.symmetric_dir))), args.certify_out
        )
    if args.wice_dir:
        if not args.wice_out:
            parser.error("--wice-dir needs --wice-out (the WiCE cases are not shipped)")
        _write(wice_cases(wice_rows(args.wice_dir)), args.wice_out)


if __name__ == "__main__":
    main()
