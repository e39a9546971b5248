"""Reading client JSON with bounds: what a client sends is parsed only into values every
part of the system can store and walk again.

- ``NaN``, ``Infinity`` and ``-Infinity`` are refused: JSON has no such numbers,
  PostgreSQL's jsonb refuses them, and a client that sends one means a number it could
  not compute.
- A lone UTF-16 surrogate (``"\\ud800"`` without its pair) is refused: it cannot be
  encoded as UTF-8, so no database, log line or webhook could carry it.
- Nesting deeper than ``max_depth`` is refused, before any recursive code (pydantic,
  the JSON encoder, the templates) walks it.

``UnsafeJson`` names the field (a dotted path) and says what is wrong with it. The
fast path costs one ``json.loads``: the walk only runs when the raw text could hold a
surrogate escape or nests deeper than allowed.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

# Python's own parser stops near 1,000 levels with RecursionError; this is far below it
# and far above any real document's nesting.
DEFAULT_MAX_DEPTH = 64
# What makes the walk necessary: a surrogate escape, or an exponent large enough to
# overflow a float to infinity (1e999).
_NEEDS_WALK = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}|[eE]\+?[0-9]{3,}")


class UnsafeJson(ValueError):
    """Parsed JSON that may not be kept: ``field`` is where, ``problem`` what."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


class _NonFinite(ValueError):
    pass


def _refuse_constant(token: str) -> Any:
    raise _NonFinite(token)


def _mark_constant(token: str) -> Any:
    return _Constant(token)


class _Constant(str):
    """A NaN/Infinity token, kept to find where it was."""


def has_lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _path(parts: list[str]) -> str:
    shown = parts if len(parts) <= 12 else [*parts[:12], "..."]
    return ".".join(shown) or "body"


def find_problem(value: Any, max_depth: int = DEFAULT_MAX_DEPTH) -> UnsafeJson | None:
    """The first thing in parsed JSON that may not be kept, or None (iterative: a deep
    value cannot exhaust the stack here)."""
    stack: list[tuple[Any, list[str]]] = [(value, [])]
    while stack:
        node, parts = stack.pop()
        if len(parts) > max_depth:
            return UnsafeJson(_path(parts[:max_depth]), f"nested deeper than {max_depth} levels")
        if isinstance(node, _Constant):
            return UnsafeJson(_path(parts), f"{node} is not a JSON number; send a finite number")
        if isinstance(node, float) and not math.isfinite(node):
            return UnsafeJson(_path(parts), "not a finite number; send a finite number")
        if isinstance(node, str):
            if has_lone_surrogate(node):
                return UnsafeJson(_path(parts), "contains a lone UTF-16 surrogate (invalid text)")
        elif isinstance(node, dict):
            for key, item in node.items():
                if has_lone_surrogate(key):
                    return UnsafeJson(
                        _path([*parts, ascii(key)]), "a key contains a lone UTF-16 surrogate"
                    )
                stack.append((item, [*parts, key]))
        elif isinstance(node, list):
            stack.extend((item, [*parts, str(index)]) for index, item in enumerate(node))
    return None


def _could_nest_deeper(raw: bytes, max_depth: int) -> bool:
    return raw.count(b"[") + raw.count(b"{") > max_depth


def loads(raw: bytes | str, *, max_depth: int = DEFAULT_MAX_DEPTH) -> Any:
    """``json.loads`` that raises ``UnsafeJson`` for what may not be kept (see the module
    docstring) and ``ValueError`` for text that is not JSON."""
    try:
        value = json.loads(raw, parse_constant=_refuse_constant)
    except _NonFinite:
        # Rare: parse again keeping the tokens, to name the field.
        value = json.loads(raw, parse_constant=_mark_constant)
        problem = find_problem(value, max_depth=10**9)
        raise problem or UnsafeJson("body", "NaN or Infinity is not a JSON number") from None
    except RecursionError:
        raise UnsafeJson("body", f"nested deeper than {max_depth} levels") from None
    encoded = raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass")
    if (
        _NEEDS_WALK.search(encoded)
        or _could_nest_deeper(encoded, max_depth)
        or (isinstance(raw, str) and has_lone_surrogate(raw))
    ):
        problem = find_problem(value, max_depth)
        if problem is not None:
            raise problem
    return value


def loads_or_text(text: str, *, max_depth: int = DEFAULT_MAX_DEPTH, max_chars: int) -> Any:
    """A string that may hold JSON (an OTLP attribute): the value it holds when it is
    safe JSON no longer than ``max_chars``, else the string itself."""
    if len(text) > max_chars:
        return text
    try:
        return loads(text, max_depth=max_depth)
    except ValueError:
        return text
