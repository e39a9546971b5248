"""Validator prompt templates: files in ``prompts/``, versioned by name and
content hash. Editing a file changes its version, and every snapshot records the
version it was built with, so two decisions can be compared knowing their prompts.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from project.errors import InvalidInput

PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"
DEFAULT_TEMPLATE = "default"
# Hex digits of the content hash kept in the version string.
VERSION_HASH_CHARS = 12


@dataclass(frozen=True)
class TemplateVersion:
    name: str
    version: str  # "<name>@<first 12 hex of sha256(text)>"
    text: str


def _load(path: Path) -> TemplateVersion:
    text = path.read_text(encoding="utf-8")
    digest = hashlib.sha256(text.encode()).hexdigest()[:VERSION_HASH_CHARS]
    return TemplateVersion(name=path.stem, version=f"{path.stem}@{digest}", text=text)


def list_templates() -> list[TemplateVersion]:
    """Every template file, the default first. Read from disk each call (small files)."""
    found = [_load(p) for p in sorted(PROMPTS_DIR.glob("*.txt"))]
    return sorted(found, key=lambda t: (t.name != DEFAULT_TEMPLATE, t.name))


def get_template(name: str) -> TemplateVersion:
    """The template called ``name`` (a bare name, or a version string ``name@hash``)."""
    bare = name.split("@", 1)[0]
    for template in list_templates():
        if template.name == bare:
            return template
    known = ", ".join(t.name for t in list_templates())
    raise InvalidInput(f"unknown validator template '{name}' (known: {known})")
