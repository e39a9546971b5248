"""Long lists in the browser (issue 39): the task page of an attempt with 20,000 tool
results (40,000 transcript messages, built by ``bench.trace_tree.build_trace_task``) in
headless Chromium, against the same page of an attempt with 500 results in the same run.

Chromium (Playwright, the system Chromium) loads the task page from Django's live server
thread started in this process on the bench database, then does what a reviewer does:
the Evidence list's next page ("more", 200 results), a search in it, a run's transcript
opened (its first 100 messages), its next page and a search in it. Figures, in the
browser: the navigation's ``responseEnd`` and ``loadEventEnd`` (the page), and for each
list the time from its htmx request's start to the end of its swap's settle (the rows in
place; a search's 300 ms typing delay comes before the request and is not counted). Each
is measured ``repeats`` times at 390 and 1280 px, the two tasks interleaved, after one
warm-up round (server, templates, the browser's cache); p50 and p95 over all of them.
Target: the page loads, and each list answers, within 1 s (p95) with 20,000 results.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from bench.common import Figure, Target, percentile, result
from bench.trace_tree import CHROMIUM, LAUNCH_ARGS, RUNS, build_trace_task, live_server

RESULTS = 20_000
BASELINE_RESULTS = 500  # the smallest attempt in which every list has a full next page
WIDTHS = (390, 1280)
TARGET_MS = 1_000
PAGE = ("page response", "page load")
LISTS = (
    "evidence: next page",
    "evidence: search",
    "transcript: first page",
    "transcript: next page",
    "transcript: search",
)

LOAD_FIGURES = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  return {response: nav.responseEnd, load: nav.loadEventEnd,
          nodes: document.getElementsByTagName('*').length};
}"""
# Each htmx request's time from its start to the end of its swap's settle, on the request
# itself, so a late settle of an earlier request is not taken for the one measured.
HTMX_TIMER = """() => {
  window.__requests = [];
  document.body.addEventListener('htmx:beforeRequest', (e) => {
    const entry = {t0: performance.now(), ms: null};
    e.detail.xhr.__entry = entry;
    window.__requests.push(entry);
  });
  document.body.addEventListener('htmx:afterSettle', (e) => {
    const entry = e.detail.xhr && e.detail.xhr.__entry;
    if (entry) entry.ms = performance.now() - entry.t0;
  });
}"""
LAST_SETTLED = """() => {
  const r = window.__requests;
  return r.length && r[r.length - 1].ms !== null ? r[r.length - 1].ms : null;
}"""


def _poll(page: Any, expression: str, timeout_s: float = 30.0) -> Any:
    """Evaluate ``expression`` from this side until it returns something other than null
    or false (``wait_for_function`` evals in the page, which its Content Security Policy
    refuses)."""
    deadline = time.monotonic() + timeout_s
    while (value := page.evaluate(expression)) in (None, False):
        if time.monotonic() > deadline:
            raise RuntimeError(f"still {value} after {timeout_s} s: {expression}")
        page.wait_for_timeout(10)
    return value


def _timed(page: Any, act: Callable[[], None], done: Callable[[], None]) -> float:
    """Milliseconds from the start of the htmx request ``act()`` sends to the end of its
    swap, once ``done()`` (the expected rows are there) has returned."""
    page.evaluate("window.__requests = []")
    act()
    done()
    return float(_poll(page, LAST_SETTLED))


def walk(page: Any, url: str, results: int) -> dict[str, float]:
    """Load the task page and go through its lists as a reviewer does; the counts are
    checked at every step (a figure of a list that did not answer would mean nothing).
    Returns the figures in ms and the page's element count."""
    from playwright.sync_api import expect

    from evidence_app.review.lists import PAGE_SIZE, TRANSCRIPT_PAGE_SIZE
    from evidence_app.review.task_detail import EVIDENCE_INLINE_ITEMS

    per_run = results // RUNS
    last = per_run - 1  # "Document 3999" matches one result per run, "Step 3999:" one message
    page.goto(url, wait_until="load")
    _poll(page, "performance.getEntriesByType('navigation')[0].loadEventEnd > 0")
    load = page.evaluate(LOAD_FIGURES)
    page.evaluate(HTMX_TIMER)
    out = {"page response": load["response"], "page load": load["load"], "nodes": load["nodes"]}
    panel = page.locator("#evidence-panel")
    items = panel.locator(".evidence-list > li > details")
    expect(items).to_have_count(EVIDENCE_INLINE_ITEMS)
    more = panel.locator(".list-more button")
    out["evidence: next page"] = _timed(
        page, more.click, lambda: expect(items).to_have_count(EVIDENCE_INLINE_ITEMS + PAGE_SIZE)
    )
    search = panel.locator("input[type=search]")
    out["evidence: search"] = _timed(
        page, lambda: search.fill(f"Document {last}"), lambda: expect(items).to_have_count(RUNS)
    )
    run = page.locator("#trace-panel .trace-run > details").first
    run.locator("> summary").click()
    expect(run.locator(".trace-step").first).to_be_visible()
    transcript = run.locator("details.run-transcript")
    messages = transcript.locator("ol.transcript > li:not(.list-more)")
    out["transcript: first page"] = _timed(
        page,
        transcript.locator("> summary").click,
        lambda: expect(messages).to_have_count(TRANSCRIPT_PAGE_SIZE),
    )
    out["transcript: next page"] = _timed(
        page,
        transcript.locator(".list-more button").click,
        lambda: expect(messages).to_have_count(2 * TRANSCRIPT_PAGE_SIZE),
    )
    out["transcript: search"] = _timed(
        page,
        lambda: transcript.locator("input[type=search]").fill(f"Step {last}:"),
        lambda: expect(messages).to_have_count(1),
    )
    return out


@contextmanager
def _plain_http_live_server() -> Iterator[str]:
    """The live server on plain HTTP (the bench settings redirect to HTTPS, as
    production does); the setting is read when the server's handler is built."""
    from django.test import override_settings

    with override_settings(SECURE_SSL_REDIRECT=False), live_server() as base_url:
        yield base_url


def measure(
    tasks: dict[str, tuple[int, int]], session: str, *, widths: tuple[int, ...], repeats: int
) -> dict[str, dict[int, list[dict[str, float]]]]:
    """``tasks``: label -> (task id, results). Per label and width, the figures of each
    timed round (the first round warms up and is not kept)."""
    from playwright.sync_api import sync_playwright

    samples: dict[str, dict[int, list[dict[str, float]]]] = {
        label: {w: [] for w in widths} for label in tasks
    }
    with _plain_http_live_server() as base_url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        host = base_url.split("//", 1)[1].split(":")[0]
        pages: dict[tuple[str, int], Any] = {}
        errors: list[str] = []
        for label in tasks:
            for width in widths:
                context = browser.new_context(viewport={"width": width, "height": 900})
                context.set_default_timeout(30_000)
                context.add_cookies(
                    [{"name": "sessionid", "value": session, "domain": host, "path": "/"}]
                )
                page = context.new_page()
                page.on("pageerror", lambda exc: errors.append(str(exc)))
                pages[label, width] = page
        for round_ in range(1 + repeats):
            for width in widths:
                for label, (task_id, results) in tasks.items():
                    figures = walk(pages[label, width], f"{base_url}/tasks/{task_id}/", results)
                    if round_:
                        samples[label][width].append(figures)
        browser.close()
    if errors:
        raise RuntimeError(f"errors in the page: {errors[:3]}")
    return samples


def _values(runs: dict[int, list[dict[str, float]]], name: str) -> list[float]:
    return [figures[name] for by_width in runs.values() for figures in by_width]


def run(
    *,
    results: int = RESULTS,
    baseline_results: int = BASELINE_RESULTS,
    repeats: int = 5,
    widths: tuple[int, ...] = WIDTHS,
) -> dict[str, Any]:
    from django.contrib.auth import SESSION_KEY
    from django.test import Client

    from bench import data

    reviewer = data.user("bench-lists-reviewer", reviewer=True)
    started = time.perf_counter()
    big = build_trace_task(reviewer, steps=2 * results, title=f"Bench lists: {results:,}")
    build_s = round(time.perf_counter() - started, 1)
    small = build_trace_task(
        reviewer, steps=2 * baseline_results, title=f"Bench lists: {baseline_results:,}"
    )
    try:
        client = Client()
        client.force_login(reviewer)
        assert client.session[SESSION_KEY]
        samples = measure(
            {"baseline": (small.pk, baseline_results), "big": (big.pk, results)},
            client.cookies["sessionid"].value,
            widths=widths,
            repeats=repeats,
        )
    finally:
        big.delete()  # the runs, calls, tool results and messages cascade
        small.delete()
    return _result(samples, results=results, baseline_results=baseline_results, build_s=build_s)


def _result(
    samples: dict[str, dict[int, list[dict[str, float]]]],
    *,
    results: int,
    baseline_results: int,
    build_s: float,
) -> dict[str, Any]:
    big, base = samples["big"], samples["baseline"]
    n = f"{results:,} results"
    b = f"{baseline_results:,} results"
    figures: list[Figure] = []
    targets: list[Target] = []
    stats: dict[str, dict[str, float]] = {}
    for name in (*PAGE, *LISTS):
        values, baseline = _values(big, name), _values(base, name)
        p50, p95 = percentile(values, 50), percentile(values, 95)
        stats[name] = {
            "p50_ms": round(p50, 1),
            "p95_ms": round(p95, 1),
            "max_ms": round(max(values), 1),
            "baseline_p50_ms": round(percentile(baseline, 50), 1),
            "baseline_p95_ms": round(percentile(baseline, 95), 1),
        }
        figures += [
            Figure(
                "long_lists",
                f"{name} p50 ({n})",
                round(p50, 1),
                "ms",
                f"{b}, p50",
                stats[name]["baseline_p50_ms"],
            ),
            Figure(
                "long_lists",
                f"{name} p95 ({n})",
                round(p95, 1),
                "ms",
                f"{b}, p95",
                stats[name]["baseline_p95_ms"],
                note=f"max {max(values):,.0f} ms",
            ),
        ]
        if name != "page response":  # the response is part of the load
            what = "page loads" if name == "page load" else f"{name} answers"
            targets.append(
                Target(
                    "long_lists",
                    f"{what} within {TARGET_MS:,} ms, p95, {n} (issue 39)",
                    f"{p95:,.0f} ms (p50 {p50:,.0f}, max {max(values):,.0f})",
                    p95 <= TARGET_MS,
                )
            )
    nodes, base_nodes = _values(big, "nodes"), _values(base, "nodes")
    figures.append(
        Figure(
            "long_lists",
            f"elements at load ({n})",
            statistics.median(nodes),
            "",
            f"{b}",
            statistics.median(base_nodes),
        )
    )
    rows = []
    for name in (*PAGE, *LISTS):
        for width in big:
            values, baseline = [f[name] for f in big[width]], [f[name] for f in base[width]]
            p50, base_p50 = statistics.median(values), statistics.median(baseline)
            verdict = (
                "" if name == "page response" else "MET" if max(values) <= TARGET_MS else "MISSED"
            )
            rows.append(
                [
                    name,
                    f"{width} px",
                    f"{p50:,.0f}",
                    f"{max(values):,.0f}",
                    f"{base_p50:,.0f}",
                    f"{p50 / base_p50:.2f}x" if base_p50 else "-",
                    verdict,
                ]
            )
    headers = [
        "figure",
        "width",
        f"p50 ms ({n})",
        "max ms",
        f"p50 ms ({b})",
        "ratio p50",
        f"max <= {TARGET_MS:,} ms",
    ]
    details = {
        "results": results,
        "baseline_results": baseline_results,
        "build_seconds": build_s,
        "rounds_per_width": len(next(iter(big.values()))),
        "figures_ms": stats,
        "samples": {label: {str(w): s for w, s in by.items()} for label, by in samples.items()},
        "growth_table": {"headers": headers, "rows": rows},
    }
    return result(figures=figures, targets=targets, details=details)
