"""Contradictions made by rule from FEVER's supported claims, for training only.

The FEVER rows we can fetch merge REFUTES with NOT ENOUGH INFO, so the model sees few
claims that a Wikipedia sentence contradicts. FEVER's own REFUTES claims were written by
mutating a true claim (a negation, another year, another name or nationality, the
opposite word); this module does the same, by rule, to the ``train`` side's SUPPORTS
claims: the evidence that supported the claim contradicts the mutated one. Each claim
is mutated once, the kind chosen by a hash of its id; a mutation whose new words are in
the evidence is dropped (it would not contradict it).

Nothing here reads judge_bench's cases: the rows come from ``data._fever`` (the train
bucket) and pass the same filter as every source.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator

Row = tuple[str, str, str, str]  # premise, hypothesis, label, row id

_AUX = re.compile(
    r"\b(?:(?:is|are|was|were|can|could|will|would|should|may)\b(?! not\b)"
    r"|(?:has|have|had)\b(?= been\b| \w+(?:ed|en)\b))"
)
_YEAR = re.compile(r"\b(1[5-9]\d\d|20[0-2]\d)(s?)\b")
_NUMBER = re.compile(r"\b(\d{1,3}(?:,\d{3})+|\d+)(?!\d)\b")
_WORD = re.compile(r"\S+")
_OPPOSITES = {
    "positive": "negative",
    "negative": "positive",
    "more": "fewer",
    "most": "fewest",
    "first": "last",
    "last": "first",
    "before": "after",
    "after": "before",
    "won": "lost",
    "lost": "won",
    "male": "female",
    "female": "male",
    "largest": "smallest",
    "smallest": "largest",
    "highest": "lowest",
    "lowest": "highest",
    "oldest": "youngest",
    "youngest": "oldest",
    "north": "south",
    "south": "north",
    "east": "west",
    "west": "east",
    "increased": "decreased",
    "decreased": "increased",
    "early": "late",
    "late": "early",
    "alive": "dead",
    "dead": "alive",
    "private": "public",
    "public": "private",
    "fiction": "nonfiction",
    "comedy": "tragedy",
    "success": "failure",
    "successful": "unsuccessful",
    "popular": "unpopular",
    "always": "never",
}
_NATIONS = (
    "American",
    "British",
    "English",
    "Canadian",
    "Australian",
    "French",
    "German",
    "Italian",
    "Indian",
    "Japanese",
    "Chinese",
    "Spanish",
    "Irish",
    "Scottish",
    "Mexican",
    "Russian",
    "Swedish",
    "Korean",
    "Brazilian",
    "Dutch",
)


def _pick(key: str, n: int) -> int:
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % n


def _negate(claim: str, premise: str, key: str, names: list[str]) -> str | None:
    m = _AUX.search(claim)
    if not m or m.start() == 0:
        return None
    return f"{claim[: m.end()]} not{claim[m.end() :]}"


def _year(claim: str, premise: str, key: str, names: list[str]) -> str | None:
    m = _YEAR.search(claim)
    if not m:
        return None
    year = int(m.group(1))
    if m.group(2):  # a decade: another decade
        other = year + (10 if year % 100 < 50 else -10) * (1 + _pick(key, 3))
    else:
        other = year + (1 + _pick(key, 25)) * (1 if _pick(key + "s", 2) else -1)
    new = f"{other}{m.group(2)}"
    if new in premise:
        return None
    return claim[: m.start()] + new + claim[m.end() :]


def _number(claim: str, premise: str, key: str, names: list[str]) -> str | None:
    m = _NUMBER.search(claim)
    if not m or _YEAR.fullmatch(m.group(0)):
        return None
    value = int(m.group(1).replace(",", ""))
    other = value * (2 + _pick(key, 4)) if value < 10 else value // (2 + _pick(key, 3))
    new = f"{other:,}" if "," in m.group(1) else str(other)
    if other == value or new in premise:
        return None
    return claim[: m.start()] + new + claim[m.end() :]


def _opposite(claim: str, premise: str, key: str, names: list[str]) -> str | None:
    for m in re.finditer(r"\b[a-z]+\b", claim):
        other = _OPPOSITES.get(m.group(0))
        if other and other not in premise.lower().split():
            return claim[: m.start()] + other + claim[m.end() :]
    return None


def _nation(claim: str, premise: str, key: str, names: list[str]) -> str | None:
    for nation in _NATIONS:
        m = re.search(rf"\b{nation}\b", claim)
        if m:
            others = [n for n in _NATIONS if n != nation and n not in premise]
            other = others[_pick(key, len(others))]
            return claim[: m.start()] + other + claim[m.end() :]
    return None


def object_names(claim: str) -> list[tuple[int, int, str]]:
    """The names after the claim's verb: maximal runs of one to three capitalised words
    that follow the first lower-case word (the subject's names are left alone)."""
    words = list(_WORD.finditer(claim))
    first = next((i for i, w in enumerate(words) if w.group(0)[0].islower()), None)
    if first is None:
        return []
    out, run = [], []
    for w in [*words[first + 1 :], None]:
        text = w.group(0).strip(".,;:'\"()") if w else ""
        if w and text[:1].isupper() and text.isalpha():
            run.append(w)
            continue
        if 1 <= len(run) <= 3:
            start, end = run[0].start(), run[0].start() + len(" ".join(r.group(0) for r in run))
            name = claim[start:end].rstrip(".,;:'\")")
            out.append((start, start + len(name), name))
        run = []
    return out


def _name(claim: str, premise: str, key: str, names: list[str]) -> str | None:
    """Another claim's name in place of a name after the verb (not the subject's)."""
    spans = object_names(claim)
    if not spans or not names:
        return None
    start, end, name = spans[-1]
    for k in range(20):
        other = names[_pick(f"{key}:{k}", len(names))]
        if len(other.split()) == len(name.split()) and other not in premise and other not in claim:
            return claim[:start] + other + claim[end:]
    return None


Mutation = Callable[[str, str, str, list[str]], str | None]
KINDS: tuple[tuple[str, Mutation], ...] = (
    ("negation", _negate),
    ("year", _year),
    ("number", _number),
    ("opposite", _opposite),
    ("nationality", _nation),
    ("name", _name),
)


def _articles(text: str) -> str:
    """ "a" or "an" as the next word sounds (a replaced word may change it)."""
    return re.sub(
        r"\b([Aa])n? (?=(\w))",
        lambda m: m.group(1) + ("n " if m.group(2).lower() in "aeio" else " "),
        text,
    )


def mutate(claim: str, premise: str, key: str, names: list[str]) -> tuple[str, str] | None:
    """One contradicting claim (and its kind), or None: the kinds are tried in an order
    that starts at one chosen by the key, so the rows spread over the kinds."""
    start = _pick(key, len(KINDS))
    for k in range(len(KINDS)):
        kind, make = KINDS[(start + k) % len(KINDS)]
        if k > 0 and (kind == "name" or (kind == "negation" and _pick(key + ":not", 2))):
            continue  # the noisiest kind only where the hash chose it; fewer negations
        out = make(claim, premise, key, names)
        if out and out != claim:
            return _articles(out), kind
    return None


def contradictions(supported: list[Row]) -> Iterator[Row]:
    """A contradiction for each supported (premise, claim) row that can be mutated."""
    names = sorted({n for _p, claim, _l, _i in supported for _s, _e, n in object_names(claim)})
    for premise, claim, _label, row_id in supported:
        made = mutate(claim, premise, row_id, names)
        if made:
            yield premise, made[0], "contradiction", f"{row_id}:{made[1]}"


# Claims the evidence does not entail, made by rule (label ``not_entailment``: the
# evidence says something else, which may or may not contradict the claim): the
# relation read the other way round, another thing in the predicate's place, the date
# in another month. The model read all three as entailed (a subgenre for its genre, "a
# fictional setting" for "a fictional character", "May 4" for "4 April").
_RELATION = re.compile(
    r"^(?P<a>[A-Z][^,;]*?) (?P<be>is|are|was|were) (?P<art>a|an|the) (?P<n>[a-z]+) of "
    r"(?P<b>[^,;]+?)\.?$"
)
_PREDICATE = re.compile(
    r"\b(?:is|are|was|were) (?:a|an) (?:[A-Za-z-]+ ){0,2}(?P<noun>[a-z]{3,})\.?$"
)
_MONTHS = (
    "January February March April May June July August September October November December"
).split()
_MONTH = re.compile(
    r"\b(" + "|".join(_MONTHS) + r")\b(?= \d| of \d|,? \d)|(?<=\d )(" + "|".join(_MONTHS) + r")\b"
)


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _as_object(subject: str) -> str:
    """The claim's subject as written after "of": a common noun phrase in lower case
    ("Martial arts films" → "martial arts films"), a name as written, "The" → "the"."""
    words = subject.split()
    if words[0] == "The" or (len(words) > 1 and words[1][:1].islower()):
        return subject[:1].lower() + subject[1:]
    return subject


def _reversed(claim: str, premise: str, key: str, nouns: list[str]) -> str | None:
    m = _RELATION.match(claim.strip())
    if not m or len(m.group("b").split()) > 6:
        return None
    subject, whole = m.group("a"), m.group("b")
    relation = f"{m.group('be')} {m.group('art')} {m.group('n')} of"
    return f"{_capital(whole)} {relation} {_as_object(subject)}."


def _predicate(claim: str, premise: str, key: str, nouns: list[str]) -> str | None:
    m = _PREDICATE.search(claim.strip())
    if not m or not nouns:
        return None
    noun = m.group("noun")
    lowered = premise.lower()
    for k in range(20):
        other = nouns[_pick(f"{key}:noun:{k}", len(nouns))]
        if other != noun and other not in lowered and other[:4] != noun[:4]:
            start, end = m.span("noun")
            return claim.strip()[:start] + other + claim.strip()[end:]
    return None


def _month(claim: str, premise: str, key: str, nouns: list[str]) -> str | None:
    m = _MONTH.search(claim)
    if not m:
        return None
    month = m.group(0)
    others = [x for x in _MONTHS if x != month and x not in premise]
    if not others:
        return None
    return claim[: m.start()] + others[_pick(key + ":month", len(others))] + claim[m.end() :]


NOT_ENTAILED: tuple[tuple[str, Mutation], ...] = (
    ("reversed", _reversed),
    ("predicate", _predicate),
    ("month", _month),
)


def predicate_nouns(claims: list[str]) -> list[str]:
    """The nouns that end "X is a ... NOUN." claims: what a predicate swap draws from."""
    return sorted({m.group("noun") for c in claims if (m := _PREDICATE.search(c.strip()))})


def not_entailed(supported: list[Row]) -> Iterator[Row]:
    """For each supported (premise, claim) row, the first of the ``NOT_ENTAILED`` kinds
    that applies: a claim its evidence does not entail (label ``not_entailment``)."""
    nouns = predicate_nouns([claim for _p, claim, _l, _i in supported])
    for premise, claim, _label, row_id in supported:
        for kind, make in NOT_ENTAILED:
            out = make(claim, premise, row_id, nouns)
            if out and out.strip() != claim.strip():
                yield premise, _articles(out), "not_entailment", f"{row_id}:{kind}"
                break
