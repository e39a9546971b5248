"""Issue 38, item 6: the public-case converter's ``--per-label`` builds a larger local set
from the same labelled rows (its own labels, halves alternating) and never overwrites
the shipped file with it."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from bench.judge_public_cases import OUT, main


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
