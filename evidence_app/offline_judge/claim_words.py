"""A sentence's words as the embedded judge's dispute rules read them: its content words,
its names, where its subject ends, which words negate or narrow it, and the claim the
other sentences are read against."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from evidence_app.offline_judge.quantities import (
    CALENDAR,
    UNITS,
    Quantity,
)
from evidence_app.offline_judge.wording import (
    FILLERS,
    FUNCTION_WORDS,
    ROLE_WORDS,
    Token,
    stem,
)

# Words that turn a statement into its opposite or narrow it ("only", "former").
POLARITY = frozenset(
    """not no never none neither nor cannot nobody nothing nowhere refused refuses denied
    denies deny failed fails only former formerly ex declined declines rejected rejects
    excludes excluded zero exclusively solely incapable lack lacks lacked lacking
    impossible""".split()
)


LIMITING = frozenset({"only", "exclusively", "solely"})


_NOT_PRIVATIVE_UN = ("under", "unit", "union", "uniq", "unive", "until", "unifo", "unles")


PRONOUNS = frozenset("he she it they his her its their him them these those".split())


# Who the text speaks to or for ("your manager", "our offices"): no subject a sentence
# shares with another.
PERSONAL = frozenset("you your yours yourself we our ours us i me my".split())


VERBISH = frozenset({"be", "was", "have", "do"})


POLARITY_SHARE = 0.6


@dataclass
class Words:
    """The content words, polarity and names of one text."""

    content: set[str]
    negated: bool
    limited: bool  # "only", "exclusively": it narrows what it says
    names: list[tuple[int, str]]  # (position, lower-case name)
    verb_at: int  # position of the first verb-like word (the subject ends there)
    length: int
    statement: bool  # ends as a sentence does (a heading states nothing)


def negating(token: Token) -> bool:
    low = token.lower
    if low in POLARITY:
        return True
    return low.startswith("un") and len(low) >= 6 and not low.startswith(_NOT_PRIVATIVE_UN)


def _subject_word(t: Token) -> bool:
    """A content word: no function word, figure, unit, negation or "you", "our"."""
    return is_content(t) and t.lower not in UNITS and t.lower not in PERSONAL and not negating(t)


def name_word(i: int, t: Token) -> bool:
    """A name (the first word too, when capitalised), not a month or a currency."""
    capital = t.name or (i == 0 and t.text[:1].isupper() and t.lower not in FUNCTION_WORDS)
    return capital and len(t.text) >= 2 and t.lower not in CALENDAR and t.lower not in UNITS


def _verb_at(toks: list[Token]) -> int:
    verbs = (i for i, t in enumerate(toks) if t.norm in VERBISH or _past_form(t))
    found = next(verbs, None)
    return present_verb_at(toks) if found is None else found


def present_verb_at(toks: list[Token]) -> int:
    """Without a form of "be", "have", "do" or a past form, the first word in lower case
    ending in "s" after the opening words ("Poldark airs on …", "The holiday freeze covers
    …"), else the sentence's length."""
    for i, t in enumerate(toks[1:], start=1):
        if t.punct or t.lower in FUNCTION_WORDS or t.figure:
            continue
        if t.text[:1].islower() and t.lower.endswith("s") and not t.lower.endswith("ss"):
            return i
    return len(toks)


def _past_form(t: Token) -> bool:
    return t.lower.endswith("ed") and not t.name


def sentence_words(toks: list[Token], text: str = "") -> Words:
    content = {t.norm for t in toks if _subject_word(t)}
    verb_at = _verb_at(toks)
    names = [(i, t.lower) for i, t in enumerate(toks) if name_word(i, t)]
    limited = any(t.lower in LIMITING for t in toks)
    negated = _negated(toks)
    statement = text.rstrip().endswith((".", "!", '."', ".)"))
    return Words(content, negated, limited, names, verb_at, len(toks), statement)


def _negated(toks: list[Token]) -> bool:
    """A word negates the sentence ("not", "refused", "has yet to write", "is something
    other than a film"); "approves or declines" offers a choice and negates nothing, nor
    does "staff other than contractors" (an exception)."""
    low = [t.lower for t in toks]
    if any(a == "yet" and b == "to" for a, b in zip(low, low[1:], strict=False)):
        return True
    if any(
        a in ("something", "anything") and b == "other" and c == "than"
        for a, b, c in zip(low, low[1:], low[2:], strict=False)
    ):
        return True
    return any(
        negating(t) and t.lower not in LIMITING and not (i and toks[i - 1].lower == "or")
        for i, t in enumerate(toks)
    )


def known_name(name: str, vocabulary: set[str]) -> bool:
    """The name, or a spelling sharing its first four letters, is in ``vocabulary``."""
    return name in vocabulary or any(
        len(name) >= 4 and len(w) >= 4 and w[:4] == name[:4] for w in vocabulary
    )


@dataclass
class Claim:
    toks: list[Token]
    text: str
    words: Words
    quantities: list[Quantity]
    known: set[str]  # lower-case words of the claim and its supporting sentence

    @cached_property
    def head(self) -> frozenset[str]:
        """What the claim is about (``subject_head``), read once per claim."""
        return subject_head(self.toks, self.words.verb_at)

    @cached_property
    def known_forms(self) -> set[str]:
        """The claim's content words and the stem of every word in ``known``."""
        return {stem(w) for w in self.known} | self.words.content


def subject_of(toks: list[Token]) -> frozenset[str]:
    """The content words of a sentence's subject: those before its first verb."""
    words = sentence_words(toks)
    return frozenset(t.norm for t in toks[: words.verb_at] if t.norm in words.content)


# Words that begin a phrase about something the subject has, or where or when it is
# ("Mailboxes of former employees", "Employees in Germany"): the subject's own words
# come before them.
_PHRASE_WORDS = ROLE_WORDS | frozenset(
    "in on at during after before per within under over and or if when".split()
)


def subject_head(toks: list[Token], verb_at: int) -> frozenset[str]:
    """The words that name what the sentence is about: those before its verb, after an
    opening phrase set off by a comma ("Formally, in Germany a parental leave request
    must …": parental, leave, request), up to the first word that begins a phrase about
    something else ("Mailboxes of former employees": mailboxes); of those, the last (the
    head: "The release dashboard" is a dashboard) and the names. None when the subject
    is a pronoun or left out ("Post this in the channel").

    A word in lower case ending in "s" before a later verb may be the verb ("Fully remote
    employees observe the holidays of the location named in …"): the subject is read
    before it first, and before the verb when that leaves none ("During business hours,
    a member of the team answers")."""
    return _head_before(toks[: min(verb_at, present_verb_at(toks))]) or _head_before(toks[:verb_at])


def _head_before(before: list[Token]) -> frozenset[str]:
    words = before[max((i + 1 for i, t in enumerate(before) if t.punct), default=0) :]
    if words and words[0].lower in _PHRASE_WORDS:
        # "In Germany a request …": the subject starts at its article.
        article = next((i for i, t in enumerate(words) if t.lower in FILLERS), len(words))
        words = words[article:]
    words = words[: present_verb_at(words)]
    phrase: list[Token] = []
    for t in words:
        if t.lower in _PHRASE_WORDS and phrase:
            break
        if is_content(t):
            phrase.append(t)
    if not phrase:
        return frozenset()
    # Its last word and its names: "The release dashboard" is a dashboard.
    return frozenset(t.norm for t in phrase if t.name) | {phrase[-1].norm}


def unpossessed(toks: list[Token]) -> set[str]:
    """The sentence's words, "Beach's" read as "Beach"."""
    return {t.norm.removesuffix("'s").rstrip("'") for t in toks}


def is_content(token: Token) -> bool:
    low = token.lower
    return not token.punct and not token.figure and len(low) >= 3 and low not in FUNCTION_WORDS


def akin(word: str, others: list[str]) -> bool:
    """The same word in another form ("Italian" for "Italy", "named" for "name")."""
    return any(len(word) >= 4 and len(o) >= 4 and word[:4] == o[:4] for o in others)


def content_count(toks: list[Token]) -> int:
    return sum(1 for t in toks if is_content(t))


def names_only(toks: list[Token]) -> bool:
    return bool(toks) and all(t.name for t in toks)
