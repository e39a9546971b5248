"""What the entailment model reads in the evidence for one claim: the premise that best
entails it, and any sentence about the same fact that contradicts it.

Premises are the evidence sentences that share the most content words with the claim
(``CANDIDATES``), and for the first of them its tool result whole when short
(``WHOLE_CHARS``), else with the sentence before it (what "It" or "He" names). A claim
the rules found stated word for word has only its support read. Only these pairs are
scored: an answer is not compared with every sentence of every document.

A sentence *contradicts* the claim when the model reads a contradiction either way round
(sentence then claim, claim then sentence) with at least ``CONTRADICTS`` probability,
it states something (a heading does not), it speaks of the same fact (``SAME_FACT_SHARE``),
the rules do not read it as about another subject or kind, and it comes from another
tool result than the claim's support.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from django.conf import settings

from evidence_app.offline_judge.answer_text import content_words
from evidence_app.offline_judge.claim_words import sentence_words, subject_of, unpossessed
from evidence_app.offline_judge.disputes import SAME_FACT_SHARE, about_something_else
from evidence_app.offline_judge.entailment import EntailmentModel, shared_model
from evidence_app.offline_judge.wording import Finding, Sentence, essential, tokens

__all__ = ["Reading", "read_claim", "with_meaning"]

CANDIDATES = 3
WHOLE_CHARS = 600
# Contradiction probability (the sentence read given the claim) from which a sentence
# about the same fact disputes a claim.
CONTRADICTS = 0.4
# Contradiction probability from which a sentence that is not about the same fact (it
# shares a word or two with the claim) disputes it.
FAR_CONTRADICTS = 0.95
# A sentence that entails the claim with at least this probability states it too.
AGREES = 0.5
# The rules' disputes stand whatever the model reads (figures, dates, names, updates,
# the opposite, another word in the claim's place: the model reads antonyms and numbers
# worse than the rules), but for "another kind of thing", which stands only when the
# model reads a contradiction too.
ANOTHER_KIND = "that it is something else"


@dataclass(frozen=True)
class Premise:
    text: str
    sentences: tuple[Sentence, ...]


@dataclass(frozen=True)
class Reading:
    """The model's reading of one claim against the evidence."""

    entailment: float  # the best premise's entailment probability
    support: tuple[Sentence, ...]  # the sentences of that premise
    contradiction: float  # the most contradicting sentence's probability (0 when none)
    contradicting: Sentence | None


def _overlap(claim_words: frozenset[str], s: Sentence) -> int:
    return len(claim_words & s.norms)


def _premises(
    claim_words: frozenset[str], evidence: list[Sentence]
) -> tuple[list[Premise], list[Sentence]]:
    """The sentences sharing the most content words with the claim (``CANDIDATES``), and
    for the first of them its whole tool result when short (``WHOLE_CHARS``), else the
    sentence before it with it (what "It" or "He" names)."""
    ranked = sorted(
        (i for i, s in enumerate(evidence) if not s.text.rstrip().endswith("?")),
        key=lambda i: (-_overlap(claim_words, evidence[i]), i),
    )
    chosen = [i for i in ranked[:CANDIDATES] if _overlap(claim_words, evidence[i]) > 0]
    premises: dict[str, Premise] = {}
    for i in chosen:
        premises.setdefault(evidence[i].text, Premise(evidence[i].text, (evidence[i],)))
    if chosen:
        first = evidence[chosen[0]]
        source = tuple(s for s in evidence if s.source == first.source)
        whole = " ".join(s.text for s in source)
        if len(source) > 1 and len(whole) <= WHOLE_CHARS:
            premises.setdefault(whole, Premise(whole, source))
        elif chosen[0] > 0 and evidence[chosen[0] - 1].source == first.source:
            before = evidence[chosen[0] - 1]
            text = f"{before.text} {first.text}"
            premises.setdefault(text, Premise(text, (before, first)))
    return list(premises.values()), [evidence[i] for i in chosen]


# A sentence of fewer words ("Budget memo.") is a label, not a statement.
STATEMENT_WORDS = 3


def _states(sentence: Sentence) -> bool:
    """The sentence states something: it ends as a sentence does and has a few words (a
    heading, a title line or a label states nothing to contradict)."""
    words = [t for t in sentence.toks if any(c.isalnum() for c in t.text)]
    return len(words) >= STATEMENT_WORDS and sentence_words(sentence.toks, sentence.text).statement


def _same_fact(other: Sentence, claim_text: str, support: Iterable[Sentence]) -> bool:
    """Most of the sentence's content words are the claim's or its support's: it speaks of
    the same fact (a sentence about something else shares a few words at most)."""
    theirs = content_words(other.text)
    known = content_words(claim_text).union(*(content_words(s.text) for s in support))
    return bool(theirs) and len(theirs & known) / len(theirs) >= SAME_FACT_SHARE


def _figures(text: str) -> frozenset[str]:
    return frozenset(t.norm for t in tokens(text) if t.figure)


def _same_figures(other: Sentence, claim_text: str) -> bool:
    """The sentence states the claim's figures and no others, and nothing the claim does
    not say: whether they agree is for the rules, which read figures better than the
    model ("capped at EUR 120 a night" for "120 EUR per night" is no contradiction). One
    that puts the same figure somewhere else ("outlets in four Chinese towns" against
    "in Ireland outlets in four towns") is the model's to read."""
    mine = _figures(claim_text)
    if not mine or _figures(other.text) != mine:
        return False
    return content_words(other.text) <= content_words(claim_text)


def _rival_bars(
    claim_text: str, singles: list[Sentence], stated: tuple[Sentence, ...]
) -> dict[str, float]:
    """The sentences that may dispute the claim, each with the contradiction from which it
    does. Only a sentence about the same fact may (from any reading): one about something
    else is no dispute, whatever the model would read, and is not read. A sentence that
    shares only a few of the claim's words disputes it only when it names the claim's
    subject and the model is nearly sure (``FAR_CONTRADICTS``: "The Beach's director was
    Shah Rukh Khan" against "The Beach is a 2000 film directed by Danny Boyle"; not
    "Danny Boyle was born in Radcliffe", which the model also reads as contradicting):
    the one sharing most words with it is read, other sentences are not."""
    support_texts = _texts(stated)
    subject = subject_of(tokens(claim_text))
    bar: dict[str, float] = {}
    for s in singles:
        if s.text in support_texts or not _states(s) or _same_figures(s, claim_text):
            continue
        if _same_fact(s, claim_text, stated):
            bar[s.text] = 0.0
        elif subject & unpossessed(s.toks) and FAR_CONTRADICTS not in bar.values():
            bar[s.text] = FAR_CONTRADICTS
    return bar


def read_claim(
    claim_text: str,
    evidence: list[Sentence],
    model: EntailmentModel | None = None,
    *,
    stated: tuple[Sentence, ...] = (),
) -> Reading:
    """The best-entailing premise and the most contradicting sentence for the claim. A
    claim the rules found ``stated`` word for word needs no premise read: only the
    sentences that may contradict it are."""
    model = model or shared_model()
    claim_words = frozenset(t.norm for t in essential(tokens(claim_text)))
    premises, singles = _premises(claim_words, evidence)
    if not premises:
        return Reading(0.0, (), 0.0, None)
    if stated:
        premises = [Premise(" ".join(s.text for s in stated), stated)]
    bar = _rival_bars(claim_text, singles, stated)
    rivals = [s for s in singles if s.text in bar]
    pairs = [(p.text, claim_text) for p in premises]
    pairs += [(s.text, claim_text) for s in rivals] + [(claim_text, s.text) for s in rivals]
    scores = model.score(pairs)
    forward = dict(zip((p.text for p in premises), scores[: len(premises)], strict=True))
    rival_scores = scores[len(premises) :]
    best = max(premises, key=lambda p: forward[p.text].entailment)
    contradiction, contradicting = 0.0, None
    own_sources = {s.source for s in best.sentences}
    for k, s in enumerate(rivals):
        # Read both ways: a negation may read as entailed one way round only. Only
        # another tool result disputes by meaning: sentences of one document read as
        # contradicting each other are the model's mistake far more often than the
        # document's (the rules still read a document that disagrees with itself).
        p = max(rival_scores[k].contradiction, rival_scores[len(rivals) + k].contradiction)
        if max(rival_scores[k].entailment, rival_scores[len(rivals) + k].entailment) >= AGREES:
            # Another source stating it too, or stating part of it (the claim entails
            # the sentence): no rival.
            continue
        if p >= bar[s.text] and p > contradiction and s.source not in own_sources:
            contradiction, contradicting = p, s
    return Reading(forward[best.text].entailment, best.sentences, contradiction, contradicting)


# Entailment probability from which a claim the rules cannot verify word for word is
# supported by its best premise.
ENTAILS = 0.98
# Contradiction probability from which a claim nothing entails is contradicted (the
# answer is rejected and retried); below it, but from ``CONTRADICTS``, a person decides.
REJECTS = 0.95
# A dispute of the rules' other kinds stands when the model reads at least this much
# contradiction between the two sentences, either way round.
CONFIRMS = 0.3
DISPUTE_REASON = "the opposite, as the entailment model reads it"


# The rules' disputes read from words alone, which the model may overrule: another word
# or name in the claim's place, the opposite, another kind of thing.
WORD_DISPUTES = frozenset(
    {
        "the opposite",
        "another name in the claim's place",
        "another word in the claim's place",
        "other words in the claim's place",
        ANOTHER_KIND,
    }
)


def _words_misread(claim_text: str, sentence: Sentence, dispute: str) -> bool:
    """The model overrules a dispute the rules read from words alone: the claim entails
    the sentence (``ENTAILS``: it states a part of the claim in other words, "Mohra is an
    action movie" beside "Mohra is a 1994 Indian action thriller film"), or, for "that it
    is something else", it reads less than ``CONFIRMS`` contradiction between them."""
    forward, backward = shared_model().score(
        [(sentence.text, claim_text), (claim_text, sentence.text)]
    )
    if backward.entailment >= ENTAILS:
        return True
    contradiction = max(forward.contradiction, backward.contradiction)
    return dispute == ANOTHER_KIND and contradiction < CONFIRMS


def _texts(sentences: Iterable[Sentence]) -> set[str]:
    return {s.text for s in sentences}


def with_meaning(claim_text: str, finding: Finding, evidence: list[Sentence]) -> Finding:
    """The rules' finding for a claim, read again by the entailment model: a paraphrase
    the rules could not verify is supported when a premise entails it; a supported claim
    is disputed by a sentence that contradicts it; a contradiction found by the rules (a
    figure, a date, a name) stands."""
    if finding.verdict == "contradicted" or not settings.OFFLINE_JUDGE_READS_MEANING:
        return finding
    stated = tuple(finding.support) if finding.verdict == "supported" else ()
    r = read_claim(claim_text, evidence, stated=stated)
    read = replace(
        finding, entailment=round(r.entailment, 4), contradiction_p=round(r.contradiction, 4)
    )
    disputing = r.contradicting if r.contradiction >= CONTRADICTS else None
    if finding.verdict == "supported":
        if finding.conflict is not None:
            if finding.dispute not in WORD_DISPUTES:
                return read
            if not _words_misread(claim_text, finding.conflict, finding.dispute):
                return read
            read = replace(read, conflict=None, dispute="")
        if disputing is None or disputing.text in _texts(finding.support):
            return read
        if about_something_else(claim_text, finding.support[0], disputing):
            return read
        return replace(read, conflict=disputing, dispute=DISPUTE_REASON)
    if disputing is not None and disputing.text not in _texts(r.support):
        if r.entailment >= ENTAILS and not finding.objection:
            return replace(
                read,
                verdict="supported",
                support=list(r.support),
                entailed=True,
                conflict=disputing,
                dispute=DISPUTE_REASON,
                note="",
            )
        if r.contradiction >= REJECTS:
            return replace(read, verdict="contradicted", contradiction=disputing, note="")
        note = (
            f'The entailment model reads "{disputing.text}" as contradicting it '
            f"({r.contradiction:.0%}): a person must decide."
        )
        return replace(read, note=f"{finding.note} {note}".strip())
    if r.entailment >= ENTAILS and not finding.objection:
        note = f"Entailed by the cited passage, in other words ({r.entailment:.0%})."
        return replace(read, verdict="supported", support=list(r.support), entailed=True, note=note)
    return read


# A short answer ("Delhi") is read as the sentence "The answer to "<question>" is
# <answer>." against the evidence; it is supported only from this entailment probability.
SHORT_ENTAILS = 0.97


def short_hypothesis(request: str, answer: str) -> str:
    """The statement a short answer makes, as the model reads it."""
    question = " ".join(request.split()).rstrip(" ?.") + "?"
    return f'The answer to "{question}" is {answer.strip().rstrip(".")}.'


def with_short_meaning(
    request: str, answer: str, finding: Finding, evidence: list[Sentence]
) -> Finding:
    """A short answer the rules leave to a person, supported when the evidence entails
    it as the answer to the request (``short_hypothesis``) and nothing contradicts it."""
    if not settings.OFFLINE_JUDGE_READS_MEANING or not request.strip():
        return finding
    hypothesis = short_hypothesis(request, answer)
    r = read_claim(hypothesis, evidence)
    read = replace(
        finding, entailment=round(r.entailment, 4), contradiction_p=round(r.contradiction, 4)
    )
    if r.entailment >= SHORT_ENTAILS and r.contradiction < CONTRADICTS:
        note = f"Read as: {hypothesis} Entailed by the cited passage ({r.entailment:.0%})."
        return replace(read, verdict="supported", support=list(r.support), entailed=True, note=note)
    return read
