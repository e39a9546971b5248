"""Importing a folder of Markdown/text files as knowledge documents."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from tasks_app.knowledge.models import KnowledgeDocument

SUFFIXES = {".md", ".markdown", ".txt"}


@dataclass
class ImportReport:
    created: int = 0
    updated: int = 0
    unchanged: int = 0


def _title_and_body(path: Path, text: str) -> tuple[str, str]:
    lines = text.splitlines()
    if lines and lines[0].startswith("# "):
        return lines[0][2:].strip(), "\n".join(lines[1:]).strip()
    return path.stem.replace("-", " ").replace("_", " ").strip().capitalize(), text.strip()


@transaction.atomic
def import_folder(folder: Path) -> ImportReport:
    """Create or update one document per file; the file name is the stable key."""
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder")
    report = ImportReport()
    for path in sorted(p for p in folder.rglob("*") if p.suffix.lower() in SUFFIXES):
        text = path.read_text(encoding="utf-8")
        title, body = _title_and_body(path, text)
        key = str(path.relative_to(folder))
        existing = KnowledgeDocument.objects.filter(source_key=key).first()
        if existing is None:
            KnowledgeDocument.objects.create(
                title=title, body=body, source_key=key, source_url=f"handbook://{key}"
            )
            report.created += 1
        elif existing.title != title or existing.body != body:
            existing.title, existing.body = title, body
            existing.save(update_fields=["title", "body", "updated_at"])
            report.updated += 1
        else:
            report.unchanged += 1
    return report
