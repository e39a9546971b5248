"""Amounts in a sentence, for the embedded judge's disputes: figures in digits or number
words with their kind (a currency, a unit, a year, a day of the month, an ordinal), one
amount however it is spelled ("120 EUR", "EUR 120", "€120" and "120 euros" are one), and
whether a sentence gives another amount of a kind the claim gives."""

from __future__ import annotations

import re
from dataclasses import dataclass

from evidence_app.offline_judge.wording import (
    FUNCTION_WORDS,
    LETTER,
    NUMBER_WORDS,
    ROUNDING,
    stem,
)

_TENS = {
    w: 10 * (i + 2)
    for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split())
}


_SCALES = {"hundred": 100, "thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}


ORDINAL_WORDS = {
    w: v
    for v, w in enumerate(
        "first second third fourth fifth sixth seventh eighth ninth tenth".split(), start=1
    )
}


_MONTHS = frozenset(
    """january february march april may june july august september october november
    december jan feb mar apr jun jul aug sep sept oct nov dec""".split()
)


# Months written out that name nothing else ("May" may be a verb).
FULL_MONTHS = frozenset(
    """january february march april june july august september october november
    december""".split()
)


CALENDAR = _MONTHS | frozenset("monday tuesday wednesday thursday friday saturday sunday".split())


# Currency and unit spellings that name the same thing.
UNITS = {
    "€": "eur", "eur": "eur", "euro": "eur", "euros": "eur",
    "$": "usd", "usd": "usd", "dollar": "usd", "dollars": "usd",
    "£": "gbp", "gbp": "gbp", "pound": "gbp", "pounds": "gbp",
    "chf": "chf", "franc": "chf", "francs": "chf",
    "%": "percent", "percent": "percent", "pct": "percent",
}  # fmt: skip


_CURRENCY_FIRST = frozenset({"€", "$", "£", "eur", "usd", "gbp", "chf"})


# A code of letters and digits ("SEV1", "P2", "S4") names something and a telephone
# number ("+49 40 5550 1910") reaches someone: each is read as one word, no amount.
_QUANTITY_TOKEN_RE = re.compile(
    rf"\+\d[\d ()./-]*\d|{LETTER}+\d\w*|\d[\d,.]*\d|\d|[€$£%]|{LETTER}+"
)


_COMPARING = frozenset(
    """more less fewer over under least most nearly almost about approximately around
    roughly up above below maximum minimum than""".split()
)


@dataclass(frozen=True)
class Quantity:
    value: float
    kind: str  # "eur", "year", "day", a unit's stem ("night", "employe"), or "number"
    compared: bool  # "more than", "at most" … before it: a bound, not the amount


def _number_run(words: list[str], i: int) -> tuple[float, int] | None:
    """The value of the number words starting at ``words[i]`` and how many they are
    ("one hundred and twenty" is 120)."""
    total, current, j = 0.0, 0.0, i
    while j < len(words):
        w = words[j]
        if w in NUMBER_WORDS:
            current += float(NUMBER_WORDS[w])
        elif w in _TENS:
            current += _TENS[w]
        elif w in _SCALES and j > i:
            scale = _SCALES[w]
            total, current = (
                (total + current * scale, 0.0) if scale >= 1000 else (total, current * scale)
            )
        elif (
            w == "and"
            and j > i
            and j + 1 < len(words)
            and words[j + 1] in {**NUMBER_WORDS, **_TENS}
        ):
            pass
        else:
            break
        j += 1
    return (total + current, j - i) if j > i else None


def _digits(word: str) -> float | None:
    try:
        return float(word.replace(",", ""))
    except ValueError:
        return None


def _read_number(words: list[str], i: int) -> tuple[float, int] | None:
    value = _digits(words[i]) if words[i][:1].isdigit() else None
    if value is None:
        return _number_run(words, i)
    if i + 1 < len(words) and words[i + 1] in ("million", "billion", "thousand"):
        return value * _SCALES[words[i + 1]], 2
    return value, 1


def _kind(words: list[str], i: int, end: int, value: float) -> str:
    """What the number at ``words[i:end]`` counts: the currency before it, the unit after
    it, a day after a month, else a year (1000-2100) or a plain number."""
    before = words[i - 1] if i > 0 else ""
    after = words[end] if end < len(words) else ""
    if after == "s" or (words[i].endswith("s") and words[i][:1].isdigit()):
        return "decade"  # "the 2000s" holds its years
    if before in _CURRENCY_FIRST:
        return UNITS[before]
    year = value.is_integer() and 1000 <= value <= 2100
    if year and (before in _MONTHS or after not in UNITS):
        return "year"
    if before in _MONTHS:
        return "day"
    unit = _unit_after(words, end)
    # A bare number counts what the word before it names ("number 6", "Article 5"); "one
    # of" or "GLASSWING-2719" compare with nothing else.
    return f"number:{before}" if unit == "number" else unit


def _unit_after(words: list[str], end: int) -> str:
    """The unit named after a number ending at ``words[end]``: "EUR", "night", a day of a
    month ("on the 2nd", "4 May"), else "number"."""
    after = words[end] if end < len(words) else ""
    if after in ("st", "nd", "rd", "th"):
        after = words[end + 1] if end + 1 < len(words) else ""
        if not after or after in FUNCTION_WORDS or after in _MONTHS:
            return "day"  # "on the 2nd", "the 1st of May"
    if after in UNITS:
        return UNITS[after]
    if after in _MONTHS:
        return "day"
    if after and after not in FUNCTION_WORDS and not after[:1].isdigit():
        return stem(after)
    return "number"  # refined by the word before it (``_kind``)


def quantities(text: str) -> list[Quantity]:
    """The amounts, years and counts a sentence states, with what each counts."""
    words = [w.lower() for w in _QUANTITY_TOKEN_RE.findall(text)]
    out: list[Quantity] = []
    i = 0
    while i < len(words):
        if words[i] in ORDINAL_WORDS:
            # An ordinal counts what follows it: "the first server" is no "third floor".
            following = stem(words[i + 1]) if i + 1 < len(words) else ""
            out.append(Quantity(float(ORDINAL_WORDS[words[i]]), f"ordinal:{following}", False))
            i += 1
            continue
        read = _read_number(words, i) if words[i] != "and" else None
        if read is None:
            i += 1
            continue
        value, length = read
        end = i + length
        compared = any(w in _COMPARING for w in words[max(0, i - 3) : i])
        compared = compared or (
            i > 1 and words[i - 1] in _CURRENCY_FIRST and words[i - 2] in _COMPARING
        )
        out.append(Quantity(value, _kind(words, i, end, value), compared))
        i = end
    return out


def same_amount(a: float, b: float, kind: str) -> bool:
    if a == b:
        return True
    if kind in ("year", "day"):
        return False
    return abs(a - b) <= ROUNDING * max(abs(a), abs(b))


def same_quantity(a: Quantity, b: Quantity) -> bool:
    """The same amount of the same kind ("120 EUR" and "EUR 120")."""
    return a.kind == b.kind and same_amount(a.value, b.value, a.kind)


def other_figures(claim: list[Quantity], other: list[Quantity]) -> bool:
    """The sentence gives an amount of a kind the claim gives that is none of the claim's
    ("150 EUR" against "120 EUR"; "$160 million" restates one of "$181 million on a
    budget of $160 million", "lasts 23 days" does not make "begins on 20 November" agree
    with "begins on 17 November")."""
    stated = [q for q in claim if not q.compared]
    # Where it states the claim's amount of a kind too, its other amounts of that kind are
    # about something else; another kind still counts ("August 24, 1964" against
    # "August 14, 1964").
    repeated = {q.kind for q in stated for t in other if same_quantity(q, t)}
    for theirs in other:
        mine = [q for q in stated if q.kind == theirs.kind]
        if theirs.compared or not mine or theirs.kind in repeated:
            continue
        if not any(same_amount(q.value, theirs.value, q.kind) for q in mine):
            return True
    return False
