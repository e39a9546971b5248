"""Does any evidence sentence dispute a claim another sentence states? (``offline:judge``)

A supported claim is *disputed* when a sentence anywhere in the evidence, about the same
subject, states something incompatible with it:

- another figure of the same kind: "150 EUR per night" against "120 EUR a night" (digits
  or number words; "120 EUR", "EUR 120", "€120" and "120 euros" are one amount), another
  year or day of the month;
- the other polarity: "… is not 150 EUR per night", "no longer", "never", "refused",
  "unofficially", "only" against a plain statement (or a plain statement against a
  negated claim);
- an update or a correction: "was changed from … to …", "lowered from … to …",
  "since … now", "not X but Y", "often named as X, but …", unless the claim states the
  value the update ends with;
- another name where the claim names someone or something (after the verb: "on the
  left bank of the Volga River" against "… of the Trebbia River").

A sentence is about the same subject when it shares at least two content words with the
claim and names nobody the claim does not in its subject ("Hotel stays in London are
capped at 180 EUR" is about London's hotels: figures about other subjects keep the claim
supported). Restating the claim in other words disputes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from evidence_app.validator.alignment import align, contradicts
from evidence_app.validator.wording import (
    FILLERS,
    NUMBER_WORDS,
    ROLE_WORDS,
    ROUNDING,
    Sentence,
    Token,
    stem,
)

# Words that say nothing about the subject: never count as shared.
_FUNCTION_WORDS = (
    FILLERS
    | ROLE_WORDS
    | frozenset(
        """and or but in on at per is are was were be been being has have had do does did
    this that these those it its they their there here which what when where also than
    then not no very all each every some any such only""".split()
    )
)
# Words that turn a statement into its opposite or narrow it ("only", "former").
_POLARITY = frozenset(
    """not no never none neither nor cannot nobody nothing nowhere refused refuses denied
    denies deny failed fails only former formerly ex declined declines rejected rejects
    excludes excluded zero exclusively solely incapable lack lacks lacked lacking
    impossible""".split()
)
_LIMITING = frozenset({"only", "exclusively", "solely"})
_NOT_PRIVATIVE_UN = ("under", "unit", "union", "uniq", "unive", "until", "unifo", "unles")
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
_FULL_MONTHS = frozenset(
    """january february march april june july august september october november
    december""".split()
)
_CALENDAR = _MONTHS | frozenset("monday tuesday wednesday thursday friday saturday sunday".split())
# Currency and unit spellings that name the same thing.
_UNITS = {
    "€": "eur", "eur": "eur", "euro": "eur", "euros": "eur",
    "$": "usd", "usd": "usd", "dollar": "usd", "dollars": "usd",
    "£": "gbp", "gbp": "gbp", "pound": "gbp", "pounds": "gbp",
    "chf": "chf", "franc": "chf", "francs": "chf",
    "%": "percent", "percent": "percent", "pct": "percent",
}  # fmt: skip
_CURRENCY_FIRST = frozenset({"€", "$", "£", "eur", "usd", "gbp", "chf"})
_QUANTITY_TOKEN_RE = re.compile(r"\d[\d,.]*\d|\d|[€$£%]|[A-Za-z]+")
_COMPARING = frozenset(
    """more less fewer over under least most nearly almost about approximately around
    roughly up above below maximum minimum than""".split()
)
# What a sentence says was true before: the claim stating it states the past.
_PAST_RE = re.compile(
    r"\bno longer\b|\bnot any ?more\b|\bformerly\b|\bpreviously\b|\bused to\b",
    re.IGNORECASE,
)
# An update or correction ending with the value that holds now.
_UPDATE_RE = re.compile(
    r"\bsince\b[^.;]*\bnow\b|\binstead of\b|\bnot\b[^.;]*\bbut\b|"
    r"\b(?:changed|lowered|raised|reduced|increased|cut|moved|renamed|revised|updated|"
    r"adjusted|corrected|amended)\b[^.;]*\bfrom\b[^.;]*\bto\b|"
    r"\b(?:often|sometimes|commonly|frequently|wrongly|mistakenly|erroneously|widely)\s+"
    r"(?:named|called|given|cited|listed|described|reported|said|credited)\b",
    re.IGNORECASE,
)
# Prepositions that say the same as "in", "on" or "at": "during its opening weekend" for
# "on its opening weekend" is no other word in the claim's place.
_PLACE_AND_TIME = frozenset("during within throughout into onto upon across via through".split())
_PRONOUNS = frozenset("he she it they his her its their him them these those".split())
# Words of opposite sense, each with its forms.
_OPPOSITES = [
    (frozenset(a.split()), frozenset(b.split()))
    for a, b in (
        ("include includes included including", "exclude excludes excluded excluding"),
        ("increase increases increased increasing", "decrease decreases decreased decreasing"),
        ("accept accepts accepted accepting", "reject rejects rejected rejecting"),
        ("win wins won winning winner", "lose loses lost losing loser"),
        ("first", "last"),
        ("before", "after"),
        ("larger largest bigger biggest", "smaller smallest"),
        ("higher highest", "lower lowest"),
        ("male men man boys", "female women woman girls"),
        ("alive living", "dead deceased"),
        ("public", "private"),
        ("legal", "illegal"),
        ("success successful succeeded", "failure failed unsuccessful"),
        ("north northern", "south southern"),
        ("east eastern", "west western"),
        ("older oldest elder", "younger youngest"),
        ("earlier earliest", "later latest"),
        ("maximum", "minimum"),
        ("allowed permitted", "banned forbidden prohibited"),
        ("internal", "external"),
        ("ancient", "modern"),
        ("true", "false"),
        ("positive", "negative"),
    )
]
_VERBISH = frozenset({"be", "was", "have", "do"})
# A sentence about the same subject shares at least this many content words with the claim.
SAME_SUBJECT_WORDS = 2
# A sentence of the other polarity, or naming another name, disputes the claim when this
# share of its other content words is in the claim or its supporting sentence (it says
# the same thing, negated or of someone else).
RESTATED_SHARE = 0.5
POLARITY_SHARE = 0.6
# A word put in another's place counts when the words matched around it hold this many
# content words ("Morse code is more sensitive to poor signal" against "… less …").
SWAP_FLANK = 2
# A sentence with one new word holds at least this many other content words.
SLOT_WORDS = 3
# A word this close in its letters to a known one is that word misspelled.
SPELLING = 0.85
# A name after a word both share is the claim's name in that role within this many words.
NAME_WINDOW = 6


@dataclass(frozen=True)
class Quantity:
    value: float
    kind: str  # "eur", "year", "day", a unit's stem ("night", "employe"), or "number"
    compared: bool  # "more than", "at most" … before it: a bound, not the amount


@dataclass(frozen=True)
class Dispute:
    sentence: Sentence
    reason: str  # what it states: "other figures", "the opposite", …


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
        return _UNITS[before]
    year = value.is_integer() and 1000 <= value <= 2100
    if year and (before in _MONTHS or after not in _UNITS):
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
        if not after or after in _FUNCTION_WORDS or after in _MONTHS:
            return "day"  # "on the 2nd", "the 1st of May"
    if after in _UNITS:
        return _UNITS[after]
    if after in _MONTHS:
        return "day"
    if after and after not in _FUNCTION_WORDS and not after[:1].isdigit():
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


def _other_months(other_toks: list[Token], claim: _Claim) -> bool:
    """Both give dates with months, none the same ("in March 1964" against "in August
    1964"; "until January" is no date)."""
    theirs, mine = _dated_months(other_toks), _dated_months(claim.toks)
    return bool(theirs and mine) and not theirs & mine


def _dated_months(toks: list[Token]) -> set[str]:
    """Months written out, capitalised, beside a figure ("17 November", "March 2019")."""
    out = set()
    for i, t in enumerate(toks):
        if t.lower not in _FULL_MONTHS or not t.text[:1].isupper():
            continue
        beside = toks[max(0, i - 1) : i] + toks[i + 1 : i + 2]
        if any(b.text[:1].isdigit() for b in beside):
            out.add(t.lower)
    return out


def _same_amount(a: float, b: float, kind: str) -> bool:
    if a == b:
        return True
    if kind in ("year", "day"):
        return False
    return abs(a - b) <= ROUNDING * max(abs(a), abs(b))


def _other_figures(claim: list[Quantity], other: list[Quantity]) -> bool:
    """The sentence gives an amount of a kind the claim gives that is none of the claim's
    ("150 EUR" against "120 EUR"; "$160 million" restates one of "$181 million on a
    budget of $160 million", "lasts 23 days" does not make "begins on 20 November" agree
    with "begins on 17 November")."""
    stated = [q for q in claim if not q.compared]
    # Where it states the claim's amount of a kind too, its other amounts of that kind are
    # about something else; another kind still counts ("August 24, 1964" against
    # "August 14, 1964").
    repeated = {
        q.kind
        for q in stated
        for t in other
        if t.kind == q.kind and _same_amount(q.value, t.value, q.kind)
    }
    for theirs in other:
        mine = [q for q in stated if q.kind == theirs.kind]
        if theirs.compared or not mine or theirs.kind in repeated:
            continue
        if not any(_same_amount(q.value, theirs.value, q.kind) for q in mine):
            return True
    return False


@dataclass
class _Words:
    """The content words, polarity and names of one text."""

    content: set[str]
    negated: bool
    limited: bool  # "only", "exclusively": it narrows what it says
    names: list[tuple[int, str]]  # (position, lower-case name)
    verb_at: int  # position of the first verb-like word (the subject ends there)
    length: int
    statement: bool  # ends as a sentence does (a heading states nothing)


def _negating(token: Token) -> bool:
    low = token.lower
    if low in _POLARITY:
        return True
    return low.startswith("un") and len(low) >= 6 and not low.startswith(_NOT_PRIVATIVE_UN)


def _subject_word(t: Token) -> bool:
    """A content word: no function word, figure, unit or negation."""
    return _content(t) and t.lower not in _UNITS and not _negating(t)


def _name_word(i: int, t: Token) -> bool:
    """A name (the first word too, when capitalised), not a month or a currency."""
    capital = t.name or (i == 0 and t.text[:1].isupper() and t.lower not in _FUNCTION_WORDS)
    return capital and len(t.text) >= 2 and t.lower not in _CALENDAR and t.lower not in _UNITS


def _verb_at(toks: list[Token]) -> int:
    verbs = (i for i, t in enumerate(toks) if t.norm in _VERBISH or _past_form(t))
    found = next(verbs, None)
    return _present_verb_at(toks) if found is None else found


def _present_verb_at(toks: list[Token]) -> int:
    """Without a form of "be", "have", "do" or a past form, the first word in lower case
    ending in "s" after the opening words ("Poldark airs on …", "The holiday freeze covers
    …"), else the sentence's length."""
    for i, t in enumerate(toks[1:], start=1):
        if t.punct or t.lower in _FUNCTION_WORDS or t.figure:
            continue
        if t.text[:1].islower() and t.lower.endswith("s") and not t.lower.endswith("ss"):
            return i
    return len(toks)


def _past_form(t: Token) -> bool:
    return t.lower.endswith("ed") and not t.name


def _words(toks: list[Token], text: str = "") -> _Words:
    content = {t.norm for t in toks if _subject_word(t)}
    verb_at = _verb_at(toks)
    names = [(i, t.lower) for i, t in enumerate(toks) if _name_word(i, t)]
    limited = any(t.lower in _LIMITING for t in toks)
    negated = any(_negating(t) and t.lower not in _LIMITING for t in toks) or any(
        a.lower == "yet" and b.lower == "to" for a, b in zip(toks, toks[1:], strict=False)
    )  # "has yet to write"
    statement = text.rstrip().endswith((".", "!", '."', ".)"))
    return _Words(content, negated, limited, names, verb_at, len(toks), statement)


def _known(name: str, vocabulary: set[str]) -> bool:
    """The name, or a spelling sharing its first four letters, is in ``vocabulary``."""
    return name in vocabulary or any(
        len(name) >= 4 and len(w) >= 4 and w[:4] == name[:4] for w in vocabulary
    )


@dataclass
class _Claim:
    toks: list[Token]
    text: str
    words: _Words
    quantities: list[Quantity]
    known: set[str]  # lower-case words of the claim and its supporting sentence


def _about_other_subject(other: _Words, other_toks: list[Token], claim: _Claim) -> bool:
    """The sentence's subject is the claim's, qualified by a name the claim does not hold
    ("Hotel stays in London" against "Hotel stays on business trips"). A claim whose
    subject has no content word ("It", "The film") or holds a pronoun ("His widow") may be
    about any name."""
    before_verb = claim.toks[: claim.words.verb_at]
    claim_subject = {t.norm for t in before_verb} & claim.words.content
    if not claim_subject or any(t.lower in _PRONOUNS for t in before_verb):
        return False  # "His widow, Elizabeth, …": whose is for the other sentence to say
    # The first word is capitalised anyway ("Since March …"): only a later one qualifies.
    # "The Leipzig office is at …" against "The headquarters address is …" too: another
    # subject, naming someone or something the claim does not.
    return any(0 < at < other.verb_at and not _known(n, claim.known) for at, n in other.names)


def _same_subject(other: _Words, other_toks: list[Token], claim: _Claim) -> bool:
    """The sentence shares a name or two content words with the claim, one of them in its
    subject when its subject holds a word other than a name and the claim's holds no
    pronoun: words it shares only after its verb ("… within your first 14 days: … the
    code of conduct", "… 30 days of paid annual leave") say nothing of what it is about;
    what "It" is, only the other sentence may say."""
    names = {n for _at, n in claim.words.names}
    if any(n in names for _at, n in other.names):
        return True
    # What a figure counts ("23 days", "two days") is no subject the two share.
    shared = other.content & claim.words.content - _counted(other_toks) - _counted(claim.toks)
    if len(shared) < SAME_SUBJECT_WORDS:
        return False
    if any(t.lower in _PRONOUNS for t in claim.toks[: claim.words.verb_at]):
        return True
    # A name may be who the claim's "He" or "The film" is: only other words tell.
    subject = {t.norm for i, t in enumerate(other_toks[: other.verb_at]) if not _name_word(i, t)}
    subject &= other.content
    return not subject or bool(shared & subject)


def _counted(toks: list[Token]) -> set[str]:
    """The words right after a figure: what it counts."""
    return {b.norm for a, b in zip(toks, toks[1:], strict=False) if a.figure}


def _shared_subject(other: _Words, other_toks: list[Token], claim: _Claim) -> bool:
    """Both subjects (the words before the verb) hold a word or name of the other's:
    what follows says something of the same thing."""
    theirs = {t.norm for t in other_toks[: other.verb_at] if _content(t)}
    mine = {t.norm for t in claim.toks[: claim.words.verb_at] if _content(t)}
    return bool(theirs & mine)


def _opening_phrase(toks: list[Token]) -> list[Token]:
    """The words the sentence opens with, after its article, up to the first function
    word or punctuation ("The holiday freeze covers …": holiday, freeze, covers)."""
    start = 1 if toks and toks[0].lower in FILLERS else 0
    out: list[Token] = []
    for t in toks[start:]:
        if not _content(t):
            break
        out.append(t)
    return out


def _another_kind(other_toks: list[Token], claim: _Claim) -> bool:
    """Both open with the same word qualified otherwise: "The holiday freeze …" against
    "The annual peak-season code freeze …" is another freeze (each qualifier, a word in
    lower case, in one only)."""
    mine, theirs = _opening_phrase(claim.toks), _opening_phrase(other_toks)
    other_words = {t.norm for t in other_toks}
    for j, t in enumerate(theirs[1:], start=1):
        at = next((i for i, c in enumerate(mine) if c.norm == t.norm), 0)
        if at == 0:
            continue
        qualifier, own = theirs[j - 1], mine[at - 1]
        if any(q.text[:1].isupper() for q in (qualifier, own)):
            continue  # a name may be the claim's subject ("Mohra got …", "The film got …")
        if qualifier.lower not in claim.known and own.norm not in other_words:
            return True
    return False


def _update_disputes(text: str, claim: _Claim) -> bool | None:
    """``None`` when the sentence is no update; ``True`` when it says what no longer
    holds, or is an update or correction whose final value the claim does not state."""
    if _PAST_RE.search(text):
        return True
    match = _UPDATE_RE.search(text)
    if match is None:
        return None
    tail = text[match.start() :]
    final = quantities(tail)
    if final:
        return not any(
            _same_amount(final[-1].value, q.value, q.kind) and q.kind == final[-1].kind
            for q in claim.quantities
        )
    names = re.findall(r"\b[A-Z][\w'’-]+", tail)
    return bool(names) and names[-1].lower() not in claim.known


def _restates(other: _Words, claim: _Claim) -> bool:
    """The sentence is a statement whose other content words are mostly the claim's or
    its supporting sentence's: it says the same thing, but for what differs."""
    names = {n for _at, n in other.names}
    plain = {w for w in other.content if w not in names}
    if other.verb_at >= other.length or len(other.content) < 2 or not plain:
        return False
    known = {stem(w) for w in claim.known} | claim.words.content
    return len(plain & known) / len(plain) >= RESTATED_SHARE


def _polarity_disputes(other: _Words, other_toks: list[Token], claim: _Claim) -> bool:
    """One of the two is negated ("not", "never", "refused", "has yet to"), or the
    sentence narrows what the claim says ("only", "exclusively"), and the sentence's
    content words are mostly the claim's."""
    negated = other.negated != claim.words.negated
    narrowed = other.limited and not claim.words.limited
    if not (negated or narrowed) or len(other.content) < 2 or not other.statement:
        return False
    known = sorted({stem(w) for w in claim.known} | claim.words.content)
    # The same word in another form counts ("has yet to write" against "a writer").
    said = [w for w in other.content if w != "yet"]
    shared = [w for w in said if w in known or _akin(w, known)]
    if not said or len(shared) / len(said) < POLARITY_SHARE:
        return False
    # What is negated must be in both: "never require repayment" says nothing against a
    # sentence about the budget's amount.
    negated_side, plain_side = (
        (other_toks, claim.toks) if other.negated else (claim.toks, other_toks)
    )
    if not (other.negated or claim.words.negated):
        negated_side, plain_side = other_toks, claim.toks
    return _negated_words_shared(negated_side, plain_side)


def _negated_words_shared(negated: list[Token], plain: list[Token]) -> bool:
    """A word or figure among the four after the negation is in the plain sentence, or
    a name is among the four after "only"."""
    at = next((i for i, t in enumerate(negated) if _negating(t) or t.lower == "yet"), None)
    if at is None:
        return True
    words = sorted({t.lower for t in plain if not t.punct})
    after = [t for t in negated[at + 1 :] if not t.punct and t.lower not in _FUNCTION_WORDS][:4]
    if any(t.lower in words or _akin(t.lower, words) for t in after):
        return True
    # "only" naming what the plain sentence does not: "is only in Spanish" beside "a
    # Hindi song" narrows it to something else.
    return negated[at].lower in _LIMITING and any(t.name for t in after)


def _limited_otherwise(other_toks: list[Token], other: _Words, claim: _Claim) -> bool:
    """Both narrow what they say ("only", "exclusively") to other things: "only sells
    women's clothing" against "caters exclusively to men's clothing"."""
    if not (other.limited and claim.words.limited):
        return False
    theirs = _limited_to(other_toks)
    mine = _limited_to(claim.toks)
    known = sorted(claim.known)
    other_words = sorted({t.lower for t in other_toks})
    new = [w for w in theirs if w not in claim.known and not _akin(w, known)]
    missing = [w for w in mine if w not in other_words and not _akin(w, other_words)]
    return bool(new) and bool(missing)


def _limited_to(toks: list[Token]) -> list[str]:
    """The content words among the four after the first "only", "exclusively" …"""
    at = next((i for i, t in enumerate(toks) if t.lower in _LIMITING), len(toks))
    return [t.lower for t in toks[at + 1 :] if _content(t)][:4]


def _mostly_known(other: _Words, claim: _Claim) -> bool:
    """Most of the sentence's content words are the claim's or its supporting sentence's."""
    known = {stem(w) for w in claim.known} | claim.words.content
    names = {n for _at, n in other.names}
    plain = {w for w in other.content if w not in names}
    return bool(plain) and len(plain & known) / len(plain) >= POLARITY_SHARE


def _content(token: Token) -> bool:
    low = token.lower
    return not token.punct and not token.figure and len(low) >= 3 and low not in _FUNCTION_WORDS


def _swap_flanked(
    ops: Sequence[tuple[str, int, int, int, int]], k: int, claim: list[Token]
) -> bool:
    """The replaced span at ``ops[k]`` sits between two matched runs holding at least
    ``SWAP_FLANK`` content words of the claim."""
    if k == 0 or ops[k - 1][0] != "equal":
        return False
    left = claim[ops[k - 1][1] : ops[k - 1][2]]
    if k == len(ops) - 1:
        # At the end, only a name for a name: "… was written by Jonas Lind".
        return _names_only(claim[ops[k][1] : ops[k][2]]) and _content_count(left) >= SWAP_FLANK
    if ops[k + 1][0] != "equal":
        return False
    right = claim[ops[k + 1][1] : ops[k + 1][2]]
    both = _content_count(left) >= 1 and _content_count(right) >= 1
    return both and _content_count(left + right) >= SWAP_FLANK


def _akin(word: str, others: list[str]) -> bool:
    """The same word in another form ("Italian" for "Italy", "named" for "name")."""
    return any(len(word) >= 4 and len(o) >= 4 and word[:4] == o[:4] for o in others)


def _content_count(toks: list[Token]) -> int:
    return sum(1 for t in toks if _content(t))


def _names_only(toks: list[Token]) -> bool:
    return bool(toks) and all(t.name for t in toks)


def _word_swapped(claim: list[Token], other: list[Token], restated: bool) -> bool:
    """The sentence says what the claim says with one or two other words in the place of
    a few of the claim's ("more" for "less", "Arabic Peninsula" for "Balkan Peninsula")."""
    if not restated:
        return False
    mine = [t for t in claim if not t.punct]
    theirs = [t for t in other if not t.punct]
    ops = SequenceMatcher(
        None, [t.norm for t in mine], [t.norm for t in theirs], autojunk=False
    ).get_opcodes()
    for k, (tag, i1, i2, j1, j2) in enumerate(ops):
        if tag != "replace" or i2 - i1 > 3 or j2 - j1 > 2 or not _swap_flanked(ops, k, mine):
            continue
        replaced = [t.lower for t in mine[i1:i2]]
        if k == len(ops) - 1 and not _names_only(theirs[j1:j2]):
            continue
        if any(
            _content(t) and t.lower not in _PLACE_AND_TIME and not _akin(t.lower, replaced)
            for t in theirs[j1:j2]
        ):
            return True
    return False


def _role_of(toks: list[Token], at: int) -> str:
    """The word before the name at ``toks[at]``, past an article ("created by the UFC":
    "by"), or "" when that is punctuation, a name or a form of "be", "have", "do"."""
    k = at - 1
    if k >= 0 and toks[k].lower in FILLERS:
        k -= 1
    if k < 0 or toks[k].punct or toks[k].text[:1].isupper() or toks[k].norm in _VERBISH:
        return ""  # "is Kranhafen 9" and "is named Okkerlund" give no role
    return toks[k].lower


def _other_name_in_role(other_toks: list[Token], claim: _Claim) -> bool:
    """The sentence names, after a word the claim has ("by", "on", "contains"), someone
    the claim does not, where the claim names there someone the sentence does not ("was
    created by the UFC" against "created and promoted by … WWE")."""
    theirs = sorted({t.lower for t in other_toks})
    known = sorted(claim.known)
    for j in range(1, len(other_toks)):
        role = _unknown_after_role(other_toks, j, claim, known)
        if role and _names_elsewhere(claim.toks, role, theirs):
            return True
    return False


def _unknown_after_role(toks: list[Token], j: int, claim: _Claim, known: list[str]) -> str:
    """The word before ``toks[j]`` when that is a name the claim does not hold, or "by"
    before a word that is no name, in no form the claim's ("is by a car")."""
    t = toks[j]
    if t.lower in _CALENDAR or _known(t.lower, claim.known):
        return ""
    role = _role_of(toks, j)
    if t.name:
        return role
    plain = role == "by" and _content(t) and not _akin(t.lower, known)
    return role if plain else ""


def _names_elsewhere(claim: list[Token], role: str, theirs: list[str]) -> bool:
    """After ``role`` the claim names, within its clause, only names the sentence does not
    hold in any form (a currency is no name)."""
    for i, c in enumerate(claim):
        if c.lower != role:
            continue
        after = claim[i + 1 : i + 1 + NAME_WINDOW]
        stop = next((k for k, a in enumerate(after) if a.punct), len(after))
        named = [a.lower for a in after[:stop] if a.name and a.lower not in _UNITS]
        if named and not any(n in theirs or _akin(n, theirs) for n in named):
            return True
    return False


def _next_content(toks: list[Token], at: int) -> Token | None:
    """The first content word after ``toks[at]`` within its clause."""
    for t in toks[at + 1 :]:
        if t.punct:
            return None
        if _content(t):
            return t
    return None


def _slot_swapped(other_toks: list[Token], claim: _Claim) -> bool:
    """All the sentence's words but one are the claim's (in any form), and that one
    follows a word the claim follows with another ("high birth and conversion pizzas"
    against "… conversion rates", "may be impeded by" against "may result from")."""
    at = _one_new_word(other_toks, claim)
    if at is None:
        return False
    before = next((t for t in reversed(other_toks[:at]) if _content(t) or t.punct), None)
    if before is None or before.punct or before.text[:1].isupper():
        return False
    after = _next_content(other_toks, at)
    theirs = sorted({t.lower for t in other_toks})
    for i, c in enumerate(claim.toks):
        mine = _next_content(claim.toks, i) if c.norm == before.norm else None
        if mine is None or mine.name or _akin(mine.lower, theirs):
            continue
        # The word after it, if any, follows the claim's word too: the same slot.
        following = _next_content(claim.toks, claim.toks.index(mine, i))
        if after is None or (following is not None and following.norm == after.norm):
            return True
    return False


def _one_new_word(toks: list[Token], claim: _Claim) -> int | None:
    """Where the sentence's one content word in no form the claim's is, when it holds at
    least ``SLOT_WORDS`` content words (names aside)."""
    known = sorted(claim.known)
    # A manner word ("rapidly" for "significantly") says how, not what.
    words = [t for t in toks if _content(t) and not t.name and not t.lower.endswith("ly")]
    new = [t for t in words if not _spelled_like(t.lower, known)]
    if len(words) < SLOT_WORDS or len(new) != 1:
        return None
    return toks.index(new[0])


def _spelled_like(word: str, known: list[str]) -> bool:
    """The word, another form of it ("spoken", "speaks"), or a misspelling of it
    ("actylcholine"), is among ``known``."""
    if word in known or _akin(word, known):
        return True
    return any(SequenceMatcher(None, word, k).ratio() >= SPELLING for k in known if len(k) >= 6)


def _copular(toks: list[Token], at: int) -> bool:
    """ "<subject> is/was a|an|the …": the sentence says what its subject is."""
    if at >= len(toks) - 2 or toks[at].norm not in ("be", "was"):
        return False
    return toks[at + 1].lower in ("a", "an", "the")


def _other_kind(other_toks: list[Token], other: _Words, claim: _Claim) -> bool:
    """ "X is a boat" where the claim says X is an airliner: a sentence of the form "<subject>
    is/was a|an|the …" whose words after the article are not the claim's or its
    supporting sentence's (in any form). A paraphrase in new words ("is a movie" for "is
    a film") goes to a person too: the judge cannot tell them apart."""
    # The claim's "is a" may follow a clause of its own: "A floppy disk, also called a
    # floppy, …, is a type of disk storage".
    claim_says = any(_copular(claim.toks, i) for i, t in enumerate(claim.toks) if not t.paren)
    if not (_copular(other_toks, other.verb_at) and claim_says):
        return False
    at = other.verb_at
    known = sorted(claim.known)
    said = [t for t in other_toks[at + 2 :] if _content(t) and not t.name]
    return any(not _akin(t.lower, known) and t.lower not in claim.known for t in said)


def _opposites(other_toks: list[Token], claim: _Claim) -> bool:
    """The sentence says the opposite word of one the claim says ("excludes" against
    "include", "last" against "first"), and neither says the other's."""
    theirs = {t.lower for t in other_toks}
    mine = {t.lower for t in claim.toks}
    for one, two in _OPPOSITES:
        for said, against in ((one, two), (two, one)):
            if theirs & said and mine & against and not (mine & said or theirs & against):
                return True
    return False


def _opposite_said(other_toks: list[Token], other: _Words, claim: _Claim) -> bool:
    """An opposite word, in a statement sharing a word with the claim whose other content
    words are mostly the claim's (the subject aside where the claim's is a pronoun:
    "Folklore excludes jokes" against "These include … jokes")."""
    if not other.statement or not _opposites(other_toks, claim):
        return False
    before_verb = claim.toks[: claim.words.verb_at]
    pronoun = any(t.lower in _PRONOUNS for t in before_verb)
    subject = {t.norm for t in other_toks[: other.verb_at]} if pronoun else set()
    said = [w for w in other.content if w not in subject]
    known = sorted({stem(w) for w in claim.known} | claim.words.content)
    shared = [w for w in said if w in known or _akin(w, known)]
    return bool(shared) and len(shared) / len(said) >= POLARITY_SHARE


def _about_the_claim(other: _Words, other_toks: list[Token], claim: _Claim) -> bool:
    if _about_other_subject(other, other_toks, claim) or _another_kind(other_toks, claim):
        return False
    return _same_subject(other, other_toks, claim) or _opposite_said(other_toks, other, claim)


def _put_in_place(other: _Words, other_toks: list[Token], claim: _Claim) -> str:
    """What a statement whose subject shares a word with the claim's puts in the place of
    one of the claim's names or words."""
    if not (other.statement and _shared_subject(other, other_toks, claim)):
        return ""
    if _other_name_in_role(other_toks, claim):
        return "another name in the claim's place"
    if _slot_swapped(other_toks, claim):
        return "another word in the claim's place"
    return ""


def _reason(s: Sentence, claim: _Claim, vocabulary: set[str]) -> str:
    other = _words(s.toks, s.text)
    if not _about_the_claim(other, s.toks, claim):
        return ""
    if _opposite_said(s.toks, other, claim):
        return "the opposite"
    update = _update_disputes(s.text, claim)
    if update is not None:
        return "an update or correction" if update else ""
    if _other_figures(claim.quantities, quantities(s.text)) or _other_months(s.toks, claim):
        return "other figures"
    if contradicts(claim.toks, align(claim.toks, s.toks), vocabulary):
        return "another figure or name in its place"
    swapped = _put_in_place(other, s.toks, claim)
    if swapped:
        return swapped
    if _polarity_disputes(other, s.toks, claim):
        return "the opposite"
    if other.statement and _limited_otherwise(s.toks, other, claim):
        return "the opposite"
    if _word_swapped(claim.toks, s.toks, other.statement and _mostly_known(other, claim)):
        return "other words in the claim's place"
    if other.statement and _other_kind(s.toks, other, claim):
        return "that it is something else"
    return ""


def disputing_sentence(
    claim: list[Token],
    claim_text: str,
    support: Sentence,
    evidence: list[Sentence],
    vocabulary: set[str],
) -> Dispute | None:
    """The first evidence sentence (other than ``support``) that states something
    incompatible with the claim about the same subject, with what it states."""
    known = {t.lower for t in claim + support.toks if not t.punct}
    state = _Claim(claim, claim_text, _words(claim), quantities(claim_text), known)
    for s in evidence:
        if s is support or s.text == support.text or s.text.rstrip().endswith("?"):
            continue  # the same statement, or a question (it states nothing)
        reason = _reason(s, state, vocabulary)
        if reason:
            return Dispute(s, reason)
    return None
