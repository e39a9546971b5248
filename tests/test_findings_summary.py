"""The findings summary ``make drills`` ends with (tests/findings.py): one line per finding
of issue 24, its result from the outcomes of the tests marked for it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SUITE = """
import pytest

@pytest.mark.finding(24, 1)
def test_holds():
    pass

@pytest.mark.finding(24, 2)
def test_holds_too():
    pass

@pytest.mark.finding(24, 2)
def test_breaks():
    assert False

@pytest.mark.finding(24, 4)
def test_skipped():
    pytest.skip("needs PostgreSQL")

@pytest.mark.finding(24, 6)
@pytest.mark.finding(24, 7)
def test_two_findings():
    pass
"""


def test_each_finding_gets_one_line_from_its_tests_outcomes(tmp_path: Path) -> None:
    """Issue 24 ("make drills prints a line per finding"): held when every marked test
    passed, FAILED when one failed, skipped when all were, "no test marked" otherwise;
    the same lines land in $FINDINGS_REPORT."""
    (tmp_path / "test_suite.py").write_text(SUITE)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    finding: a finding\n")
    report = tmp_path / "findings.txt"
    env = {**os.environ, "FINDINGS_REPORT": str(report)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.findings",
            "-p",
            "no:django",
            "-p",
            "no:cacheprovider",
            "-q",
            str(tmp_path),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    lines = [line for line in report.read_text().splitlines() if line.startswith("issue 24 ")]
    assert len(lines) == 14
    # Every other issue's findings get their lines too, each "no test marked" here.
    assert all(
        line.endswith(": no test marked")
        for line in report.read_text().splitlines()
        if not line.startswith("issue 24 ")
    )
    by_number = {int(line.split()[3]): line for line in lines}
    assert by_number[1].endswith(": held (1 test passed)")
    assert ": FAILED (1 of 2 tests: " in by_number[2] and "test_breaks" in by_number[2]
    assert by_number[3].endswith(": no test marked")
    assert by_number[4].endswith(": not checked: 1 test skipped (needs PostgreSQL)")
    assert by_number[6].endswith(": held (1 test passed)")
    assert by_number[7].endswith(": held (1 test passed)")
    assert by_number[12].endswith(": no test marked")
    assert all(line in result.stdout for line in lines)
