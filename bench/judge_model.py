"""The embedded judge's entailment model on its own line: what it costs per pair and per
verdict, beside the same judge reading words only (``OFFLINE_JUDGE_READS_MEANING`` off),
measured in one run on this machine.

- per pair: onnxruntime on one thread, one pair a run, the p50 and p95 of CPU time over
  public pairs (FEVER evidence and claims from the certification cases);
- per verdict: an answer of 5 claims judged against 20 evidence items (each a tool result
  of a few sentences) by ``offline:judge``: CPU time with the model and without;
- memory: the process's resident memory before the model is loaded and after it has
  judged (``ru_maxrss`` is kept by the kernel; the difference is the model's).

Targets (issue 44): <= 15 ms per pair p50 on one core; <= 300 ms of CPU for the 5 x 20
verdict; <= +300 MB.
"""

from __future__ import annotations

import json
import resource
import time
from pathlib import Path
from typing import Any

from django.test import override_settings

from bench.common import Figure, Target, result, summary_ms
from evidence_app.judge_bench import CERTIFY_CASES_PATH
from evidence_app.offline_judge import entailment
from evidence_app.offline_judge.entailment import MODEL_DIR, EntailmentModel
from evidence_app.offline_judge.judge import judge
from evidence_app.validator.prompt import ANSWER_LABEL, REQUEST_LABEL
from project.untrusted import wrap_external

NAME = "judge_model"
PAIR_P50_MS = 15.0
VERDICT_CPU_MS = 300.0
MEMORY_MB = 300.0


def _pairs(n: int) -> list[tuple[str, str]]:
    cases = json.loads(Path(CERTIFY_CASES_PATH).read_text(encoding="utf-8"))[:n]
    return [(c["evidence"][0]["content"], c["answer"]) for c in cases]


def _prompt(claims: int, items: int) -> str:
    """A validator prompt: ``items`` tool results of public text, an answer of ``claims``
    claims drawn from them."""
    cases = json.loads(Path(CERTIFY_CASES_PATH).read_text(encoding="utf-8"))
    chosen = [c for c in cases if c["kind"] == "correct"][:items]
    blocks = [
        wrap_external(c["evidence"][0]["content"], label=f"R{i} read_document result")
        for i, c in enumerate(chosen, start=1)
    ]
    answer = " ".join(c["answer"].rstrip(".") + "." for c in chosen[:claims])
    request = "What do the sources say about " + ", ".join(
        c["request"].removeprefix("What does the source say about ").rstrip("?")
        for c in chosen[:claims]
    )
    return "\n\n".join(
        [
            wrap_external(request + "?", label=REQUEST_LABEL),
            *blocks,
            wrap_external(answer, label=ANSWER_LABEL),
        ]
    )


def _cpu_ms(fn: Any) -> float:
    start = time.process_time()
    fn()
    return (time.process_time() - start) * 1000.0


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run(pairs: int = 200, repeats: int = 5) -> dict[str, Any]:
    before = _rss_mb()
    model = EntailmentModel(MODEL_DIR, threads=1)
    samples = []
    for pair in _pairs(pairs):
        start = time.process_time()
        model.score([pair])
        samples.append(time.process_time() - start)
    per_pair = summary_ms(samples)
    prompt = _prompt(5, 20)
    with override_settings(OFFLINE_JUDGE_READS_MEANING=False):
        words = sorted(_cpu_ms(lambda: judge(prompt)) for _ in range(repeats))[repeats // 2]
    # A fresh model per repeat: its cache would make every repeat after the first free.
    with_model = []
    for _ in range(repeats):
        entailment.shared_model.cache_clear()
        entailment.shared_model()
        with_model.append(_cpu_ms(lambda: judge(prompt)))
    verdict = sorted(with_model)[repeats // 2]
    grown = _rss_mb() - before
    figures = [
        Figure(NAME, "CPU per pair, p50 (one thread)", per_pair["p50_ms"], "ms"),
        Figure(NAME, "CPU per pair, p95 (one thread)", per_pair["p95_ms"], "ms"),
        Figure(
            NAME,
            "verdict of 5 claims x 20 items, with the model",
            verdict,
            "ms",
            "the same verdict, words only",
            words,
        ),
        Figure(NAME, "resident memory added by the model", grown, "MB"),
    ]
    targets = [
        Target(
            NAME,
            f"CPU per pair p50 <= {PAIR_P50_MS:g} ms",
            f"{per_pair['p50_ms']:.1f} ms",
            per_pair["p50_ms"] <= PAIR_P50_MS,
        ),
        Target(
            NAME,
            f"5 claims x 20 items <= {VERDICT_CPU_MS:g} ms CPU",
            f"{verdict:.0f} ms",
            verdict <= VERDICT_CPU_MS,
        ),
        Target(NAME, f"memory <= +{MEMORY_MB:g} MB", f"+{grown:.0f} MB", grown <= MEMORY_MB),
    ]
    return result(
        figures=figures,
        targets=targets,
        details={"per_pair": per_pair, "words_ms": words, "with_model_ms": with_model},
    )
