"""Deterministic grounding checks of ``offline:judge``: does one evidence sentence state a
claim, or contradict it? ("An honest judge".)

A claim is *verified* only when one evidence sentence states it: every word of the claim
(articles aside) is in the sentence, in the same order, and what the sentence has in
between is a harmless aside (a parenthesis, or at most three words with no name, figure,
negation, hedge, role word or "former"-like qualifier). Before and after the matched
words, up to the clause's end, the sentence must not negate or hedge it ("It is false
that …", "… until 1990"). So a rival name in the cited sentence, a negation, an
attribute of another entity of the same sentence or a name spliced from two names is
never verified. Be-forms match each other ("is"/"was"), words are stemmed, "1,750" is
"1750" and "four" is "4".

A claim is *contradicted* when a sentence states the same thing with another figure in
its place ("… is 2,000 EUR" against "… is 1,750 EUR"), a comparison the figure breaks
("more than 100" against "95"), or, where the claim's name occurs nowhere in the
evidence, another name in its place. Everything else is unverified: a person decides.

A few relations are computed: "A was born N years after B" and "A was born in YEAR"
from the years the evidence gives ("A (born 12 May 1950)", "A was founded in 1990").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from difflib import SequenceMatcher

FILLERS = frozenset({"a", "an", "the"})
NEGATIONS = frozenset(
    """not no never none neither nor without nobody nothing nowhere cannot hardly barely
    lack lacks lacked lacking fail fails failed refused denied deny denies""".split()
)
HEDGES = frozenset(
    """may might could would should can possibly perhaps probably likely unlikely
    potentially allegedly reportedly supposedly apparently claimed claims claim alleged
    rumored rumoured rumours rumors believed believe thought said reported suggested
    suggest suggests indicate indicates indicated appear appears appeared seem seems
    seemed unconfirmed if unless whether proposed planned intended expected attempted tried
    hypothesized hypothesised hypothesize hypothesis speculated speculation predicted
    assumed argued argues contended unclear unknown uncertain disputed debated
    controversial doubt doubtful questioned hoax conspiracy myth misconception false
    rumor rumour debunked refuted disproved falsely wrongly incorrectly erroneously
    mistakenly fiction""".split()
)
LIMITERS = frozenset(
    """only except but although though until till than or either partly partially nearly
    almost about approximately around roughly over under more less fewer most least
    usually often sometimes occasionally rarely seldom generally typically mostly mainly
    largely frequently""".split()
)
PRIVATIVE = frozenset(
    """former formerly ex once previously fake fictional fictitious mock pseudo unofficial
    unreleased unfinished cancelled canceled would-be non vice deputy assistant acting co
    second third""".split()
)
ROLE_WORDS = frozenset(
    "of by for from to with against as into between among who whom whose".split()
)
GAP_BLOCKERS = NEGATIONS | HEDGES | LIMITERS | PRIVATIVE | ROLE_WORDS
PREFIX_BLOCKERS = NEGATIONS | HEDGES | frozenset({"until", "till", "than", "or", "except", "only"})
# Words anywhere else in the sentence that limit or deny what it says ("In mice, …",
# "…, but this was never confirmed"): the sentence is then not a plain statement.
QUALIFIERS = frozenset(
    """mice mouse rat rats rodent rodents vitro vivo animal animals cell cells subset
    some certain cohort cohorts trial trials model models sample samples""".split()
)
SENTENCE_BLOCKERS = NEGATIONS | HEDGES | QUALIFIERS
SUFFIX_BLOCKERS = NEGATIONS | frozenset(
    {"or", "until", "till", "except", "than", "only", "unless", "if", "either"}
)
MAX_GAP_WORDS = 3
# Two figures this close may be one rounded: not a contradiction (a person decides).
ROUNDING = 0.03
BOUNDARIES = frozenset({",", ";", ":", "(", ")", "[", "]"})

_NUMBER_WORDS = {
    w: str(v)
    for v, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
}
_ORDINALS = {
    w: f"#{v}"
    for v, w in enumerate(
        "first second third fourth fifth sixth seventh eighth ninth tenth".split(), start=1
    )
}
# Present and past stay apart: "X was CEO" does not say "X is CEO".
_BE = frozenset({"is", "are", "be", "been", "being", "am"})
_WAS = frozenset({"was", "were"})
_HAVE = frozenset({"has", "have", "having"})
_DO = frozenset({"do", "does", "did"})
_CONTRACTIONS = {"won't": "will", "can't": "can", "shan't": "shall"}
_TOKEN_RE = re.compile(r"\d[\d,.:/]*\d|\d|[A-Za-z][A-Za-z'’\-]*|[(),;:\[\]]")


def stem(word: str) -> str:
    word = word.lower().strip("'-")
    for suffix in ("ations", "ation", "ings", "ing", "ies", "ied", "es", "ed", "ly", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


@dataclass(frozen=True)
class Token:
    text: str  # as written (a contraction's "not" reads "not")
    norm: str  # the form compared
    name: bool = False  # capitalised inside its sentence
    figure: bool = False  # a number, number word or ordinal
    paren: int = 0  # depth inside ( ) or [ ]

    @property
    def lower(self) -> str:
        return self.text.lower()

    @property
    def punct(self) -> bool:
        return self.text in BOUNDARIES


def _norm(word: str) -> tuple[str, bool]:
    # A possessive stays one: "Nixon's middle name" is not "Nixon".
    low = word.lower().replace("’", "'").rstrip("'")
    if low[:1].isdigit():
        return low.replace(",", ""), True
    if low in _NUMBER_WORDS:
        return _NUMBER_WORDS[low], True
    if low in _ORDINALS:
        return _ORDINALS[low], True
    if low in _BE:
        return "be", False
    if low in _WAS:
        return "was", False
    if low == "an":
        return "a", False
    if low in _HAVE:
        return "have", False
    if low in _DO:
        return "do", False
    return stem(low), False


def tokens(text: str) -> list[Token]:
    """The words, figures and clause punctuation of one sentence."""
    out: list[Token] = []
    depth = 0
    for i, raw in enumerate(_TOKEN_RE.findall(text)):
        if raw in "([":
            depth += 1
        if raw in BOUNDARIES:
            out.append(Token(raw, raw, paren=depth))
            depth = max(0, depth - 1) if raw in ")]" else depth
            continue
        low = raw.lower().replace("’", "'")
        if low.endswith("n't"):
            base = _CONTRACTIONS.get(low, low[:-3])
            out.append(Token(base, _norm(base)[0], paren=depth))
            out.append(Token("not", "not", paren=depth))
            continue
        norm, figure = _norm(raw)
        name = raw[:1].isupper() and i > 0 and not figure
        out.append(Token(raw, norm, name=name, figure=figure, paren=depth))
    return out


def words_of(toks: list[Token]) -> list[Token]:
    return [t for t in toks if not t.punct]


def essential(toks: list[Token]) -> list[Token]:
    """The claim words that must all be found: every word but articles."""
    return [t for t in toks if not t.punct and t.lower not in FILLERS]


# Comparisons a figure can be checked against: "more than 100" against "120".
_COMPARATORS: dict[tuple[str, ...], str] = {
    ("more", "than"): ">",
    ("over",): ">",
    ("greater", "than"): ">",
    ("at", "least"): ">=",
    ("less", "than"): "<",
    ("fewer", "than"): "<",
    ("under",): "<",
    ("at", "most"): "<=",
    ("nearly",): "~<",
    ("almost",): "~<",
    ("about",): "~",
    ("approximately",): "~",
    ("around",): "~",
    ("roughly",): "~",
}


def _value(token: Token) -> float | None:
    try:
        return float(token.norm)
    except ValueError:
        return None


def comparison_holds(claim_side: list[Token], sentence_side: list[Token]) -> bool | None:
    """``True``/``False`` when the claim side is "<comparator> <figure>" and the sentence
    side one figure; ``None`` when it is no such comparison."""
    words = [t for t in claim_side if not t.punct]
    stated = [t for t in sentence_side if not t.punct]
    if len(stated) != 1 or not words or not words[-1].figure:
        return None
    op = _COMPARATORS.get(tuple(t.lower for t in words[:-1]))
    wanted, actual = _value(words[-1]), _value(stated[0])
    if op is None or wanted is None or actual is None:
        return None
    checks = {
        ">": actual > wanted,
        ">=": actual >= wanted,
        "<": actual < wanted,
        "<=": actual <= wanted,
        "~<": 0.9 * wanted <= actual < wanted,
        "~": abs(actual - wanted) <= 0.1 * abs(wanted),
    }
    return checks[op]


@dataclass
class Alignment:
    """How one claim lines up with one evidence sentence."""

    matched: int = 0  # essential claim words found in place
    missing: list[Token] = field(default_factory=list)  # essential claim words not found
    # (position in the claim, claim words, sentence words) put in each other's place
    swaps: list[tuple[int, list[Token], list[Token]]] = field(default_factory=list)
    comparisons_held: int = 0
    blocked: list[str] = field(default_factory=list)  # why it is not a plain statement

    @property
    def states(self) -> bool:
        return self.matched > 0 and not (self.missing or self.swaps or self.blocked)


def _gap_problem(gap: list[Token], following: Token | None) -> str:
    """Why the sentence's words between two matched runs of the claim change its meaning
    ("" when they are a harmless aside)."""
    if gap and all(t.paren > 0 or t.text in "()[]" for t in gap):
        return ""  # a parenthesis: an aside
    words = [t for t in words_of(gap) if t.lower not in FILLERS]
    if len(words) == 1 and words[0].lower in ("who", "which", "that"):
        return ""  # "Matt Groening who named …" states "Matt Groening named …"
    for t in words:
        if t.figure or t.lower in GAP_BLOCKERS:
            return f'the sentence has "{t.text}" between the claim\'s words'
    if len(words) > MAX_GAP_WORDS:
        return "the sentence says more between the claim's words than can be checked"
    names = [t for t in words if t.name]
    # One capitalised word before a lowercase word is an adjective ("a Danish actress");
    # before another name it may make a different name ("Mary Jones" for "Jones").
    adjective = len(words) == 1 and following is not None and not following.name
    if names and not adjective:
        return f'the sentence names "{names[0].text}" between the claim\'s words'
    return ""


def _clause_words(sentence: list[Token], start: int, stop: int, step: int) -> list[Token]:
    out: list[Token] = []
    i = start
    while 0 <= i < len(sentence) and i != stop:
        if sentence[i].punct:
            break
        out.append(sentence[i])
        i += step
    return out


def _edge_problem(sentence: list[Token], first: int, last: int) -> str:
    outside = sentence[:first] + sentence[last + 1 :]
    for t in outside:
        if t.lower in SENTENCE_BLOCKERS:
            return f'the sentence qualifies it with "{t.text}"'
    before = _clause_words(sentence, first - 1, -1, -1)
    after = _clause_words(sentence, last + 1, len(sentence), 1)
    for t in before:
        if t.lower in PREFIX_BLOCKERS:
            return f'the sentence qualifies it with "{t.text}"'
    for t in after:
        if t.lower in SUFFIX_BLOCKERS:
            return f'the sentence qualifies it with "{t.text}"'
    return ""


def _single_name_after(gap: list[Token], sentence: list[Token], j2: int) -> bool:
    """A one-word capitalised gap before a lowercase word ("a Danish actress") is an
    adjective; before another name ("Mary Jones") it may be part of a different name."""
    words = words_of(gap)
    if len(words) == 1 and words[0].name:
        nxt = sentence[j2] if j2 < len(sentence) else None
        return nxt is None or nxt.name
    return False


def align(claim: list[Token], sentence: list[Token]) -> Alignment:
    """Line ``claim`` up with ``sentence`` (both from :func:`tokens`)."""
    ops = SequenceMatcher(
        None, [t.norm for t in claim], [t.norm for t in sentence], autojunk=False
    ).get_opcodes()
    equal = [op for op in ops if op[0] == "equal"]
    result = Alignment()
    if not equal:
        result.missing = essential(claim)
        return result
    first, last = equal[0][3], equal[-1][4] - 1
    for tag, i1, i2, j1, j2 in ops:
        needed = essential(claim[i1:i2])
        if tag == "equal":
            result.matched += len(needed)
        elif not needed:
            if first <= j1 and j2 - 1 <= last and j2 > j1:
                following = sentence[j2] if j2 < len(sentence) else None
                problem = _gap_problem(sentence[j1:j2], following)
                if problem:
                    result.blocked.append(problem)
        elif tag == "delete":
            result.missing.extend(needed)
        elif comparison_holds(claim[i1:i2], sentence[j1:j2]):
            result.comparisons_held += 1
            result.matched += len(needed)
        else:
            result.swaps.append((i1, claim[i1:i2], sentence[j1:j2]))
    edge = _edge_problem(sentence, first, last)
    if edge:
        result.blocked.append(edge)
    return result


# ---------------------------------------------------------------------------------------
# Claims against the evidence

COMPARATOR_WORDS = frozenset(w for key in _COMPARATORS for w in key)


@dataclass
class Sentence:
    text: str
    source: str  # the tool result label, e.g. "R3 read_document result"
    toks: list[Token]
    norms: frozenset[str]


def sentence(text: str, source: str) -> Sentence:
    toks = tokens(text)
    return Sentence(text, source, toks, frozenset(t.norm for t in toks if not t.punct))


@dataclass
class Finding:
    verdict: str  # supported, contradicted or unsupported
    support: list[Sentence] = field(default_factory=list)
    contradiction: Sentence | None = None
    conflict: Sentence | None = None
    note: str = ""


def _figure_swap(claim: list[Token], at: int, mine: list[Token], theirs: list[Token]) -> bool:
    """The same statement with another figure in the claim's figure's place."""
    needed = essential(mine)
    stated = words_of(theirs)
    if not needed or not stated or not all(_plain_figure(t) for t in needed + stated):
        return False
    if at > 0 and claim[at - 1].lower in LIMITERS | COMPARATOR_WORDS:
        return False  # "more than 120" states "more than 100" too: not a contradiction
    if len(needed) == 1 and len(stated) == 1 and _rounded(needed[0], stated[0]):
        return False  # "50 million" for "49.8 million" may be rounding: a person decides
    return not ({t.norm for t in needed} & {t.norm for t in stated})


def _plain_figure(token: Token) -> bool:
    """A number, number word or ordinal; not "1990s" or "19th" (a decade holds its years)."""
    return token.figure and not any(ch.isalpha() for ch in token.text if token.text[:1].isdigit())


def _rounded(mine: Token, theirs: Token) -> bool:
    a, b = _value(mine), _value(theirs)
    if a is None or b is None or a == b:
        return False
    if all(v.is_integer() and 1000 <= v <= 2100 for v in (a, b)):
        return False  # years: one year off is another year
    return abs(a - b) <= ROUNDING * max(abs(a), abs(b))


_DEMONYM_RE = re.compile(r"(ish|ese|ian|an|ean|ic|i|ch)$")


def _name_swap(mine: list[Token], theirs: list[Token], vocabulary: set[str]) -> bool:
    """Another name in the place of a claim's name that the evidence never mentions."""
    needed = essential(mine)
    stated = words_of(theirs)
    if not needed or len(needed) != len(stated):
        return False
    if not all(t.name and len(t.text) >= 3 for t in needed + stated):
        return False
    if any(_DEMONYM_RE.search(t.lower) for t in needed + stated):
        return False  # "British" for "English" may be true: a person decides
    if any(t.lower in vocabulary for t in needed):
        return False
    return not any(
        a.lower[:3] == b.lower[:3] or a.lower.startswith(b.lower) or b.lower.startswith(a.lower)
        for a in needed
        for b in stated
    )


def contradicts(
    claim: list[Token], alignment: Alignment, vocabulary: set[str], min_matched: int = 3
) -> bool:
    """The sentence states the claim with another figure or name in its place."""
    if alignment.missing or alignment.blocked or not alignment.swaps:
        return False
    if alignment.matched < min_matched:
        return False
    for at, mine, theirs in alignment.swaps:
        if comparison_holds(mine, theirs) is False:
            continue
        if not (_figure_swap(claim, at, mine, theirs) or _name_swap(mine, theirs, vocabulary)):
            return False
    return True


def _candidates(claim: list[Token], evidence: list[Sentence], slack: int) -> list[Sentence]:
    need = {t.norm for t in essential(claim)}
    scored = [(len(need - s.norms), i, s) for i, s in enumerate(evidence)]
    return [s for miss, _i, s in sorted(scored, key=lambda x: (x[0], x[1])) if miss <= slack][:60]


def name_runs(claim: list[Token]) -> list[str]:
    """Multi-word names of the claim ("Mark L. Lester"), as written."""
    runs: list[list[Token]] = []
    for i, t in enumerate(claim):
        starts = t.name or (i == 0 and len(claim) > 1 and claim[1].name and t.text[:1].isupper())
        if starts and not t.punct and t.lower not in FILLERS:
            if runs and runs[-1][-1] is claim[i - 1] and i > 0:
                runs[-1].append(t)
            else:
                runs.append([t])
    return [" ".join(t.text for t in run) for run in runs if len(run) > 1]


def spliced_names(claim: list[Token], evidence_text: str, vocabulary: set[str]) -> list[str]:
    """Names whose words all occur in the evidence, but never together."""
    flat = re.sub(r"[^a-z0-9]+", " ", evidence_text.lower())
    out = []
    for run in name_runs(claim):
        words = run.lower().split()
        joined = re.sub(r"[^a-z0-9]+", " ", run.lower()).strip()
        if all(w.strip(".") in vocabulary for w in words) and f" {joined} " not in f" {flat} ":
            out.append(run)
    return out


def check(
    claim_text: str, evidence: list[Sentence], vocabulary: set[str], evidence_text: str = ""
) -> Finding:
    """Supported, contradicted or unsupported, with the sentence(s) that show it."""
    claim = tokens(claim_text)
    closest: Alignment | None = None
    contradiction = None
    for s in _candidates(claim, evidence, slack=3):
        alignment = align(claim, s.toks)
        if alignment.states:
            return Finding("supported", [s], conflict=_conflict(claim, s, evidence, vocabulary))
        if contradiction is None and contradicts(claim, alignment, vocabulary):
            contradiction = s
        if closest is None or alignment.matched > closest.matched:
            closest = alignment
    if contradiction is not None:
        return Finding("contradicted", contradiction=contradiction)
    computed = compute_relation(claim_text, evidence)
    if computed is not None:
        return computed
    return Finding("unsupported", note=_why_not(claim, closest, evidence_text, vocabulary))


def _conflict(
    claim: list[Token], support: Sentence, evidence: list[Sentence], vocabulary: set[str]
) -> Sentence | None:
    """Another sentence stating the same thing with other figures, in another source or
    in the supporting one (a page that disagrees with itself, or forges a second block):
    a person decides."""
    if not any(t.figure for t in claim):
        return None
    for s in _candidates(claim, evidence, slack=2):
        if s is not support and contradicts(claim, align(claim, s.toks), vocabulary):
            return s
    return None


def _why_not(
    claim: list[Token], closest: Alignment | None, evidence_text: str, vocabulary: set[str]
) -> str:
    spliced = spliced_names(claim, evidence_text, vocabulary)
    if spliced:
        return f'"{spliced[0]}" does not occur as written in the evidence (its words occur apart).'
    if closest is None:
        return "No evidence sentence holds the claim's words."
    if closest.blocked:
        return f"The closest evidence sentence does not state it plainly: {closest.blocked[0]}."
    if closest.missing:
        shown = ", ".join(f'"{t.text}"' for t in closest.missing[:3])
        return f"The closest evidence sentence lacks {shown}: a paraphrase a person must check."
    if closest.swaps:
        _at, mine, theirs = closest.swaps[0]
        said = " ".join(t.text for t in theirs) or "something else"
        return (
            f'Where the claim says "{" ".join(t.text for t in mine)}" the closest evidence '
            f'sentence says "{said}".'
        )
    return "The evidence does not state it plainly."


# ---------------------------------------------------------------------------------------
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
    value = _NUMBER_WORDS.get(low)
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
