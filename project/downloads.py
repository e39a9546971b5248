"""Download headers built only from safe characters.

A file name may carry parts people or agents chose (a tool's name); those parts are
reduced to ``[A-Za-z0-9_.-]`` before Django's ``content_disposition_header`` builds the
header, so quotes, ``filename*=`` and CR/LF never reach it.
"""

from __future__ import annotations

import re

from django.http import HttpResponse
from django.utils.http import content_disposition_header

UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
MAX_PART = 64


def safe_filename_part(text: str) -> str:
    """``text`` with every run of other characters replaced by ``_``, cut to 64
    characters, leading dots removed."""
    return UNSAFE.sub("_", text)[:MAX_PART].lstrip(".")


def set_attachment(response: HttpResponse, *parts: object, suffix: str = ".txt") -> None:
    """Mark ``response`` as a download named by ``parts`` joined with ``-``."""
    safe = [safe_filename_part(str(part)) for part in parts]
    name = "-".join(part for part in safe if part) + suffix
    header = content_disposition_header(as_attachment=True, filename=name)
    if header is not None:
        response["Content-Disposition"] = header
