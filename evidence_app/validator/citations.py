"""Mechanical verification of the validator's citations.

The validator cites each claim with ``{ref, quote}``: ``ref`` is the ``R<n>`` label of a
tool result in the rendered evidence, ``quote`` text copied from it. The application
checks every citation itself, after parsing and before any transition:

- ``ref`` must name a tool result of this attempt (the labels ``render_packet`` gave);
- ``quote`` must occur in that result's full stored content after normalising both
  sides the same way: case, whitespace runs, typographic quotes and dashes. Nothing
  fuzzier: a quote with one other word is not found.

For every citation it stores ``verified``, the evidence id and the character offsets
``[start, end)`` of the quote in the stored content (``content[start:end]`` is the
quoted text as stored), or the reason it is unverified.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from evidence_app.packets.packet_text import CitableResult
from evidence_app.validator.schema import Citation, ValidationResult
from project.untrusted import OPENERS

# A quote shorter than this (after normalising) proves nothing: "a" occurs everywhere.
MIN_QUOTE_CHARS = 4

_REF_RE = re.compile(r"^\[?\s*R\s*(\d+)\s*\]?$", re.IGNORECASE)
_QUOTE_CHARS = {
    "\u2018": "'",
    "\u2019": "'",
    "\u201a": "'",
    "\u201b": "'",
    "\u2032": "'",
    "\u00b4": "'",
    "`": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u201e": '"',
    "\u201f": '"',
    "\u2033": '"',
    "\u00ab": '"',
    "\u00bb": '"',
}
_DASH_CHARS = dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d", "-")
_CHAR_MAP = {**_QUOTE_CHARS, **_DASH_CHARS}


_WORD_RUN = re.compile(r"\S+")


_TRANSLATION = str.maketrans(_CHAR_MAP)
# The one character whose lowercase depends on its neighbours in str.lower() (a final
# sigma), where lowercasing the whole text differs from lowercasing each character.
_CONTEXT_LOWER = "\u03a3"


def normalise(text: str) -> tuple[str, list[int]]:
    """``text`` normalised for matching, and for each character of the result the index
    of the character of ``text`` it came from. Whitespace runs become one space;
    leading and trailing whitespace is dropped."""
    if _CONTEXT_LOWER not in text:
        lowered = text.translate(_TRANSLATION).lower()
        if len(lowered) == len(text):
            # The common case, without a Python loop over characters: every
            # character maps to one character at the same offset.
            words: list[str] = []
            origin: list[int] = []
            for match in _WORD_RUN.finditer(text):
                start, end = match.span()
                if words:
                    origin.append(start - 1)  # the space stands for the run's last character
                origin.extend(range(start, end))
                words.append(lowered[start:end])
            return " ".join(words), origin
    return _normalise_chars(text)


def _normalise_chars(text: str) -> tuple[str, list[int]]:
    """``normalise`` character by character (any text)."""
    out: list[str] = []
    origin: list[int] = []
    pending_space = False
    for index, char in enumerate(text):
        if char.isspace():
            pending_space = bool(out)
            continue
        if pending_space:
            out.append(" ")
            origin.append(index - 1)
            pending_space = False
        mapped = _CHAR_MAP.get(char, char)
        lowered = mapped.lower()
        # Lowercasing can lengthen a character ("İ" -> "i̇"): every piece maps back to it.
        for piece in lowered:
            out.append(piece)
            origin.append(index)
    return "".join(out), origin


def normalised(text: str) -> str:
    return normalise(text)[0]


# What a "&lt;" in a quote stands for: itself, or a "<" neutralise replaced.
_NEUTRALISED = "(?:&lt;|[" + re.escape(OPENERS) + "])"


@dataclass(frozen=True)
class Span:
    start: int
    end: int


def find_quote(quote: str, content: str) -> Span | None:
    """Where ``quote`` occurs in ``content`` (first occurrence, after normalising), as
    offsets in ``content``; None when it does not occur or is too short to mean much.

    The validator saw wrapper-like tags in tool output neutralised (their ``<``, or the
    "<"-like character, shown as ``&lt;``), so a ``&lt;`` in a quote also matches
    any of those characters."""
    needle = normalised(quote)
    if len(needle) < MIN_QUOTE_CHARS:
        return None
    haystack, origin = normalise(content)
    pattern = re.compile(_NEUTRALISED.join(re.escape(part) for part in needle.split("&lt;")))
    match = pattern.search(haystack)
    while match is not None:
        at, end = match.span()
        # A match must not start or end inside one character's lowercase expansion.
        splits = (at > 0 and origin[at - 1] == origin[at]) or (
            end < len(origin) and origin[end] == origin[end - 1]
        )
        if not splits:
            return Span(start=origin[at], end=origin[end - 1] + 1)
        match = pattern.search(haystack, at + 1)
    return None


def ref_label(ref: str) -> str | None:
    """``"R3"`` for ``"R3"``, ``"[R3]"``, ``"r 3"``; None when it is no ``R<n>`` label."""
    match = _REF_RE.match(ref.strip())
    return f"R{int(match.group(1))}" if match else None


def verify_citation(citation: Citation, results: dict[str, CitableResult]) -> Citation:
    """The citation with ``verified``, evidence id, offsets and problem set by the check."""
    label = ref_label(citation.ref)
    fields: dict[str, object] = {
        "verified": False,
        "evidence_id": None,
        "start": None,
        "end": None,
    }
    target = results.get(label) if label else None
    if target is None:
        fields["problem"] = (
            f"citation {citation.ref or '(no ref)'} names no tool result of this attempt"
        )
        return citation.model_copy(update=fields)
    fields["evidence_id"] = target.evidence_id
    span = find_quote(citation.quote, target.content)
    if span is None:
        elsewhere = [
            other.label
            for other in results.values()
            if other.label != label and find_quote(citation.quote, other.content)
        ]
        hint = f" (it occurs in {', '.join(elsewhere[:3])})" if elsewhere else ""
        fields["problem"] = (
            f"citation {label}: quote is too short to verify"
            if len(normalised(citation.quote)) < MIN_QUOTE_CHARS
            else f"citation {label} not found in the evidence: quote does not occur in "
            f"{label}{hint}"
        )
        return citation.model_copy(update=fields)
    fields.update(verified=True, start=span.start, end=span.end, problem="")
    return citation.model_copy(update=fields)


def verify_result(result: ValidationResult, results: dict[str, CitableResult]) -> ValidationResult:
    """The result with every citation of every claim checked against the evidence."""
    if not result.claims:
        return result
    claims = [
        claim.model_copy(
            update={"citations": [verify_citation(c, results) for c in claim.citations]}
        )
        for claim in result.claims
    ]
    return result.model_copy(update={"claims": claims})
