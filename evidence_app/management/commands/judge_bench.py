"""Measure a validator model on the labelled judge_bench cases.

    manage.py judge_bench                                # the current judge, held-out half
    manage.py judge_bench --model openai:gpt-4.1 --template terse --json var/judge.json
    manage.py judge_bench --split all --dataset fever
    manage.py judge_bench --cases-file my_cases.json     # your own labelled cases
    manage.py judge_bench --cases-file cases.jsonl       # JSON Lines (GET /api/v1/labelled-cases)
    manage.py judge_bench --case supported --case wrong_block-02
    manage.py judge_bench --from-reviews --since 2026-11-01 --queue audit --split all
    manage.py judge_bench --from-reviews --out var/team_cases.json  # export, do not run
    manage.py judge_bench --second-model openai:gpt-4.1  # a pair: disagreement -> a person
    manage.py judge_bench --target 0.05                  # certify at 5 % instead

Every case runs through the full validation path and is rolled back (nothing is
stored). Prints, per dataset and category, the false-accept and false-reject rates, the
accept rate of correct answers and the share sent to a person, the handbook cases'
confusion table, and the targets (MET or MISSED); ``--json`` writes every figure and
every case's verdict. The case format is in docs/validator.md. ``--from-reviews`` takes
the team's own labelled cases (decided tasks and judged audits, dataset ``team``) instead
of the shipped files, or beside the ``--cases-file`` files given.

At a certified risk: unless ``--no-certify`` or ``--split dev``, the dev half
is judged too (it is not in the report above) and, per dataset, the threshold certified
on its accepted verdicts at ``--target`` (default TRUST_TARGET_FALSE_ACCEPT) is printed
with the share of held-out correct answers it auto-accepts and the wrong ones it
auto-accepts.
"""

from __future__ import annotations

import json
from argparse import ArgumentTypeError
from datetime import date
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from evidence_app.autoaccept.bench import certified_figures, format_certified_table
from evidence_app.judge_bench import (
    BENCH_CASE_FILES,
    SPLITS,
    CaseResult,
    case_kind,
    case_split,
    load_cases,
    run_case,
)
from evidence_app.judge_bench.from_reviews import QUEUES, labelled_cases
from evidence_app.judge_bench.report import format_report, summarise
from evidence_app.validation.current_judge import current_judge
from evidence_app.validator.templates import get_template
from project.errors import DomainError
from project.llm.registry import resolve_model


class Command(BaseCommand):
    help = "Run the labelled judge_bench cases through the validator and report the targets."

    def add_arguments(self, parser: CommandParser) -> None:
        _judge_arguments(parser)
        _case_arguments(parser)
        _review_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        current_template, current_model = current_judge()
        model = options["model"] or current_model
        second_model = (options["second_model"] or "").strip()
        try:
            template = get_template(options["template"] or current_template)
        except DomainError as exc:
            raise CommandError(str(exc)) from exc
        if second_model:
            try:
                resolve_model(second_model)
            except DomainError as exc:
                raise CommandError(f"--second-model: {exc}") from exc
        split = options["split"] or ("all" if options["cases"] else "heldout")
        if options["from_reviews"] and options["out"]:
            team = labelled_cases(
                since=options["since"], until=options["until"], queue=options["queue"]
            )
            self._write_cases(Path(options["out"]), team)
            return
        cases = self._split_cases(options, split)
        if not cases:
            raise CommandError("no case matches --case, --split and --dataset")
        # The dev half the threshold is certified on, when only the held-out one is run.
        certify_on = (
            [] if options["no_certify"] or split != "heldout" else self._split_cases(options, "dev")
        )
        run = {"model": model, "template": template.name, "second_model": second_model}
        results = [self._run(case, run, options["quiet"]) for case in cases]
        dev_results = [self._run(case, run, options["quiet"]) for case in certify_on]
        summary = summarise(
            results,
            model=model,
            template=template.version,
            split=split,
            second_model=second_model,
        )
        self.stdout.write("")
        self.stdout.write(format_report(summary))
        if not options["no_certify"] and split != "dev":
            target = options["target"] or settings.TRUST_TARGET_FALSE_ACCEPT
            summary["certified"] = certified_figures(results + dev_results, target=target)
            self.stdout.write("")
            self.stdout.write("\n".join(format_certified_table(summary["certified"])))
        if options["json_path"]:
            path = Path(options["json_path"])
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(summary, indent=1, ensure_ascii=False), encoding="utf-8")
            self.stdout.write(f"\nwrote {path}")

    def _run(self, case: dict[str, Any], run: dict[str, str], quiet: bool) -> CaseResult:
        result = run_case(case, **run)
        if not quiet:
            mark = "ok  " if result.correct else "MISS"
            pair = f" pair {result.pair_got:<22}" if run["second_model"] else ""
            self.stdout.write(
                f"{mark} {result.id:<18} expected {result.expected:<22} "
                f"got {result.got:<22}{pair} ({result.seconds:.2f} s)"
            )
        return result

    def _split_cases(self, options: dict[str, Any], split: str) -> list[dict[str, Any]]:
        """The cases of one half (or both) by the options: the team's own with
        --from-reviews (beside any --cases-file), else the files."""
        if options["from_reviews"]:
            team = labelled_cases(
                since=options["since"], until=options["until"], queue=options["queue"]
            )
            extra = self._cases(options, split, default_files=())
            return extra + _select(team, options["cases"], split, options["datasets"])
        for flag in ("since", "until", "out"):
            if options[flag]:
                raise CommandError(f"--{flag} goes with --from-reviews")
        return self._cases(options, split, default_files=BENCH_CASE_FILES)

    def _cases(
        self, options: dict[str, Any], split: str, *, default_files: tuple[Path, ...]
    ) -> list[dict[str, Any]]:
        files = [Path(f) for f in options["cases_files"] or default_files]
        for path in files:
            if not path.exists():
                raise CommandError(f"no cases file {path}")
        if not files:
            return []
        lines = [path for path in files if _is_json_lines(path)]
        arrays = [path for path in files if path not in lines]
        cases = (
            load_cases(arrays, options["cases"], split=split, datasets=options["datasets"])
            if arrays
            else []
        )
        for path in lines:
            read = [_with_defaults(case) for case in _read_json_lines(path)]
            cases += _select(read, options["cases"], split, options["datasets"])
        return cases

    def _write_cases(self, path: Path, cases: list[dict[str, Any]]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(cases, indent=1, ensure_ascii=False), encoding="utf-8")
        labelled = sum(1 for c in cases if c["expected"]["claims"])
        self.stdout.write(
            f"wrote {len(cases)} labelled cases ({labelled} with claim labels) to {path}"
        )


def _is_json_lines(path: Path) -> bool:
    """A JSON Lines file (one case per line, as ``GET /api/v1/labelled-cases`` exports
    them) rather than one JSON array: its first character that is not blank is not
    ``[``."""
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                return not line.lstrip().startswith("[")
    return False


def _read_json_lines(path: Path) -> list[dict[str, Any]]:
    cases = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            case = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CommandError(f"{path}, line {number}: not a JSON case ({exc.msg})") from None
        if not isinstance(case, dict):
            raise CommandError(f"{path}, line {number}: a case is a JSON object")
        cases.append(case)
    return cases


def _with_defaults(case: dict[str, Any]) -> dict[str, Any]:
    """What ``load_cases`` fills in for a case read from a file."""
    case.setdefault("dataset", "handbook")
    case["split"] = case_split(case)
    case["kind"] = case_kind(case)
    return case


def _share(value: str) -> float:
    try:
        share = float(value)
    except ValueError:
        raise ArgumentTypeError(f"{value!r} is not a number") from None
    if not 0 < share < 0.5:
        raise ArgumentTypeError("a false-accept rate between 0 and 0.5, e.g. 0.02")
    return share


def _date(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ArgumentTypeError(f"{value!r} is not a date (YYYY-MM-DD)") from None


def _select(
    cases: list[dict[str, Any]], ids: list[str] | None, split: str, datasets: list[str] | None
) -> list[dict[str, Any]]:
    """The filters of ``load_cases`` (ids or categories, half, datasets) on cases in memory."""
    if ids:
        cases = [c for c in cases if c["id"] in set(ids) or c["category"] in set(ids)]
    if split != "all":
        cases = [c for c in cases if c["split"] == split]
    if datasets:
        cases = [c for c in cases if c["dataset"] in set(datasets)]
    return cases


def _judge_arguments(parser: CommandParser) -> None:
    """Which judge, and the target its threshold is certified at."""
    parser.add_argument(
        "--model", help="validator model (default: the current judge's, /ops/judge/)"
    )
    parser.add_argument(
        "--template", help="prompt template (default: the current judge's, /ops/judge/)"
    )
    parser.add_argument(
        "--second-model",
        default="",
        help="a second judge: report the pair's figures beside the single judge's",
    )
    parser.add_argument(
        "--target",
        type=_share,
        help="the false-accept rate to certify the threshold at (default: "
        "TRUST_TARGET_FALSE_ACCEPT)",
    )
    parser.add_argument(
        "--no-certify",
        action="store_true",
        help="skip the certified threshold (and the dev half it is certified on)",
    )


def _case_arguments(parser: CommandParser) -> None:
    """Which cases run, and how the report is written."""
    parser.add_argument(
        "--case",
        action="append",
        dest="cases",
        help="a case id or a category (repeatable; default: every case)",
    )
    parser.add_argument(
        "--cases-file",
        action="append",
        dest="cases_files",
        help="a cases file: a JSON array, or JSON Lines with one case per line "
        "(repeatable; default: the handbook and the public cases)",
    )
    parser.add_argument(
        "--split",
        choices=[*SPLITS, "all"],
        help="which half to run (default: heldout; all when --case is given)",
    )
    parser.add_argument(
        "--dataset", action="append", dest="datasets", help="only this dataset (repeatable)"
    )
    parser.add_argument("--json", dest="json_path", help="write the full report here")
    parser.add_argument("--quiet", action="store_true", help="no line per case")


def _review_arguments(parser: CommandParser) -> None:
    """The team's own labelled cases instead of the shipped ones."""
    parser.add_argument(
        "--from-reviews",
        action="store_true",
        help="the team's labelled cases: decided tasks and judged audits (dataset team)",
    )
    parser.add_argument(
        "--since", type=_date, help="with --from-reviews: decided on or after YYYY-MM-DD"
    )
    parser.add_argument(
        "--until", type=_date, help="with --from-reviews: decided on or before YYYY-MM-DD"
    )
    parser.add_argument(
        "--queue",
        choices=QUEUES,
        default="all",
        help="with --from-reviews: review decisions, audits or all (default)",
    )
    parser.add_argument(
        "--out", help="with --from-reviews: write the cases JSON here and stop (no run)"
    )
