"""judge_bench: measure a validator model on labelled cases before trusting it.

Each case (request, evidence, answer, expected verdict; format in docs/validator.md) is
stored as a throw-away task with one attempt, judged through the full validation path
(``attempt_judge``: packet, rendering, prompt template, the configured model, V11 parts,
citation check, reconciliation), then rolled back. Nothing stays in the database.

Case files: ``cases.json`` (``handbook``: written from the demo handbook by the team
that wrote the offline judge), ``public_cases.json`` (``fever``, ``halueval``: public
labelled data), ``conflict_cases.json`` (``conflict``: a quoted answer beside a source
that refutes or restates it, from FEVER-Symmetric; ``conflict.py``) and
``certify_cases.json`` (``fever_certify``: 1,200 FEVER cases per half, enough to certify
a threshold on, none of them trained on). Sources: PUBLIC_DATA.md. Every case belongs to
a development half (``dev``) or a held-out half (``heldout``); the report is made on the
held-out half unless asked otherwise. ``manage.py judge_bench`` runs every file
(``BENCH_CASE_FILES``); a candidate judge's gate only the first two.

The report, per dataset and category: the false-accept rate (a wrong or irrelevant
answer accepted; target 0), the false-reject rate (a correct answer rejected; target
<= 2 %), the accept rate of correct answers and the share sent to a person; and for the
handbook cases the older targets (verdicts as labelled, claims verified, injections).

With a second judge (``--second-model``), each case is judged by both on the same
prompt, and the pair's rule is applied as the validation does: both accept → accepted;
they disagree on accepted versus not → a person (``judges_disagree``); else the first
judge's verdict. The report then sets the pair's false accepts, false rejects and share
sent to a person beside the single judge's.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from evidence_app.judge_bench.report import pair_outcome
from evidence_app.validation.judge_calls import attempt_judge, attempt_judge_pair
from evidence_app.validator.citations import normalised
from tasks_app.records import Run, Task, ToolEvidence

CASES_PATH = Path(__file__).resolve().parent / "cases.json"
PUBLIC_CASES_PATH = Path(__file__).resolve().parent / "public_cases.json"
CONFLICT_CASES_PATH = Path(__file__).resolve().parent / "conflict_cases.json"
CERTIFY_CASES_PATH = Path(__file__).resolve().parent / "certify_cases.json"
DEFAULT_CASE_FILES = (CASES_PATH, PUBLIC_CASES_PATH)
# The gate's, conflict and the certification set.
BENCH_CASE_FILES = (*DEFAULT_CASE_FILES, CONFLICT_CASES_PATH, CERTIFY_CASES_PATH)
SPLITS = ("dev", "heldout")
HANDBOOK = Path(settings.BASE_DIR) / "demo" / "handbook"
FILLER_SENTENCE = "Routine paragraph about office procedures, forms and general matters. "

# A subset that runs in CI (tests/evidence_app/judge_bench/test_judge_bench.py): one case per
# category.
CI_SUBSET = (
    "supported-01",
    "supported-02",
    "contradicted-01",
    "missing-01",
    "irrelevant-01",
    "partial-01",
    "duplicated-01",
    "injection-01",
    "injection-05",
    "wrong_block-01",
    "wrong_block-02",
)


class _Rollback(Exception):
    """Raised to undo a case's rows once it is judged."""


@dataclass
class CaseResult:
    id: str
    category: str
    dataset: str
    split: str
    kind: str  # correct, wrong or irrelevant: what the answer is, by the case's label
    expected: str
    got: str
    model_status: str
    correct: bool
    claims_expected: int
    claims_correct: int
    accepted_all_verified: bool | None  # None unless accepted
    reconciliation: list[str] = field(default_factory=list)
    claims: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    error: str = ""
    # With a second judge: its verdict, and the pair's outcome ("" without one).
    second_got: str = ""
    pair_got: str = ""
    alone_got: str = ""  # with ``judge_alone``: the verdict on its first tool result alone
    # The verdict's score: the judge's confidence, which the certified threshold orders.
    score: float | None = None


def case_kind(case: dict[str, Any]) -> str:
    """``correct``, ``wrong`` or ``irrelevant``: the case's own ``kind``, else read from its
    expected verdict (handbook cases: an expected ``accepted`` is a correct answer)."""
    if case.get("kind"):
        return str(case["kind"])
    if case["expected"]["status"] == "accepted":
        return "correct"
    return "irrelevant" if case["category"] in ("irrelevant", "partial", "missing") else "wrong"


def case_split(case: dict[str, Any]) -> str:
    """The case's half; handbook cases without one alternate by their number."""
    if case.get("split"):
        return str(case["split"])
    number = int(str(case["id"]).rsplit("-", 1)[-1]) if str(case["id"])[-1:].isdigit() else 0
    return "dev" if number % 2 else "heldout"


def load_cases(
    path: Path | list[Path] | tuple[Path, ...] = CASES_PATH,
    ids: list[str] | None = None,
    *,
    split: str = "all",
    datasets: list[str] | None = None,
) -> list[dict[str, Any]]:
    """The cases of one or more files; ``ids`` keeps ids or categories, ``split`` one half
    (``dev``, ``heldout`` or ``all``), ``datasets`` some datasets."""
    paths = [path] if isinstance(path, Path) else list(path)
    cases: list[dict[str, Any]] = []
    for one in paths:
        for case in json.loads(Path(one).read_text(encoding="utf-8")):
            case.setdefault("dataset", "handbook")
            case["split"] = case_split(case)
            case["kind"] = case_kind(case)
            cases.append(case)
    if ids:
        wanted = set(ids)
        cases = [c for c in cases if c["id"] in wanted or c["category"] in wanted]
    if split != "all":
        cases = [c for c in cases if c["split"] == split]
    if datasets:
        cases = [c for c in cases if c["dataset"] in set(datasets)]
    return cases


def _document(file: str) -> tuple[str, str]:
    text = (HANDBOOK / file).read_text(encoding="utf-8")
    title = text.splitlines()[0].lstrip("# ").strip()
    body = "\n".join(text.splitlines()[1:]).strip()
    return title, f"Title: {title}\n\n{body}"


def evidence_items(case: dict[str, Any]) -> list[dict[str, str]]:
    """The tool results of a case: (title, content) of each read_document result."""
    items = []
    for item in case["evidence"]:
        if "document" in item:
            title, content = _document(item["document"])
            content += item.get("append", "")
        elif "filler" in item:
            spec = item["filler"]
            chars, fact = int(spec["chars"]), spec["fact"]
            at = int(chars * float(spec["at"]))
            body = (FILLER_SENTENCE * (chars // len(FILLER_SENTENCE) + 1))[:chars]
            cut = body.rfind(". ", 0, at) + 2
            title = item.get("title", "Long document")
            content = f"Title: {title}\n\n{body[:cut]}{fact} {body[cut:]}"
        else:
            title, content = item.get("title", ""), item["content"]
        items.append({"title": title, "content": content})
    return items


def _claims_correct(expected: list[dict[str, str]], got: list[dict[str, Any]]) -> int:
    """Expected claims whose text matches a judged claim with the expected verdict."""
    correct = 0
    for want in expected:
        text = normalised(want["text"]).rstrip(".")
        for claim in got:
            other = normalised(str(claim.get("text", ""))).rstrip(".")
            if other and (text in other or other in text):
                correct += claim.get("verdict") == want["verdict"]
                break
    return correct


def _fixture_task(case: dict[str, Any]) -> Task:
    """The case as a task with one completed attempt whose tool results are its evidence."""
    owner, _ = get_user_model().objects.get_or_create(username="judge-bench")
    task = Task.objects.create(
        owner=owner,
        title=f"judge_bench {case['id']}",
        request=case["request"],
        rules=case.get("rules", ""),
        final_answer=case["answer"],
        attempt_count=1,
    )
    run = Run.objects.create(
        task=task,
        attempt_index=1,
        model_name="judge-bench:fixture",
        status="completed",
        finish_reason="stop",
        output_text=case["answer"],
    )
    for sequence, item in enumerate(evidence_items(case)):
        ToolEvidence.objects.create(
            run=run,
            task=task,
            attempt_index=1,
            sequence=sequence,
            tool_name="read_document",
            tool_call_id=f"call_{sequence}",
            arguments={"document_id": sequence + 1},
            title=item["title"],
            content=item["content"],
        )
    return task


def _judged(
    case: dict[str, Any], *, model: str, template: str | None, second_model: str
) -> dict[str, Any]:
    """The judgement of the case (and the second judge's verdict), its rows rolled back."""
    outcome: dict[str, Any] = {}
    try:
        with transaction.atomic():
            task = _fixture_task(case)
            if second_model:
                judgement, second = attempt_judge_pair(
                    task=task,
                    attempt_index=1,
                    template=template,
                    model=model,
                    second_model=second_model,
                )
                outcome["second"] = second.result.status
            else:
                judgement = attempt_judge(
                    task=task, attempt_index=1, template=template, model=model
                )
            outcome["result"] = judgement.result.model_dump(mode="json")
            outcome["error"] = judgement.error
            raise _Rollback
    except _Rollback:
        pass
    return outcome


def _all_verified(claims: list[dict[str, Any]]) -> bool:
    return bool(claims) and all(
        any(c.get("verified") for c in claim["citations"]) for claim in claims
    )


def run_case(
    case: dict[str, Any], *, model: str, template: str | None, second_model: str = ""
) -> CaseResult:
    """Judge one case through the full validation path and compare with its label."""
    started = time.monotonic()
    outcome = _judged(case, model=model, template=template, second_model=second_model)
    result = outcome["result"]
    expected = case["expected"]
    claims = result.get("claims") or []
    return CaseResult(
        id=case["id"],
        category=case["category"],
        dataset=case.get("dataset", "handbook"),
        split=case_split(case),
        kind=case_kind(case),
        expected=expected["status"],
        got=result["status"],
        model_status=result.get("model_status") or result["status"],
        correct=result["status"] == expected["status"],
        claims_expected=len(expected.get("claims", [])),
        claims_correct=_claims_correct(expected.get("claims", []), claims),
        accepted_all_verified=(_all_verified(claims) if result["status"] == "accepted" else None),
        reconciliation=result.get("reconciliation") or [],
        claims=[
            {
                "text": c.get("text"),
                "verdict": c.get("verdict"),
                "verified": [cit.get("verified") for cit in c.get("citations", [])],
            }
            for c in claims
        ],
        seconds=round(time.monotonic() - started, 3),
        error=outcome.get("error", ""),
        second_got=outcome.get("second", ""),
        pair_got=pair_outcome(result["status"], outcome["second"]) if "second" in outcome else "",
        alone_got=_alone(case, model=model, template=template) if case.get("judge_alone") else "",
        score=result.get("score"),
    )


def _alone(case: dict[str, Any], *, model: str, template: str | None) -> str:
    """The verdict on the case with its first tool result only."""
    alone = {**case, "evidence": case["evidence"][:1], "judge_alone": False}
    return run_case(alone, model=model, template=template).got
