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

from evidence_app.offline_judge.alignment import Alignment, align, contradicts, plain_use
from evidence_app.offline_judge.disputes import disputing_sentence
from evidence_app.offline_judge.relations import compute_relation
from evidence_app.offline_judge.roles import role_objection
from evidence_app.offline_judge.wording import (
    CAPITAL,
    FILLERS,
    HEDGES,
    NEGATIONS,
    Finding,
    Sentence,
    Token,
    essential,
    flat,
    sentence,
    stem,
    tokens,
    words_of,
)

__all__ = [
    "Alignment",
    "Finding",
    "Sentence",
    "Token",
    "align",
    "check",
    "contradicts",
    "essential",
    "sentence",
    "spliced_names",
    "stem",
    "tokens",
    "words_of",
]


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


# Up to two capitalised words between a name's words are its middle names ("Alexandra
# Anna Daddario" is "Alexandra Daddario").
_MIDDLE_NAMES = rf"(?:\s+{CAPITAL}[\w.'’-]*){{0,2}}\s+"


def _written_whole(run: str, evidence_text: str) -> bool:
    """The name occurs in the evidence as one name: with middle names between its words,
    or in the plural ("Filmfare Awards")."""
    words = run.split()
    pattern = _MIDDLE_NAMES.join(re.escape(w) for w in words)
    return re.search(rf"(?<![\w-]){pattern}s?(?![\w-])", evidence_text) is not None


def spliced_names(claim: list[Token], evidence_text: str, vocabulary: set[str]) -> list[str]:
    """Names whose words all occur in the evidence, but never together."""
    evidence = f" {flat(evidence_text)} "
    out = []
    for run in name_runs(claim):
        words = run.lower().split()
        if not all(w.strip(".") in vocabulary for w in words) or f" {flat(run)} " in evidence:
            continue
        if not _written_whole(run, evidence_text):
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
            dispute = disputing_sentence(claim, claim_text, s, evidence, vocabulary)
            if dispute is None:
                return Finding("supported", [s])
            return Finding("supported", [s], conflict=dispute.sentence, dispute=dispute.reason)
        if contradiction is None and contradicts(claim, alignment, vocabulary):
            contradiction = s
        if closest is None or alignment.matched > closest.matched:
            closest = alignment
    if contradiction is not None:
        return Finding("contradicted", contradiction=contradiction)
    computed = compute_relation(claim_text, evidence)
    if computed is not None:
        return computed
    role = role_objection(claim, evidence)
    if role is not None:
        return Finding("unsupported", note=f"Not stated as claimed: {role}.", objection=True)
    return Finding(
        "unsupported",
        note=_why_not(claim, closest, evidence_text, vocabulary),
        objection=_objection(claim, closest, evidence_text, vocabulary),
    )


def _objection(
    claim: list[Token], closest: Alignment | None, evidence_text: str, vocabulary: set[str]
) -> bool:
    """The closest sentence fails the claim on what words show exactly: a name spliced
    from two, a negation, hedge, tense or role in the way, another name or figure in the
    claim's place. No reading of its meaning may then support the claim."""
    if spliced_names(claim, evidence_text, vocabulary):
        return True
    if closest is None:
        return False
    if any(b.objection for b in closest.blocked):
        return True  # a negation, hedge or qualifier around or between the claim's words
    if any(_hedged_swap(claim, at, mine, theirs) for at, mine, theirs in closest.swaps):
        return True  # "appeared to be" for "was"
    return any(_exact_swap(claim, at, mine, theirs) for at, mine, theirs in closest.swaps)


def _hedged_swap(claim: list[Token], at: int, mine: list[Token], theirs: list[Token]) -> bool:
    """The few words the sentence has in the claim's place negate or hedge it ("appeared
    to be" for "was"), and the claim does not. A longer stretch says it otherwise: the
    model reads it."""
    if len(theirs) > SWAP_WORDS:
        return False
    own = {stem(t.lower) for t in claim}
    # What follows the swap is the claim's next word: "also appeared" before "in".
    read = theirs + claim[at + len(mine) : at + len(mine) + 1]
    return any(
        t.lower in NEGATIONS | HEDGES and not plain_use(read, k) and stem(t.lower) not in own
        for k, t in enumerate(theirs)
    )


def _exact_swap(claim: list[Token], at: int, mine: list[Token], theirs: list[Token]) -> bool:
    """One word or name of the claim's put in another's place, as words show it."""
    if len(mine) > SWAP_WORDS or len(theirs) > SWAP_WORDS:
        return False  # the sentence says it otherwise: for the model to read
    words = {t.lower for t in mine + theirs}
    if any(t.name or t.figure for t in mine) and any(t.name or t.figure for t in theirs):
        return True  # another name or figure in the claim's place
    if words & _PRESENT and words & _PAST:
        return True  # "is" for "was": what held is not what holds
    if len(mine) == 1 and len(theirs) == 1 and not (mine[0].punct or theirs[0].punct):
        return _one_word_swap(mine[0], theirs[0])
    after = claim[at + len(mine) : at + len(mine) + 2]
    return len(after) == 2 and after[0].lower in _ROLE_LINKS and after[1].name


def _one_word_swap(mine: Token, theirs: Token) -> bool:
    """One word for another, the rest the same ("raises" for "lowers"), but for "It" where
    the claim names its subject (whom it names is for the model to read), a linking verb
    ("stars" for "is") or another spelling ("license" for "licence")."""
    if theirs.lower in _REFERRING and mine.text[:1].isupper():
        return False
    one, other = mine.lower, theirs.lower
    return not ({one, other} & _LINKING or _spelled_otherwise(one, other))


# A swap of at most this many words a side is one word or name for another.
SWAP_WORDS = 3
# A pronoun standing where the claim names someone or something.
_REFERRING = frozenset({"he", "she", "it", "they"})
# Linking verbs: one in another word's place says it otherwise, it is no opposite.
_LINKING = frozenset({"is", "are", "was", "were", "be", "been", "being"})
# British and American spellings of one word ("licence", "colour", "organise").
_SPELLINGS = (("our", "or"), ("ise", "ize"), ("isa", "iza"), ("ence", "ense"), ("tre", "ter"))


def _spelled_otherwise(a: str, b: str) -> bool:
    if a == b or a[:3] != b[:3]:
        return False
    for british, american in _SPELLINGS:
        if a.replace(british, american) == b.replace(british, american):
            return True
    return False


_PRESENT = frozenset({"is", "are", "has", "have"})
_ROLE_LINKS = frozenset({"by", "of", "for", "to", "with"})
_PAST = frozenset({"was", "were", "had"})


def _why_not(
    claim: list[Token], closest: Alignment | None, evidence_text: str, vocabulary: set[str]
) -> str:
    spliced = spliced_names(claim, evidence_text, vocabulary)
    if spliced:
        return f'"{spliced[0]}" does not occur as written in the evidence (its words occur apart).'
    if closest is None:
        return "No evidence sentence holds the claim's words."
    if closest.blocked:
        return f"The closest evidence sentence does not state it plainly: {closest.blocked[0].why}."
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
