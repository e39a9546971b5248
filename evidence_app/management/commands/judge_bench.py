"""Measure a validator model on the labelled judge_bench cases (issue 12).

    manage.py judge_bench                                # the current judge, held-out half
    manage.py judge_bench --model openai:gpt-4.1 --template terse --json var/judge.json
    manage.py judge_bench --split all --dataset fever
    manage.py judge_bench --cases-file my_cases.json     # your own labelled cases
    manage.py judge_bench --case supported --case wrong_block-02
    manage.py judge_bench --from-reviews --since 2026-11-01 --queue audit --split all
    manage.py judge_bench --from-reviews --out var/team_cases.json  # export, do not run
    manage.py judge_bench --second-model openai:gpt-4.1  # a pair: disagreement -> a person

Every case runs through the full validation path and is rolled back (nothing is
stored). Prints, per dataset and category, the false-accept and false-reject rates, the
accept rate of correct answers and the share sent to a person, the handbook cases'
confusion table, and the targets (MET or MISSED); ``--json`` writes every figure and
every case's verdict. The case format is in docs/validator.md. ``--from-reviews`` takes
the team's own labelled cases (decided tasks and judged audits, dataset ``team``) instead
of the shipped files, or beside the ``--cases-file`` files given.
"""

from __future__ import annotations

import json
from argparse import ArgumentTypeError
from datetime import date
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evidence_app.judge_bench import (
    BENCH_CASE_FILES,
    SPLITS,
    format_report,
    load_cases,
    run_case,
    summarise,
)
from evidence_app.judge_bench.from_reviews import QUEUES, labelled_cases
from evidence_app.validation.current_judge import current_judge
from evidence_app.validator.templates import get_template
from project.errors import DomainError
from project.llm.registry import resolve_model


class Command(BaseCommand):
    help = "Run the labelled judge_bench cases through the validator and report the targets."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--model", help="validator model (default: the current judge's, /ops/judge/)"
        )
        parser.add_argument(
            "--template", help="prompt template (default: the current judge's, /ops/judge/)"
        )
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
            help="a cases JSON file (repeatable; default: the handbook and the public cases)",
        )
        parser.add_argument(
            "--split",
            choices=[*SPLITS, "all"],
            help="which half to run (default: heldout; all when --case is given)",
        )
        parser.add_argument(
            "--dataset", action="append", dest="datasets", help="only this dataset (repeatable)"
        )
        parser.add_argument(
            "--second-model",
            default="",
            help="a second judge: report the pair's figures beside the single judge's",
        )
        parser.add_argument("--json", dest="json_path", help="write the full report here")
        parser.add_argument("--quiet", action="store_true", help="no line per case")
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
        if options["from_reviews"]:
            team = labelled_cases(
                since=options["since"], until=options["until"], queue=options["queue"]
            )
            if options["out"]:
                self._write_cases(Path(options["out"]), team)
                return
            cases = self._cases(options, split, default_files=()) + _select(
                team, options["cases"], split, options["datasets"]
            )
        else:
            for flag in ("since", "until", "out"):
                if options[flag]:
                    raise CommandError(f"--{flag} goes with --from-reviews")
            cases = self._cases(options, split, default_files=BENCH_CASE_FILES)
        if not cases:
            raise CommandError("no case matches --case, --split and --dataset")
        results = []
        for case in cases:
            result = run_case(case, model=model, template=template.name, second_model=second_model)
            results.append(result)
            if not options["quiet"]:
                mark = "ok  " if result.correct else "MISS"
                pair = f" pair {result.pair_got:<22}" if second_model else ""
                self.stdout.write(
                    f"{mark} {result.id:<18} expected {result.expected:<22} "
                    f"got {result.got:<22}{pair} ({result.seconds:.2f} s)"
                )
        summary = summarise(
            results,
            model=model,
            template=template.version,
            split=split,
            second_model=second_model,
        )
        self.stdout.write("")
        self.stdout.write(format_report(summary))
        if options["json_path"]:
            path = Path(options["json_path"])
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(summary, indent=1, ensure_ascii=False), encoding="utf-8")
            self.stdout.write(f"\nwrote {path}")

    def _cases(
        self, options: dict[str, Any], split: str, *, default_files: tuple[Path, ...]
    ) -> list[dict[str, Any]]:
        files = [Path(f) for f in options["cases_files"] or default_files]
        for path in files:
            if not path.exists():
                raise CommandError(f"no cases file {path}")
        if not files:
            return []
        return load_cases(files, options["cases"], split=split, datasets=options["datasets"])

    def _write_cases(self, path: Path, cases: list[dict[str, Any]]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(cases, indent=1, ensure_ascii=False), encoding="utf-8")
        labelled = sum(1 for c in cases if c["expected"]["claims"])
        self.stdout.write(
            f"wrote {len(cases)} labelled cases ({labelled} with claim labels) to {path}"
        )


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
