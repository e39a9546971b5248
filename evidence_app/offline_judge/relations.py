"""Relations ``offline:judge`` computes from the years the evidence gives: "A was born N
years after B", "A is N years older than B" and "A was founded in YEAR"."""

from __future__ import annotations

import re

from evidence_app.offline_judge.wording import NUMBER_WORDS, Finding, Sentence

# Relations computed from years

_EVENTS = "born|founded|established|formed|released|published|died|opened|created"
_YEAR = r"\b(1\d{3}|20\d{2})\b"
_RELATIVE_RE = re.compile(
    rf"^(?P<a>.+?) (?:was|were|is) (?P<event>{_EVENTS}) (?P<n>\w+) years? "
    r"(?P<rel>after|before|later than|earlier than) (?P<b>.+?)\.?$",
    re.IGNORECASE,
)
_AGE_RE = re.compile(
    r"^(?P<a>.+?) (?:is|was) (?P<n>\w+) years? (?P<rel>older|younger) than (?P<b>.+?)\.?$",
    re.IGNORECASE,
)
_DATED_RE = re.compile(
    rf"^(?P<a>.+?) (?:was|were) (?P<event>{_EVENTS}) in (?P<year>1\d{{3}}|20\d{{2}})\.?$",
    re.IGNORECASE,
)


def _count(word: str) -> int | None:
    low = word.lower()
    if low in ("a", "an"):
        return 1
    if low.isdigit():
        return int(low)
    value = NUMBER_WORDS.get(low)
    return int(value) if value is not None else None


def year_of(entity: str, event: str, evidence: list[Sentence]) -> tuple[int, Sentence] | None:
    """The year the evidence gives for ``entity``'s ``event``: "A (born 4 May 1950)",
    "A (1950–2001)" for born/died, or "A … founded in 1990"."""
    wanted = entity.strip().lower()
    event = event.lower()
    for s in evidence:
        at = s.text.lower().find(wanted)
        if at < 0 or not wanted:
            continue
        rest = s.text[at + len(wanted) :]
        paren = re.match(r"\s*\(([^)]*)\)", rest)
        if paren and event in ("born", "died"):
            years = re.findall(_YEAR, paren.group(1))
            if years and event == "born" and "died" not in paren.group(1).split(years[0])[0]:
                return int(years[0]), s
            if len(years) >= 2 and event == "died":
                return int(years[1]), s
        stated = re.search(rf"\b{event}\b[^.;()]*?{_YEAR}", rest, re.IGNORECASE)
        if stated:
            return int(stated.group(1)), s
    return None


def _relation_years(claim_text: str) -> tuple[str, str, str, int, str] | None:
    """(a, b, event, years, direction) of a relative claim, direction "+" when a is later."""
    m = _RELATIVE_RE.match(claim_text.strip())
    if m:
        later = m.group("rel").lower() in ("after", "later than")
        n = _count(m.group("n"))
        return (
            (m.group("a"), m.group("b"), m.group("event"), n, "+" if later else "-") if n else None
        )
    m = _AGE_RE.match(claim_text.strip())
    if m:
        n = _count(m.group("n"))
        older = m.group("rel").lower() == "older"  # born earlier
        return (m.group("a"), m.group("b"), "born", n, "-" if older else "+") if n else None
    return None


def compute_relation(claim_text: str, evidence: list[Sentence]) -> Finding | None:
    """A relative or dated claim checked against the years the evidence gives; ``None``
    when the claim is none or a year is missing. A mismatch goes to a person."""
    dated = _DATED_RE.match(claim_text.strip())
    if dated:
        found = year_of(dated.group("a"), dated.group("event"), evidence)
        if found is None:
            return None
        year, s = found
        if year == int(dated.group("year")):
            return Finding("supported", [s], note=f"The evidence gives {year}.")
        return Finding("unsupported", note=f"The evidence gives {year}, not {dated.group('year')}.")
    relation = _relation_years(claim_text)
    if relation is None:
        return None
    a, b, event, n, direction = relation
    year_a, year_b = year_of(a, event, evidence), year_of(b, event, evidence)
    if year_a is None or year_b is None:
        return None
    gap = year_a[0] - year_b[0]
    wanted = n if direction == "+" else -n
    computed = f"Computed from the evidence: {a} {year_a[0]}, {b} {year_b[0]}."
    if gap == wanted:
        return Finding("supported", [year_a[1], year_b[1]], note=computed)
    return Finding("unsupported", note=computed + " That does not match the claim.")
