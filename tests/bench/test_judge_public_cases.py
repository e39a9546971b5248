"""Issue 38, item 6: the public-case converter's ``--per-label`` builds a larger local set
from the same labelled rows (its own labels, halves alternating) and never overwrites
the shipped file with it. Issue 44, item 4: its ``fever_certify`` set."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from bench.judge_public_cases import CERTIFY_OUT, OUT, detokenize, fever_bucket, fever_rows, main


def _raw(tmp_path: Path) -> tuple[Path, Path]:
    fever = tmp_path / "fever"
    fever.mkdir()
    evidence = [f"Town {i} is a town in Norway ." for i in range(12)]
    claims = [f"Town {i} is in {'Norway' if i % 2 else 'Spain'}." for i in range(12)]
    labels = ["not_entailment" if i % 2 == 0 else "entailment" for i in range(12)]
    for name, lines in (
        ("dev.raw.input0", evidence),
        ("dev.raw.input1", claims),
        ("dev.label", labels),
    ):
        (fever / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    halueval = tmp_path / "qa.json"
    halueval.write_text(
        "\n".join(
            json.dumps(
                {
                    "knowledge": f"Lake {i} lies at {100 + i} metres.",
                    "question": f"At what height does Lake {i} lie?",
                    "right_answer": f"{100 + i} metres",
                    "hallucinated_answer": f"{900 + i} metres",
                }
            )
            for i in range(9)
        )
        + "\n",
        encoding="utf-8",
    )
    return fever, halueval


def test_per_label_takes_more_rows_of_each_label_with_their_own_labels(tmp_path: Path) -> None:
    """Issue 38, item 6: with ``--per-label 5`` every FEVER label gives 5 cases (shipped:
    100), labelled by the row's own label and alternating dev / held-out."""
    fever, halueval = _raw(tmp_path)
    out = tmp_path / "large.json"
    main(
        [
            "--fever-dir",
            str(fever),
            "--halueval-file",
            str(halueval),
            "--per-label",
            "5",
            "--out",
            str(out),
        ]
    )
    cases = json.loads(out.read_text(encoding="utf-8"))
    fever_cases = [c for c in cases if c["dataset"] == "fever"]
    assert Counter(c["kind"] for c in fever_cases) == {"correct": 5, "wrong": 5}
    assert Counter(c["split"] for c in fever_cases) == {"dev": 6, "heldout": 4}
    for case in fever_cases:
        line = case["source"]["row"]
        assert case["kind"] == ("correct" if line % 2 == 0 else "wrong")
    assert Counter(c["kind"] for c in cases if c["dataset"] == "halueval") == {
        "correct": 3,
        "wrong": 3,
        "irrelevant": 3,
    }


def test_per_label_refuses_to_overwrite_the_shipped_cases(tmp_path: Path) -> None:
    """Issue 38, item 6: the shipped file keeps the shipped counts."""
    fever, halueval = _raw(tmp_path)
    before = OUT.read_bytes()
    with pytest.raises(SystemExit):
        main(["--fever-dir", str(fever), "--halueval-file", str(halueval), "--per-label", "5"])
    assert OUT.read_bytes() == before


def _certify_raw(tmp_path: Path) -> tuple[Path, Path, Path]:
    """600 FEVER rows (two claims about each of 300 evidence texts), and a FEVER-Symmetric
    holding one of those claims and one of those evidence sentences."""
    fever = tmp_path / "fever"
    fever.mkdir()
    evidence, claims, labels = [], [], []
    for i in range(300):
        evidence += [f"River {i} flows through Town {i} ."] * 2
        claims += [f"River {i} flows through Town {i}.", f"River {i} flows through Town {i + 1}."]
        labels += ["entailment", "not_entailment"]
    for name, lines in (
        ("dev.raw.input0", evidence),
        ("dev.raw.input1", claims),
        ("dev.label", labels),
    ):
        (fever / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "halueval").mkdir()
    _, halueval = _raw(tmp_path / "halueval")
    symmetric = tmp_path / "symmetric"
    # Two texts on the cases side of the model's split and in no ``fever`` case.
    one, two = 10, 12
    rows = {
        "symmetric_v0.1/fever_symmetric_full.jsonl": {
            "id": "1",
            "label": "SUPPORTS",
            "claim": f"River {one} flows through Town {one} .",
            "evidence_sentence": "Another sentence .",
        },
        "symmetric_v0.1/fever_symmetric_generated.jsonl": None,
        "symmetric_v0.2/fever_symmetric_dev.jsonl": {
            "id": "2",
            "label": "REFUTES",
            "claim": "Another claim .",
            "evidence": f"River {two} flows through Town {two} .",
        },
        "symmetric_v0.2/fever_symmetric_test.jsonl": None,
    }
    for name, row in rows.items():
        (symmetric / name).parent.mkdir(parents=True, exist_ok=True)
        (symmetric / name).write_text(json.dumps(row) + "\n" if row else "", encoding="utf-8")
    return fever, halueval, symmetric


def test_fever_certify_takes_no_row_the_model_trains_on_or_another_case_uses(
    tmp_path: Path,
) -> None:
    """Issue 44, item 4: the certification set holds only FEVER rows on the ``cases`` side
    of the model's training split, none of the ``fever`` cases' rows or evidence texts and
    no FEVER-Symmetric text; every claim about one evidence text in the same half; the
    shipped files are left alone with ``--certify-out`` and ``--out`` elsewhere."""
    fever, halueval, symmetric = _certify_raw(tmp_path)
    shipped = CERTIFY_OUT.read_bytes()
    out, certify = tmp_path / "public.json", tmp_path / "certify.json"
    main(
        [
            "--fever-dir",
            str(fever),
            "--halueval-file",
            str(halueval),
            "--symmetric-dir",
            str(symmetric),
            "--out",
            str(out),
            "--certify-out",
            str(certify),
        ]
    )
    assert CERTIFY_OUT.read_bytes() == shipped
    rows = {r["line"]: r for r in fever_rows(fever)}
    public = [c for c in json.loads(out.read_text(encoding="utf-8")) if c["dataset"] == "fever"]
    public_evidence = {c["evidence"][0]["content"] for c in public}
    cases = json.loads(certify.read_text(encoding="utf-8"))
    # 300 texts: 82 on the cases side, 33 of them (66 rows) in no fever case; FEVER-Symmetric
    # holds one claim about River 10 and the evidence of River 12 (two rows).
    assert len(cases) == 63
    for case in cases:
        row = rows[case["source"]["row"]]
        assert case["dataset"] == "fever_certify"
        assert fever_bucket(row["evidence"]) == "cases"
        assert case["evidence"][0]["content"] not in public_evidence
        assert case["kind"] == ("correct" if row["label"] == "entailment" else "wrong")
        assert case["answer"] != "River 10 flows through Town 10."
        assert not case["evidence"][0]["content"].startswith("River 12 flows")
    halves: dict[str, set[str]] = {}
    for case in cases:
        halves.setdefault(case["evidence"][0]["content"], set()).add(case["split"])
    assert all(len(h) == 1 for h in halves.values())
    assert {c["split"] for c in cases} == {"dev", "heldout"}
    unfiltered = [
        r
        for r in rows.values()
        if fever_bucket(r["evidence"]) == "cases"
        and detokenize(r["evidence"]) not in public_evidence
    ]
    excluded = {r["line"] for r in unfiltered} - {c["source"]["row"] for c in cases}
    assert {rows[line]["evidence"] for line in excluded} == {
        "River 10 flows through Town 10 .",
        "River 12 flows through Town 12 .",
    }
