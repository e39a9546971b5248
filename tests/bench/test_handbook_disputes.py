"""Issue 37: ``bench/handbook_disputes.py`` counts the statements of a handbook that the
rest of it disputes: a stale copy of a figure is counted both ways, a sentence about
something else is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import handbook_disputes


def test_a_stale_copy_is_counted_and_a_sentence_about_something_else_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "01-travel.md").write_text(
        "# Travel\n\nHotel stays on business trips are capped at 120 EUR a night.\n"
        "Laptops are replaced when they no longer meet the needs of your role.\n",
        encoding="utf-8",
    )
    (tmp_path / "02-faq.md").write_text(
        "Hotel stays on business trips are capped at 150 EUR a night.\n", encoding="utf-8"
    )
    monkeypatch.setattr(handbook_disputes, "HANDBOOK", tmp_path)

    handbook_disputes.main(["--every", "1", "--show"])

    out = capsys.readouterr().out
    assert out.splitlines()[0] == "disputed: 2 of 3 handbook statements"
    assert "   2  other figures" in out
    assert "claim: Laptops" not in out
    assert "claim: Hotel stays on business trips are capped at 120 EUR a night." in out
