"""Line diffs for reading in a page: the template escapes every line."""

from __future__ import annotations

import difflib

# Diffs are for reading: past this many output lines the page says so and points to the
# downloads, which are always complete.
DIFF_MAX_LINES = 5000


def diff_lines(a: str, b: str, *, label_a: str, label_b: str) -> tuple[list[tuple[str, str]], bool]:
    """Unified diff of two texts as (css class, line) pairs and whether it was capped."""
    out: list[tuple[str, str]] = []
    for line in difflib.unified_diff(
        a.splitlines(), b.splitlines(), fromfile=label_a, tofile=label_b, lineterm="", n=3
    ):
        if line.startswith(("+++", "---", "@@")):
            cls = "hunk"
        elif line.startswith("+"):
            cls = "add"
        elif line.startswith("-"):
            cls = "del"
        else:
            cls = "ctx"
        out.append((cls, line))
        if len(out) >= DIFF_MAX_LINES:
            return out, True
    return out, False
