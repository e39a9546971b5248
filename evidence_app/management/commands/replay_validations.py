"""Replay the validator over a filtered set of tasks and compare.

    manage.py replay_validations --status needs_review --template terse
    manage.py replay_validations --task 12 --task 15 --model openai:gpt-4.1 --dry-run

For each matching task the latest original validation is replayed on its stored
evidence packet (the tasks are never changed). The estimated input size (characters
and ~tokens) is printed first; more than ``REPLAY_BULK_MAX_TASKS`` tasks are refused
unless ``--limit`` picks the newest N (at most the cap). Then every replay is printed
and a table compares original statuses with replay statuses.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from evidence_app.models import ValidationSnapshot, ValidationStatus
from evidence_app.validation.replay import replay_candidates, replay_estimate, replay_validation
from evidence_app.validator.templates import get_template
from project.errors import DomainError

STATUSES = list(ValidationStatus.values)


def comparison_table(pairs: list[tuple[str, str]]) -> str:
    """Rows: original status; columns: replay status; cells: counts."""
    counts = Counter(pairs)
    short = {
        s: s.replace("insufficient_evidence", "insufficient").replace("validator_", "v_")
        for s in STATUSES
    }
    width = max(len(s) for s in STATUSES) + 2
    header = (
        "original \\ replay".ljust(width)
        + "".join(short[s].rjust(14) for s in STATUSES)
        + "total".rjust(8)
    )
    lines = [header, "-" * len(header)]
    for original in STATUSES:
        row = [counts[(original, replay)] for replay in STATUSES]
        lines.append(
            original.ljust(width) + "".join(str(n).rjust(14) for n in row) + str(sum(row)).rjust(8)
        )
    same = sum(n for (a, b), n in counts.items() if a == b)
    lines.append(f"same status: {same} of {len(pairs)}; changed: {len(pairs) - same}")
    return "\n".join(lines)


class Command(BaseCommand):
    help = "Replay validation on stored evidence for a filtered set of tasks and compare statuses."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--task", type=int, action="append", dest="task_ids", help="task id (repeatable)"
        )
        parser.add_argument(
            "--status", action="append", dest="task_statuses", help="task status (repeatable)"
        )
        parser.add_argument(
            "--validator-status",
            action="append",
            dest="validator_statuses",
            choices=STATUSES,
            help="status of the original validation (repeatable)",
        )
        parser.add_argument("--since", help="only validations since this date (YYYY-MM-DD)")
        parser.add_argument(
            "--template", help="template name for the replay (default: the original's)"
        )
        parser.add_argument(
            "--model", help="validator model for the replay (default: the original's)"
        )
        parser.add_argument("--limit", type=int, help="replay only the newest N matching tasks")
        parser.add_argument("--dry-run", action="store_true", help="print the estimate and stop")

    def handle(self, *args: Any, **options: Any) -> None:
        candidates = self._candidates(options)
        if not candidates:
            self.stdout.write("No validations match the filter.")
            return
        estimate = replay_estimate(
            candidates, template=options["template"], model=options["model"] or None
        )
        self.stdout.write(
            f"Replaying {estimate.tasks} task(s): estimated input "
            f"{estimate.input_chars:,} characters (~{estimate.input_tokens:,} tokens, "
            f"input cost {estimate.cost})"
            + (f", template {options['template']}" if options["template"] else "")
            + (f", model {options['model']}" if options["model"] else "")
            + "."
        )
        if options["dry_run"]:
            self.stdout.write("Dry run: nothing replayed.")
            return
        pairs: list[tuple[str, str]] = []
        for original in candidates:
            replay = replay_validation(
                snapshot=original, template=options["template"], model=options["model"]
            )
            pairs.append((original.status, replay.status))
            marker = "=" if original.status == replay.status else "≠"
            self.stdout.write(
                f"task {original.task_id} attempt {original.attempt_index}: "
                f"{original.status} {marker} {replay.status}  "
                f"({original.template_version} {original.model_name} -> "
                f"{replay.template_version} {replay.model_name}; replay snapshot {replay.pk})"
            )
        self.stdout.write("")
        self.stdout.write(comparison_table(pairs))

    def _candidates(self, options: dict[str, Any]) -> list[ValidationSnapshot]:
        """The originals the options select, checked against REPLAY_BULK_MAX_TASKS."""
        cap = settings.REPLAY_BULK_MAX_TASKS
        since = None
        if options["since"]:
            try:
                since = timezone.make_aware(datetime.fromisoformat(options["since"]))
            except ValueError as exc:
                raise CommandError(f"--since: {exc}") from None
        if options["template"]:
            try:
                get_template(options["template"])
            except DomainError as exc:
                raise CommandError(exc.message) from None
        candidates = replay_candidates(
            task_ids=options["task_ids"],
            task_statuses=options["task_statuses"],
            validator_statuses=options["validator_statuses"],
            since=since,
        )
        limit = options["limit"]
        if limit is not None:
            if limit < 1 or limit > cap:
                raise CommandError(f"--limit must be between 1 and REPLAY_BULK_MAX_TASKS ({cap}).")
            return candidates[:limit]
        if len(candidates) > cap:
            raise CommandError(
                f"{len(candidates)} tasks match, more than REPLAY_BULK_MAX_TASKS ({cap}). "
                "Narrow the filter or pass --limit."
            )
        return candidates
