"""The words of ``offline:judge``'s grounding checks: tokens in the form compared
("1,750" is "1750", "four" is "4", be-forms match each other, words are stemmed), the
word lists that block a plain statement, comparisons a figure can be checked against,
and the evidence sentences and findings the checks pass around."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

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

NUMBER_WORDS = {
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
# A letter of any script (Python's ``re`` has no ``\p{L}``), and a capital and a small
# letter of any script, for a regular expression's character class: "Müller" is one word, "Émile" a
# capitalised one.
LETTER = r"[^\W\d_]"


def _ranges(test: Callable[[str], bool]) -> str:
    """The characters of the Basic Multilingual Plane ``test`` holds for, as the inside of
    a character class (runs written ``a-z``)."""
    runs: list[tuple[int, int]] = []
    for code in range(0x10000):
        if test(chr(code)):
            if runs and runs[-1][1] == code - 1:
                runs[-1] = (runs[-1][0], code)
            else:
                runs.append((code, code))
    return "".join(
        re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in runs
    )


CAPITAL = f"[{_ranges(str.isupper)}]"
SMALL = f"[{_ranges(str.islower)}]"
_TOKEN_RE = re.compile(rf"\d[\d,.:/]*\d|\d|{LETTER}(?:{LETTER}|['’\-])*|[(),;:\[\]]")
_NOT_WORD_RE = re.compile(r"[\W_]+")


def flat(text: str) -> str:
    """The text lower-cased, every run of what is not a letter or digit one space, no
    space at either end: how a name or a phrase is looked for in the evidence whatever
    its punctuation ("Coster-Waldau" is "coster waldau")."""
    return _NOT_WORD_RE.sub(" ", text.lower()).strip()


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
    if low in NUMBER_WORDS:
        return NUMBER_WORDS[low], True
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


def value(token: Token) -> float | None:
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
    wanted, actual = value(words[-1]), value(stated[0])
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


COMPARATOR_WORDS = frozenset(w for key in _COMPARATORS for w in key)


def plain_figure(token: Token) -> bool:
    """A number, number word or ordinal; not "1990s" or "19th" (a decade holds its years)."""
    return token.figure and not any(ch.isalpha() for ch in token.text if token.text[:1].isdigit())


def rounded(mine: Token, theirs: Token) -> bool:
    """Two figures close enough to be one rounded (never two years)."""
    a, b = value(mine), value(theirs)
    if a is None or b is None or a == b:
        return False
    if all(v.is_integer() and 1000 <= v <= 2100 for v in (a, b)):
        return False  # years: one year off is another year
    return abs(a - b) <= ROUNDING * max(abs(a), abs(b))


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
    conflict: Sentence | None = None  # another sentence disputing a supported claim
    dispute: str = ""  # what that sentence states: "other figures", "the opposite", …
    note: str = ""
    # The entailment model's reading (None where it did not read the claim): how likely
    # the best premise entails the claim, how likely a sentence contradicts it, and
    # whether the claim is supported by that reading rather than word for word.
    entailment: float | None = None
    contradiction_p: float = 0.0
    entailed: bool = False
    # The rules found what keeps the closest sentence from stating the claim (a spliced
    # name, a negation or hedge in the way, another name or figure in its place).
    objection: bool = False


# Words that say nothing about the subject: never count as shared.
FUNCTION_WORDS = (
    FILLERS
    | ROLE_WORDS
    | frozenset(
        """and or but in on at per is are was were be been being has have had do does did
    this that these those it its they their there here which what when where also than
    then not no very all each every some any such only""".split()
    )
)
