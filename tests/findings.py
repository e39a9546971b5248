"""A pytest plugin (``-p tests.findings``, as ``make drills`` loads it) that ends the run
with one line per finding of an issue, its result taken from the tests that cover it.

A test names what it covers with ``@pytest.mark.finding(24, 5)`` (issue 24, item 5; a
test may carry several). A finding whose covering tests all passed *held*; one with a
failed or erroring test *FAILED*; one whose tests were all skipped says so with the first
reason; one with no marked test says "no test marked", so a finding is never silently
counted as held. The lines are also written to ``$FINDINGS_REPORT`` when set (``bin/drills``
prints that file last)."""

from __future__ import annotations

import os
from collections import defaultdict
from typing import Any

# The findings each issue lists, in its order: what the summary prints even when no test
# is marked for one.
FINDINGS: dict[int, dict[int, str]] = {
    24: {
        1: "Idempotency-Key holds under concurrency (one effect per key)",
        2: "OTLP: only a task's owner submits its attempts",
        3: "a contradiction inside one tool result is seen",
        4: "SSRF guard refuses IPv6 spellings that embed an IPv4 address",
        5: "login throttling by account and client address",
        6: "Content-Disposition built safely from tool names",
        7: "OTLP: bad task ids and deep nesting answer 4xx, not 500",
        8: "neutraliser folds invisible and look-alike characters",
        9: "bulk replay preview without the CSRF token in a URL",
        10: "/metrics only with the token; /ready tells anonymous callers ready or not",
        11: "webhook refusal does not name the resolved address",
        12: "OTLP trace ids are scoped by account",
        13: "no-store on pages showing a secret; no webhook URL query string in logs",
        14: "NUL in free-form object keys stated in the schema",
    },
    34: {
        1: "one account's poisoned OTLP traces cannot delay another's work",
        2: "NaN, Infinity, lone surrogates and deep nesting answer 4xx, nothing stored",
        3: "decisions through the API apply at once; breaking changes caught in CI",
        4: "the OpenAPI document says what the server checks (hooks-free schemathesis)",
        5: "Cache-Control: no-store on the API and every signed-in page",
        6: "validator internals through the API for staff only, as on the pages",
        7: "the same error for unresolvable and non-public webhook hosts",
        8: "one documented 403 code",
    },
}

_outcomes: dict[tuple[int, int], list[tuple[str, str, str]]] = defaultdict(list)
_covering: dict[str, list[tuple[int, int]]] = {}


def pytest_collection_modifyitems(items: list[Any]) -> None:
    # user_properties travel with each report, also from pytest-xdist's workers.
    for item in items:
        keys = [(int(m.args[0]), int(m.args[1])) for m in item.iter_markers("finding")]
        if keys:
            _covering[item.nodeid] = keys
            item.user_properties.append(("findings", keys))


def _skip_reason(report: Any) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def pytest_runtest_logreport(report: Any) -> None:
    keys = [tuple(k) for name, value in report.user_properties if name == "findings" for k in value]
    if not keys:
        return
    _covering.setdefault(report.nodeid, keys)  # type: ignore[arg-type]
    if report.when == "call" or report.failed or (report.skipped and report.when == "setup"):
        outcome = "failed" if report.failed else "skipped" if report.skipped else "passed"
        reason = _skip_reason(report) if report.skipped else ""
        for key in keys:
            _outcomes[key].append((report.nodeid, outcome, reason))


def _tests(count: int) -> str:
    return f"{count} test" if count == 1 else f"{count} tests"


def finding_line(issue: int, number: int, title: str) -> str:
    """The summary line of one finding from the outcomes its tests reported."""
    results = _outcomes.get((issue, number), [])
    marked = [nodeid for nodeid, keys in _covering.items() if (issue, number) in keys]
    if not marked:
        verdict = "no test marked"
    elif any(outcome == "failed" for _, outcome, _ in results):
        failed = sorted({nodeid for nodeid, outcome, _ in results if outcome == "failed"})
        verdict = f"FAILED ({len(failed)} of {_tests(len(marked))}: {failed[0]})"
    elif any(outcome == "passed" for _, outcome, _ in results):
        passed = {nodeid for nodeid, outcome, _ in results if outcome == "passed"}
        skipped = len({nodeid for nodeid, outcome, _ in results if outcome == "skipped"})
        verdict = f"held ({_tests(len(passed))} passed" + (
            f", {skipped} skipped)" if skipped else ")"
        )
    elif results:
        verdict = f"not checked: {_tests(len(marked))} skipped ({results[0][2]})"
    else:
        verdict = f"not checked: {_tests(len(marked))} marked, none ran"
    return f"issue {issue} finding {number:>2} {title}: {verdict}"


def pytest_terminal_summary(terminalreporter: Any) -> None:
    lines = [
        finding_line(issue, number, title)
        for issue, findings in sorted(FINDINGS.items())
        for number, title in findings.items()
    ]
    terminalreporter.section("findings")
    for line in lines:
        terminalreporter.write_line(line)
    path = os.environ.get("FINDINGS_REPORT")
    if path:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("".join(line + "\n" for line in lines))
