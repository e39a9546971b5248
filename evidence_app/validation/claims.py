"""Claims of a stored verdict as a person reads them: a supported claim that
another verified source contradicts is *disputed*, with which source says what, and the
verdict's reason for review is one line. Pure functions of ``ValidationSnapshot.result``;
no query."""

from __future__ import annotations

import re
from typing import Any

from django.utils.text import Truncator

from evidence_app.validator.schema import stored_claim_disputed

# A figure with its unit when one follows ("46 EUR", "20 percent", "3 days", "1,750").
_FIGURE_WITH_UNIT_RE = re.compile(
    r"(?:\d[\d,.]*\d|\d)(?:\s?(?:%|€|\$|[A-Z]{3}\b|percent\b|per cent\b|days?\b|weeks?\b"
    r"|months?\b|years?\b|hours?\b|minutes?\b))?"
)
# How every page shows a claim's state: the answer's highlight, the claim list,
# the counts and the queue rows use these, in this order. The sign makes the state legible
# without colour; the words are what a screen reader reads.
CLAIM_STATES = (
    ("supported", "✓", "supported"),
    ("disputed", "⚠", "disputed"),
    ("contradicted", "✗", "contradicted"),
    ("unsupported", "?", "without support"),
)
QUOTE_CHARS = 90
ERROR_CHARS = 160


def figures(text: str) -> list[str]:
    """The figures of ``text`` in order, each with its unit when one follows."""
    return [m.group(0) for m in _FIGURE_WITH_UNIT_RE.finditer(text)]


def _citations(claim: dict[str, Any]) -> list[dict[str, Any]]:
    raw = claim.get("citations")
    return [
        {**c, "stance": c.get("stance") or "supports"}
        for c in (raw if isinstance(raw, list) else [])
        if isinstance(c, dict)
    ]


def _what(quote: str, others: set[str]) -> str:
    """What a source says, told by its figures that the other side does not state, or by
    its quote when the figures do not tell them apart."""
    own = [f for f in figures(quote) if f not in others]
    return ", ".join(own) if own else f'"{Truncator(quote).chars(QUOTE_CHARS)}"'


def dispute(citations: list[dict[str, Any]]) -> str:
    """``R2: 46 EUR; R3 says 38 EUR``: the sources that state a claim, then those that
    state otherwise (verified citations only)."""
    verified = [c for c in citations if c.get("verified")]
    pro = [c for c in verified if c["stance"] == "supports"]
    con = [c for c in verified if c["stance"] == "contradicts"]
    pro_figures = {f for c in pro for f in figures(str(c.get("quote") or ""))}
    con_figures = {f for c in con for f in figures(str(c.get("quote") or ""))}
    said = [f"{c.get('ref')}: {_what(str(c.get('quote') or ''), con_figures)}" for c in pro]
    said += [f"{c.get('ref')} says {_what(str(c.get('quote') or ''), pro_figures)}" for c in con]
    return "; ".join(said)


def shown_claims(claims: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each stored claim with ``shown`` (its verdict, or ``disputed``), its citations with
    their stance, and for a disputed claim the ``dispute`` line."""
    out = []
    for claim in claims:
        citations = _citations(claim)
        disputed = stored_claim_disputed(claim)
        out.append(
            {
                **claim,
                "id": str(claim.get("id") or ""),
                "verdict": str(claim.get("verdict") or "unsupported"),
                "shown": "disputed" if disputed else str(claim.get("verdict") or "unsupported"),
                "citations": citations,
                "dispute": dispute(citations) if disputed else "",
            }
        )
    return out


def shown_counts(claims: list[dict[str, Any]]) -> dict[str, int]:
    """How many of ``shown_claims`` are shown as each verdict."""
    counts = dict.fromkeys(("disputed", "supported", "contradicted", "unsupported"), 0)
    for claim in claims:
        counts[claim["shown"]] = counts.get(claim["shown"], 0) + 1
    return counts


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _disputed_reason(disputed: list[dict[str, Any]]) -> str:
    if len(disputed) > 1:
        return f"sources disagree about {len(disputed)} claims"
    claim = disputed[0]
    pro = [c for c in claim["citations"] if c.get("verified") and c["stance"] == "supports"]
    about = "the figure" if any(figures(str(c.get("quote") or "")) for c in pro) else "a claim"
    return f"sources disagree about {about} ({claim['dispute']})"


def _error_reason(result: dict[str, Any], error: str) -> str:
    issues = result.get("issues") if isinstance(result.get("issues"), list) else []
    first = (error or (str(issues[0]) if issues else "")).strip()
    line = first.splitlines()[0] if first else "no verdict"
    return f"validator error: {Truncator(line).chars(ERROR_CHARS)}"


def _claim_reasons(result: dict[str, Any]) -> list[str]:
    raw_claims = result.get("claims")
    claims = shown_claims(
        [c for c in (raw_claims if isinstance(raw_claims, list) else []) if isinstance(c, dict)]
    )
    counts = shown_counts(claims)
    parts = []
    if counts["disputed"]:
        parts.append(_disputed_reason([c for c in claims if c["shown"] == "disputed"]))
    if counts["contradicted"]:
        parts.append(f"{_count(counts['contradicted'], 'claim')} contradicted by the evidence")
    if counts["unsupported"]:
        parts.append(f"{_count(counts['unsupported'], 'claim')} unsupported")
    return parts


def review_reason(status: str, result: dict[str, Any], error: str = "") -> str:
    """Why a verdict is not an acceptance, in one line: "sources disagree about the
    figure (R2: 46 EUR; R3 says 38 EUR)", "2 claims unsupported", "validator error: …",
    "insufficient evidence". "" for an accepted verdict."""
    if status == "accepted":
        return ""
    if status == "validator_error":
        return _error_reason(result, error)
    parts = _claim_reasons(result)
    missing = result.get("missing_requirements")
    if not parts and isinstance(missing, list) and missing:
        parts.append(f"{_count(len(missing), 'requirement')} of the request not covered")
    if parts:
        return "; ".join(parts)
    category = str(result.get("failure_category") or "").replace("_", " ")
    if status == "rejected":
        return f"rejected: {category}" if category else "rejected"
    return "insufficient evidence"
