"""Build the entailment model's training file from public NLI data.

Every source is a file in a public repository at a named commit (``SOURCES``: repository,
commit, paths, the dataset's licence); ``--raw`` is a folder holding them as
``<owner>+<repo>/<path>``, taken from those commits. Labels are the datasets' own:
entailment, neutral, contradiction (FEVER's SUPPORTS, NOT ENOUGH INFO, REFUTES), and
``not_entailment`` for the FEVER rows whose redistributor merged REFUTES with NOT ENOUGH
INFO (trained as "not entailment": the model's entailment probability is pushed down,
the other two share the rest).

Nothing judge_bench measures is trained on: a row whose premise or hypothesis is (or
holds) a text of any judge_bench case file, or of FEVER-Symmetric (the conflict
category's source), is left out; FEVER rows are split by their evidence
(``bench.judge_public_cases.fever_bucket``), and only the ``train`` bucket is used, the
rest being the certification cases. ``tests/evidence_app/offline_judge/test_entailment_model.py``
checks the shipped record of what was used.

    python -m evidence_app.offline_judge.training.data --raw RAW --out var/judge-model/train.jsonl
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import json
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from bench.judge_public_cases import detokenize, fever_bucket, fever_rows
from evidence_app.offline_judge.training.mutations import contradictions, not_entailed

ROOT = Path(__file__).resolve().parents[3]
CASE_FILES = sorted((ROOT / "evidence_app" / "judge_bench").glob("*cases*.json"))
LABELS = {
    "entailment": "entailment",
    "neutral": "neutral",
    "contradiction": "contradiction",
    "supports": "entailment",
    "refutes": "contradiction",
    "not enough info": "neutral",
    "not_entailment": "not_entailment",
}
Row = tuple[str, str, str, str]  # premise, hypothesis, label, row id
csv.field_size_limit(sys.maxsize)


@dataclass(frozen=True)
class Source:
    name: str
    repository: str
    commit: str
    paths: tuple[str, ...]
    licence: str
    read: Callable[[Path], Iterator[Row]]
    # At most this many rows of each label (a balanced share of a skewed set); 0: all.
    per_label: int = 0


def _jsonl(path: Path) -> Iterator[tuple[int, dict]]:
    with path.open(encoding="utf-8") as f:
        for i, line in enumerate(f):
            if line.strip():
                yield i, json.loads(line)


def _tsv(path: Path, names: list[str] | None = None) -> Iterator[tuple[int, dict]]:
    with path.open(encoding="utf-8-sig", newline="") as f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = names or next(reader)
        for i, row in enumerate(reader):
            yield i, dict(zip(header, row, strict=False))


def _generative_nli(split: str) -> Callable[[Path], Iterator[Row]]:
    def read(repo: Path) -> Iterator[Row]:
        for i, d in _jsonl(repo / f"data/{split}/dev.jsonl"):
            yield d["premise"], d["hypothesis"], d["label"], f"{split}:dev:{i}"

    return read


def _esnli_test(repo: Path) -> Iterator[Row]:
    base = repo / "dataset/eSNLI"
    columns = [
        (base / f"{n}.test").read_text(encoding="utf-8").split("\n") for n in ("s1", "s2", "labels")
    ]
    for i, (p, h, label) in enumerate(zip(*columns, strict=True)):
        if label.strip():
            yield detokenize(p), detokenize(h), label, f"snli:test:{i}"


def _mnli_mismatched(repo: Path) -> Iterator[Row]:
    for i, d in _tsv(repo / "data/mnli_mismatched", ["label", "premise", "hypothesis"]):
        yield detokenize(d["premise"]), detokenize(d["hypothesis"]), d["label"], f"mm:{i}"


def _cad(repo: Path) -> Iterator[Row]:
    for split in ("train", "dev", "test"):
        for i, d in _tsv(repo / f"NLI/all_combined/{split}.tsv"):
            yield d["sentence1"], d["sentence2"], d["gold_label"], f"cad:{split}:{i}"


def _breaking(repo: Path) -> Iterator[Row]:
    for i, d in _jsonl(repo / "data/dataset.jsonl"):
        yield d["sentence1"], d["sentence2"], d["gold_label"], f"breaking:{i}"


def _conjnli(repo: Path) -> Iterator[Row]:
    for name in ("conj_dev.tsv", "adversarial_train_15k.tsv"):
        for i, d in _tsv(repo / f"data/NLI/{name}", ["premise", "hypothesis", "label"]):
            if i > 0 or name != "conj_dev.tsv" or d["label"].lower() in LABELS:
                yield d["premise"], d["hypothesis"], d["label"], f"conjnli:{name}:{i}"


def _vitaminc(repo: Path) -> Iterator[Row]:
    for split in ("test", "train_0", "train_1", "train_2", "train_3", "train_4"):
        for i, d in _jsonl(repo / f"data/vitaminc/{split}.jsonl"):
            yield d["evidence"], d["claim"], d["label"], f"vitaminc:{split}:{i}"


def _fever(repo: Path) -> Iterator[Row]:
    for row in fever_rows(repo / "RTE-Fever/processed"):
        if fever_bucket(row["evidence"]) == "train":
            yield detokenize(row["evidence"]), row["claim"], row["label"], row["key"]


def _fever_mutations(repo: Path) -> Iterator[Row]:
    supported = [row for row in _fever(repo) if row[2] == "entailment"]
    yield from contradictions(supported)


def _fever_not_entailed(repo: Path) -> Iterator[Row]:
    supported = [row for row in _fever(repo) if row[2] == "entailment"]
    yield from not_entailed(supported)


SOURCES = (
    Source(
        "snli_dev",
        "anthonywchen/generative-nli",
        "aad500326efe82814047e6ea3b90b5fd8969e36b",
        ("data/snli/dev.jsonl",),
        "CC BY-SA 4.0 (SNLI)",
        _generative_nli("snli"),
        per_label=1500,
    ),
    Source(
        "mnli_dev_matched",
        "anthonywchen/generative-nli",
        "aad500326efe82814047e6ea3b90b5fd8969e36b",
        ("data/mnli/dev.jsonl",),
        "OANC / CC BY-SA 3.0 (MultiNLI)",
        _generative_nli("mnli"),
    ),
    Source(
        "mnli_dev_mismatched",
        "jind11/TextFooler",
        "6a56cb10f1055e00a8fbc6882f289e91cfe60f4e",
        ("data/mnli_mismatched",),
        "OANC / CC BY-SA 3.0 (MultiNLI); repository MIT",
        _mnli_mismatched,
    ),
    Source(
        "cad_snli",
        "acmi-lab/counterfactually-augmented-data",
        "6f232a1d2a11462a30ce08fb4825b734ab30828e",
        ("NLI/all_combined/train.tsv", "NLI/all_combined/dev.tsv", "NLI/all_combined/test.tsv"),
        "Apache-2.0; text from SNLI (CC BY-SA 4.0)",
        _cad,
        per_label=1700,
    ),
    Source(
        "breaking_nli",
        "BIU-NLP/Breaking_NLI",
        "8a7658c1ce6b732f4e8af3b06560f1a13b8b18b0",
        ("breaking_nli_dataset.zip (data/dataset.jsonl)",),
        "CC BY-SA 4.0",
        _breaking,
        per_label=600,
    ),
    Source(
        "conjnli",
        "swarnaHub/ConjNLI",
        "10e0515c0d1777651b5084d9cca4664ead8162a4",
        ("data/NLI/conj_dev.tsv", "data/NLI/adversarial_train_15k.tsv"),
        "MIT (repository); Wikipedia text, CC BY-SA",
        _conjnli,
        per_label=500,
    ),
    Source(
        "vitaminc",
        "INK-USC/Lifelong-ICL",
        "8b0d36b5258816f649d1e44fb14e7140d1015fbc",
        ("data/vitaminc/*.jsonl",),
        "CC BY-SA 3.0 (VitaminC)",
        _vitaminc,
    ),
    Source(
        "fever",
        "asaakyan/covidfact",
        "ceeb613cde5a6c19dea4f2c165654e510ff52b10",
        ("RTE-Fever/processed/dev.raw.input0", "dev.raw.input1", "dev.label"),
        "CC BY-SA 3.0 (FEVER, Wikipedia)",
        _fever,
    ),
    Source(
        "fever_mutations",
        "asaakyan/covidfact",
        "ceeb613cde5a6c19dea4f2c165654e510ff52b10",
        ("RTE-Fever/processed/dev.raw.input0", "dev.raw.input1", "dev.label"),
        "CC BY-SA 3.0 (FEVER, Wikipedia); the train side's SUPPORTS claims mutated by rule"
        " here (training/mutations.py), labelled contradiction",
        _fever_mutations,
    ),
    Source(
        "fever_not_entailed",
        "asaakyan/covidfact",
        "ceeb613cde5a6c19dea4f2c165654e510ff52b10",
        ("RTE-Fever/processed/dev.raw.input0", "dev.raw.input1", "dev.label"),
        "CC BY-SA 3.0 (FEVER, Wikipedia); the train side's SUPPORTS claims changed by rule"
        " here (training/mutations.py: the relation reversed, another predicate noun,"
        " another month), labelled not_entailment",
        _fever_not_entailed,
    ),
)
# The conflict category's source: never trained on.
HELD_BACK = ("TalSchuster/FeverSymmetric", "fa25d17e73ea0694edc78133ec654b9f32f6db73")


def flat(text: str) -> str:
    """Text compared as lower-case letters and digits only."""
    return re.sub(r"[^a-z0-9]+", " ", detokenize(text).lower()).strip()


def _case_texts(case: dict) -> Iterator[str]:
    yield str(case.get("answer", ""))
    for item in case.get("evidence", []):
        yield str(item.get("content", ""))
        yield from str(item.get("content", "")).split("\n")


def judged_texts(raw: Path) -> set[str]:
    """Every answer and evidence text of judge_bench's cases, and FEVER-Symmetric's."""
    texts: set[str] = set()
    for path in CASE_FILES:
        for case in json.loads(path.read_text(encoding="utf-8")):
            texts.update(flat(t) for t in _case_texts(case))
    held = raw / HELD_BACK[0].replace("/", "+")
    for path in sorted(held.glob("symmetric_*/*.jsonl")):
        for _i, d in _jsonl(path):
            texts.update(
                flat(str(d.get(k, ""))) for k in ("claim", "evidence_sentence", "evidence")
            )
    return {t for t in texts if len(t) >= 12}


def touches(premise: str, hypothesis: str, texts: set[str], long_texts: list[str]) -> bool:
    p, h = flat(premise), flat(hypothesis)
    if p in texts or h in texts:
        return True
    return any(t in p for t in long_texts if len(t) <= len(p))


def _rank(source: str, row_id: str) -> str:
    return hashlib.sha256(f"{source}:{row_id}".encode()).hexdigest()


def build(raw: Path) -> tuple[list[dict], dict]:
    texts = judged_texts(raw)
    long_texts = sorted((t for t in texts if len(t) >= 40), key=len)
    rows: list[dict] = []
    record: dict = {
        "sources": [],
        "held_back": {"repository": HELD_BACK[0], "commit": HELD_BACK[1]},
    }
    seen: set[tuple[str, str]] = set()
    for source in SOURCES:
        kept: list[dict] = []
        dropped = Counter()
        for premise, hypothesis, label, row_id in source.read(
            raw / source.repository.replace("/", "+")
        ):
            mapped = LABELS.get(label.strip().lower())
            if mapped is None or not premise.strip() or not hypothesis.strip():
                dropped["no label or text"] += 1
                continue
            key = (flat(premise), flat(hypothesis))
            if key in seen:
                dropped["duplicate"] += 1
                continue
            if touches(premise, hypothesis, texts, long_texts):
                dropped["a judge_bench text"] += 1
                continue
            seen.add(key)
            kept.append(
                {
                    "premise": premise.strip(),
                    "hypothesis": hypothesis.strip(),
                    "label": mapped,
                    "source": f"{source.name}:{row_id}",
                }
            )
        if source.per_label:
            kept.sort(key=lambda r: _rank(source.name, r["source"]))
            counts: Counter[str] = Counter()
            capped = []
            for r in kept:
                counts[r["label"]] += 1
                if counts[r["label"]] <= source.per_label:
                    capped.append(r)
            kept = capped
        rows.extend(kept)
        record["sources"].append(
            {
                "name": source.name,
                "repository": source.repository,
                "commit": source.commit,
                "paths": list(source.paths),
                "licence": source.licence,
                "rows": dict(Counter(r["label"] for r in kept)),
                "left_out": dict(dropped),
            }
        )
    rows.sort(key=lambda r: _rank("order", r["source"]))
    return rows, record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--raw", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--record", type=Path, help="write what was used here (JSON)")
    parser.add_argument("--ids", type=Path, help="write every row's source id here (gzip)")
    args = parser.parse_args()
    rows, record = build(args.raw)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    record["rows"] = len(rows)
    record["sha256"] = hashlib.sha256(args.out.read_bytes()).hexdigest()
    if args.ids:
        ids = "".join(f"{r['source']}\n" for r in sorted(rows, key=lambda r: r["source"]))
        args.ids.write_bytes(gzip.compress(ids.encode("utf-8"), mtime=0))
    if args.record:
        args.record.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    for s in record["sources"]:
        print(f"{s['name']:<22}{sum(s['rows'].values()):>7}  {s['rows']}  left out {s['left_out']}")
    print(f"{len(rows)} pairs -> {args.out}")


if __name__ == "__main__":
    main()
