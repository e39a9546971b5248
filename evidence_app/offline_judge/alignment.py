"""How a claim lines up with one evidence sentence (``offline:judge``): which of its
words the sentence states in place, what it has in between, and whether it states the
same thing with another figure or name in its place (a contradiction)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from difflib import SequenceMatcher

from evidence_app.offline_judge.wording import (
    COMPARATOR_WORDS,
    FILLERS,
    GAP_BLOCKERS,
    HEDGES,
    LIMITERS,
    MAX_GAP_WORDS,
    NEGATIONS,
    PREFIX_BLOCKERS,
    SENTENCE_BLOCKERS,
    SUFFIX_BLOCKERS,
    Token,
    comparison_holds,
    essential,
    plain_figure,
    rounded,
    words_of,
)


@dataclass(frozen=True)
class Blocker:
    """Why the sentence does not state the claim plainly, and whether it is an objection:
    a negation, hedge, limiter or qualifier around or between the claim's words, which
    no reading of meaning may overrule ("usually" or "not" between them). A figure, a
    role word, a name or more words than can be checked between them, or a hedge inside
    an aside, are left for the model to read."""

    why: str
    objection: bool = False


@dataclass
class Alignment:
    """How one claim lines up with one evidence sentence."""

    matched: int = 0  # essential claim words found in place
    missing: list[Token] = field(default_factory=list)  # essential claim words not found
    # (position in the claim, claim words, sentence words) put in each other's place
    swaps: list[tuple[int, list[Token], list[Token]]] = field(default_factory=list)
    comparisons_held: int = 0
    blocked: list[Blocker] = field(default_factory=list)  # why it is not a plain statement

    @property
    def states(self) -> bool:
        return self.matched > 0 and not (self.missing or self.swaps or self.blocked)


def _gap_problem(gap: list[Token], following: Token | None) -> Blocker | None:
    """Why the sentence's words between two matched runs of the claim change its meaning
    (None when they are a harmless aside)."""
    if gap and all(t.paren > 0 or t.text in "()[]" for t in gap):
        return None  # a parenthesis: an aside
    words = [t for t in words_of(gap) if t.lower not in FILLERS]
    if len(words) == 1 and words[0].lower in ("who", "which", "that"):
        return None  # "Matt Groening who named …" states "Matt Groening named …"
    blocker = _blocker(words)
    if blocker:
        return blocker
    if len(words) > MAX_GAP_WORDS:
        return Blocker("the sentence says more between the claim's words than can be checked")
    names = [t for t in words if t.name]
    # One capitalised word before a lowercase word is an adjective ("a Danish actress");
    # before another name it may make a different name ("Mary Jones" for "Jones").
    adjective = len(words) == 1 and following is not None and not following.name
    if names and not adjective:
        return Blocker(f'the sentence names "{names[0].text}" between the claim\'s words')
    return None


def _blocker(words: list[Token]) -> Blocker | None:
    """The first figure, negation, hedge, limiter or role word among the words between
    the claim's. A negation, hedge or limiter is an objection, but for one in an aside,
    which qualifies the aside ("(also romanized Qur'an or Koran)"), and "about" before a
    figure the claim omits, which qualifies that figure ("about 6,852 islands" for
    "islands")."""
    for k, t in enumerate(words):
        if t.figure:
            return Blocker(f'the sentence has "{t.text}" between the claim\'s words')
        if t.lower not in GAP_BLOCKERS or plain_use(words, k):
            continue
        if t.paren > 0:
            return Blocker(f'the sentence has "{t.text}" in an aside between the claim\'s words')
        if t.lower in APPROXIMATE and k + 1 < len(words) and words[k + 1].figure:
            return Blocker(f'the sentence has "{words[k + 1].text}" between the claim\'s words')
        return Blocker(
            f'the sentence has "{t.text}" between the claim\'s words',
            objection=t.lower in NEGATIONS | HEDGES | LIMITERS,
        )
    return None


def _clause_words(sentence: list[Token], start: int, stop: int, step: int) -> list[Token]:
    out: list[Token] = []
    i = start
    while 0 <= i < len(sentence) and i != stop:
        if sentence[i].punct:
            break
        out.append(sentence[i])
        i += step
    return out


# Words that make a figure after them approximate.
APPROXIMATE = frozenset(
    "about approximately around roughly nearly almost over under some circa".split()
)
# "appeared in", "appears as": a plain statement of where or as what, not "appears to".
_APPEAR = frozenset({"appear", "appears", "appeared"})
_APPEAR_PLAIN = frozenset({"in", "on", "at", "as", "with", "alongside", "opposite"})


def plain_use(sentence: list[Token], i: int) -> bool:
    """A blocking word used in a sense that qualifies nothing: the month in "12 May
    1950", "appeared in" a film, the genre "science fiction"."""
    t = sentence[i]
    before = sentence[i - 1] if i > 0 else None
    after = sentence[i + 1] if i + 1 < len(sentence) else None
    if t.text == "May":
        return any(n is not None and n.text[:1].isdigit() for n in (before, after))
    if t.lower in _APPEAR:
        return after is not None and after.lower in _APPEAR_PLAIN
    if t.lower == "fiction":
        return before is not None and before.lower == "science"
    return False


def _edge_problem(sentence: list[Token], first: int, last: int) -> Blocker | None:
    """A negation, hedge or qualifier around the claim's words: an objection."""
    outside = [*range(first), *range(last + 1, len(sentence))]
    for i in outside:
        if sentence[i].lower in SENTENCE_BLOCKERS and not plain_use(sentence, i):
            return _qualified(sentence[i])
    before = _clause_words(sentence, first - 1, -1, -1)
    after = _clause_words(sentence, last + 1, len(sentence), 1)
    for k, t in enumerate(before):
        if t.lower in PREFIX_BLOCKERS and not plain_use(sentence, first - 1 - k):
            return _qualified(t)
    for t in after:
        if t.lower in SUFFIX_BLOCKERS:
            return _qualified(t)
    return None


def _qualified(word: Token) -> Blocker:
    return Blocker(f'the sentence qualifies it with "{word.text}"', objection=True)


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


def _figure_swap(claim: list[Token], at: int, mine: list[Token], theirs: list[Token]) -> bool:
    """The same statement with another figure in the claim's figure's place."""
    needed = essential(mine)
    stated = words_of(theirs)
    if not needed or not stated or not all(plain_figure(t) for t in needed + stated):
        return False
    if at > 0 and claim[at - 1].lower in LIMITERS | COMPARATOR_WORDS:
        return False  # "more than 120" states "more than 100" too: not a contradiction
    if len(needed) == 1 and len(stated) == 1 and rounded(needed[0], stated[0]):
        return False  # "50 million" for "49.8 million" may be rounding: a person decides
    return not ({t.norm for t in needed} & {t.norm for t in stated})


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
