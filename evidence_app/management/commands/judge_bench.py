"""Measure a validator model on the labelled judge_bench cases (issue 12).

    manage.py judge_bench                                # VALIDATOR_MODEL, default template
    manage.py judge_bench --model openai:gpt-4.1 --template terse --json var/judge.json
    manage.py judge_bench --case supported --case wrong_block-02

Every case runs through the full validation path and is rolled back (nothing is
stored). Prints a confusion table, per-category accuracy, the share of accepted verdicts
whose every claim has a verified citation and the issue's targets; ``--json`` writes
every figure and every case's verdict.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from evidence_app.judge_bench import CASES_PATH, format_report, load_cases, run_case, summarise
from evidence_app.validator.templates import DEFAULT_TEMPLATE, get_template
from project.errors import DomainError


class Command(BaseCommand):
    help = "Run the labelled judge_bench cases through the validator and report accuracy."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--model", help="validator model (default: VALIDATOR_MODEL)")
        parser.add_argument("--template", default=DEFAULT_TEMPLATE, help="prompt template")
        parser.add_argument(
            "--case",
            action="append",
            dest="cases",
            help="a case id or a category (repeatable; default: every case)",
        )
        parser.add_argument("--cases-file", default=str(CASES_PATH), help="cases JSON file")
        parser.add_argument("--json", dest="json_path", help="write the full report here")

    def handle(self, *args: Any, **options: Any) -> None:
        model = options["model"] or settings.VALIDATOR_MODEL
        try:
            template = get_template(options["template"])
        except DomainError as exc:
            raise CommandError(str(exc)) from exc
        cases = load_cases(Path(options["cases_file"]), options["cases"])
        if not cases:
            raise CommandError("no case matches --case")
        results = []
        for case in cases:
            result = run_case(case, model=model, template=template.name)
            results.append(result)
            mark = "ok  " if result.correct else "MISS"
            self.stdout.write(
                f"{mark} {result.id:<18} expected {result.expected:<22} got {result.got:<22} "
                f"({result.seconds:.2f} s)"
            )
        summary = summarise(results, model=model, template=template.version)
        self.stdout.write("")
        self.stdout.write(format_report(summary))
        if options["json_path"]:
            path = Path(options["json_path"])
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(summary, indent=1, ensure_ascii=False), encoding="utf-8")
            self.stdout.write(f"\nwrote {path}")
