from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from tasks_app.knowledge.importer import import_folder


class Command(BaseCommand):
    help = "Import a folder of Markdown/text files as knowledge documents (re-import updates)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("folder", type=Path)

    def handle(self, *args: Any, folder: Path, **options: Any) -> None:
        try:
            report = import_folder(folder)
        except FileNotFoundError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"documents: {report.created} created, {report.updated} updated, "
            f"{report.unchanged} unchanged"
        )
