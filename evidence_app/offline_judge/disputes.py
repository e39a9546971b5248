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
supported). Other figures dispute from a sentence whose subject shares a word with the
claim's ("The following trainings must be completed within 14 days" says nothing of when
credits must be claimed); other years alone, the words' readings and a negation only
from a sentence about the same fact (most of its content words are the claim's or its
support's, or it names the claim's whole subject), a negation only when the subjects
share a word too.
Restating the claim in other words disputes nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from evidence_app.offline_judge.alignment import align, contradicts
from evidence_app.offline_judge.claim_words import (
    LIMITING,
    POLARITY_SHARE,
    PRONOUNS,
    Claim,
    Words,
    akin,
    is_content,
    known_name,
    name_word,
    negating,
    sentence_words,
    subject_head,
    subject_of,
    unpossessed,
)
from evidence_app.offline_judge.quantities import (
    FULL_MONTHS,
    Quantity,
    other_figures,
    quantities,
    same_quantity,
)
from evidence_app.offline_judge.substitutions import (
    opposite_said,
    other_kind,
    other_name_in_role,
    slot_swapped,
    word_swapped,
)
from evidence_app.offline_judge.wording import (
    CAPITAL,
    FILLERS,
    FUNCTION_WORDS,
    Sentence,
    Token,
    stem,
    tokens,
)

# What a sentence says was true before: the claim stating it states the past.
_PAST_RE = re.compile(
    r"\bno longer\b|\bnot any ?more\b|\bformerly\b|\bpreviously\b|"
    # "X used to be …", not "… is used to release …" or "a switch, used to …"
    r"(?<!\bis )(?<!\bare )(?<!\bwas )(?<!\bwere )(?<!\bbe )(?<!\bbeen )(?<!, )\bused to\b",
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
# Where the clause an update opens in begins: its subject follows.
_CLAUSE_RE = re.compile(
    r"[,;:()]|\b(?:that|which|who|whose|if|when|while|because|and|or|but|unless|although|"
    r"after|before|once)\b",
    re.IGNORECASE,
)
# A sentence about the same subject shares at least this many content words with the claim.
SAME_SUBJECT_WORDS = 2
# A sentence of the other polarity, or naming another name, disputes the claim when this
# share of its other content words is in the claim or its supporting sentence (it says
# the same thing, negated or of someone else).
RESTATED_SHARE = 0.5


@dataclass(frozen=True)
class Dispute:
    sentence: Sentence
    reason: str  # what it states: "other figures", "the opposite", …


def _other_months(other_toks: list[Token], claim: Claim) -> bool:
    """Both give dates with months, none the same ("in March 1964" against "in August
    1964"; "until January" is no date)."""
    theirs, mine = _dated_months(other_toks), _dated_months(claim.toks)
    return bool(theirs and mine) and not theirs & mine


def _dated_months(toks: list[Token]) -> set[str]:
    """Months written out, capitalised, beside a figure ("17 November", "March 2019")."""
    out = set()
    for i, t in enumerate(toks):
        if t.lower not in FULL_MONTHS or not t.text[:1].isupper():
            continue
        beside = toks[max(0, i - 1) : i] + toks[i + 1 : i + 2]
        if any(b.text[:1].isdigit() for b in beside):
            out.add(t.lower)
    return out


def _about_other_subject(other: Words, other_toks: list[Token], claim: Claim) -> bool:
    """The sentence's subject is the claim's, qualified by a name the claim does not hold
    ("Hotel stays in London" against "Hotel stays on business trips"). A claim whose
    subject has no content word ("It", "The film") or holds a pronoun ("His widow") may be
    about any name."""
    before_verb = claim.toks[: claim.words.verb_at]
    claim_subject = {t.norm for t in before_verb} & claim.words.content
    if not claim_subject or any(t.lower in PRONOUNS for t in before_verb):
        return False  # "His widow, Elizabeth, …": whose is for the other sentence to say
    # The first word is capitalised anyway ("Since March …"): only a later one qualifies.
    # "The Leipzig office is at …" against "The headquarters address is …" too: another
    # subject, naming someone or something the claim does not.
    return any(0 < at < other.verb_at and not known_name(n, claim.known) for at, n in other.names)


def _same_subject(other: Words, other_toks: list[Token], claim: Claim) -> bool:
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
    if any(t.lower in PRONOUNS for t in claim.toks[: claim.words.verb_at]):
        return True
    # A name may be who the claim's "He" or "The film" is: only other words tell.
    subject = {t.norm for i, t in enumerate(other_toks[: other.verb_at]) if not name_word(i, t)}
    subject &= other.content
    return not subject or bool(shared & subject)


def _counted(toks: list[Token]) -> set[str]:
    """The words right after a figure, up to two: what it counts ("five working days")."""
    out = set()
    for i, t in enumerate(toks):
        if not t.figure:
            continue
        for b in toks[i + 1 : i + 3]:
            if b.punct or b.figure or b.lower in FUNCTION_WORDS:
                break
            out.add(b.norm)
    return out


def _shared_subject(other: Words, other_toks: list[Token], claim: Claim) -> bool:
    """Both subjects (the words before the verb) hold a word or name of the other's:
    what follows says something of the same thing."""
    theirs = {t.norm for t in other_toks[: other.verb_at] if is_content(t)}
    mine = {t.norm for t in claim.toks[: claim.words.verb_at] if is_content(t)}
    return bool(theirs & mine - _MODALS)


# What may stand before the verb without being what the sentence is about.
_MODALS = frozenset({"must", "may", "can", "could", "should", "would", "will", "shall", "might"})
# Words before the colon of a label ("People team: people@…", "`team`: the owning team").
LABEL_WORDS = 3


def _label_line(toks: list[Token]) -> bool:
    """The sentence opens with a label of a few words and a colon, no verb before it: it
    says what the label stands for, not something of the claim's subject."""
    colon = next((i for i, t in enumerate(toks[: LABEL_WORDS + 1]) if t.text == ":"), None)
    return colon is not None and sentence_words(toks[:colon]).verb_at >= colon


def _same_head(other: Words, other_toks: list[Token], claim: Claim) -> bool:
    """Both sentences are about the same thing, as their subjects' heads show: "Part-time
    employees receive four days" and "Mailboxes of former employees are deleted 90 days
    after" are not."""
    mine = claim.head
    theirs = subject_head(other_toks, other.verb_at)
    if not (mine and theirs):
        return True  # a pronoun or no subject: the words cannot tell
    return bool(theirs & mine - _MODALS)


def _opening_phrase(toks: list[Token]) -> list[Token]:
    """The words the sentence opens with, after its article, up to the first function
    word or punctuation ("The holiday freeze covers …": holiday, freeze, covers)."""
    start = 1 if toks and toks[0].lower in FILLERS else 0
    out: list[Token] = []
    for t in toks[start:]:
        if not is_content(t):
            break
        out.append(t)
    return out


def _another_kind(other_toks: list[Token], claim: Claim) -> bool:
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


def _years_only(claim: Claim, said: list[Quantity]) -> bool:
    """Only the years differ: the sentence may date another event of the same subject
    ("In 2014, Henrike Oltmanns joined as head of sales" against "In 2020 Henrike
    Oltmanns becomes CEO"), so it disputes only from a sentence about the same fact."""
    if any(q.kind == "year" and not _calendar_year(q) for q in [*claim.quantities, *said]):
        return False  # "for 30 years" against "born in 1948": a duration is no date
    return not other_figures(
        [q for q in claim.quantities if not _calendar_year(q)],
        [q for q in said if not _calendar_year(q)],
    )


def _calendar_year(q: Quantity) -> bool:
    """A year of the calendar ("in 2014"), not a duration ("for 30 years")."""
    return q.kind == "year" and q.value >= 1000


def _update_disputes(s: Sentence, other: Words, claim: Claim) -> bool | None:
    """``None`` when the sentence is no update of what the claim says; ``True`` when it
    says what no longer holds, or is an update or correction whose final value the
    claim does not state."""
    text = s.text
    past = _PAST_RE.search(text)
    if past:
        return True if _concerns_claim(s, other, past, claim) else None
    match = _UPDATE_RE.search(text)
    if match is None or not _concerns_claim(s, other, match, claim):
        return None
    tail = text[match.start() :]
    final = quantities(tail)
    if final:
        return not any(same_quantity(final[-1], q) for q in claim.quantities)
    names = re.findall(rf"\b{CAPITAL}[\w'’-]+", tail)
    return bool(names) and names[-1].lower() not in claim.known


def _concerns_claim(s: Sentence, other: Words, update: re.Match[str], claim: Claim) -> bool:
    """The ``update`` in the sentence is about what the claim says: it names one of
    the claim's amounts, or its subject (``_update_subject``) and one of the four words
    after it are the claim's in any form. "The old credentials no longer work" updates
    nothing of "The Security Lead secures evidence first"; "… and no longer." nothing."""
    start, end = update.span()
    said = quantities(s.text[start:])
    if any(same_quantity(q, c) for q in said for c in claim.quantities):
        return True  # "… was changed from 120 EUR …": the claim's own amount
    mine = claim.known_forms
    subject = _update_subject(s, other, start)
    if subject and not subject & mine:
        return False
    after = [t for t in tokens(s.text[end:]) if is_content(t)][:4]
    return any(t.norm in mine or stem(t.lower) in mine for t in after)


def _update_subject(s: Sentence, other: Words, start: int) -> set[str]:
    """The content words of the subject of the clause an update at ``start`` stands in:
    the sentence's, when the clause opens with it or holds a pronoun ("Laptops are
    replaced when they no longer …"); none (it may be anything) when a pronoun opens the
    sentence."""
    opening = _CLAUSE_RE.split(s.text[:start])
    clause = [t for t in tokens(opening[-1]) if not t.punct]
    pronoun = any(t.lower in PRONOUNS for t in clause)
    if pronoun and len(opening) == 1:
        return set()
    subject = set() if pronoun else {t.norm for t in clause if is_content(t)}
    if subject:
        return subject
    return {t.norm for t in s.toks[: other.verb_at] if is_content(t)}


def _restates(other: Words, claim: Claim) -> bool:
    """The sentence is a statement whose other content words are mostly the claim's or
    its supporting sentence's: it says the same thing, but for what differs."""
    names = {n for _at, n in other.names}
    plain = {w for w in other.content if w not in names}
    if other.verb_at >= other.length or len(other.content) < 2 or not plain:
        return False
    return len(plain & claim.known_forms) / len(plain) >= RESTATED_SHARE


def _polarity_disputes(other: Words, other_toks: list[Token], claim: Claim) -> bool:
    """One of the two is negated ("not", "never", "refused", "has yet to"), or the
    sentence narrows what the claim says ("only", "exclusively"), and the sentence's
    content words are mostly the claim's."""
    negated = other.negated != claim.words.negated
    narrowed = other.limited and not claim.words.limited
    if not (negated or narrowed) or len(other.content) < 2 or not other.statement:
        return False
    known = sorted(claim.known_forms)
    # The same word in another form counts ("has yet to write" against "a writer").
    said = [w for w in other.content if w != "yet"]
    shared = [w for w in said if w in known or akin(w, known)]
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
    at = next((i for i, t in enumerate(negated) if negating(t) or t.lower == "yet"), None)
    if at is None:
        return True
    words = sorted({t.lower for t in plain if not t.punct})
    after = [t for t in negated[at + 1 :] if not t.punct and t.lower not in FUNCTION_WORDS][:4]
    if any(t.lower in words or akin(t.lower, words) for t in after):
        return True
    # "only" naming what the plain sentence does not: "is only in Spanish" beside "a
    # Hindi song" narrows it to something else.
    return negated[at].lower in LIMITING and any(t.name for t in after)


def _limited_otherwise(other_toks: list[Token], other: Words, claim: Claim) -> bool:
    """Both narrow what they say ("only", "exclusively") to other things: "only sells
    women's clothing" against "caters exclusively to men's clothing"."""
    if not (other.limited and claim.words.limited):
        return False
    theirs = _limited_to(other_toks)
    mine = _limited_to(claim.toks)
    known = sorted(claim.known)
    other_words = sorted({t.lower for t in other_toks})
    new = [w for w in theirs if w not in claim.known and not akin(w, known)]
    missing = [w for w in mine if w not in other_words and not akin(w, other_words)]
    return bool(new) and bool(missing)


def _limited_to(toks: list[Token]) -> list[str]:
    """The content words among the four after the first "only", "exclusively" …"""
    at = next((i for i, t in enumerate(toks) if t.lower in LIMITING), len(toks))
    return [t.lower for t in toks[at + 1 :] if is_content(t)][:4]


def _mostly_known(other: Words, claim: Claim) -> bool:
    """Most of the sentence's content words are the claim's or its supporting sentence's."""
    names = {n for _at, n in other.names}
    plain = {w for w in other.content if w not in names}
    return bool(plain) and len(plain & claim.known_forms) / len(plain) >= POLARITY_SHARE


def _about_the_claim(other: Words, other_toks: list[Token], claim: Claim) -> bool:
    if _about_other_subject(other, other_toks, claim) or _another_kind(other_toks, claim):
        return False
    return _same_subject(other, other_toks, claim) or opposite_said(other_toks, other, claim)


def _put_in_place(other: Words, other_toks: list[Token], claim: Claim) -> str:
    """What a statement whose subject shares a word with the claim's puts in the place of
    one of the claim's names or words."""
    if not (other.statement and _shared_subject(other, other_toks, claim)):
        return ""
    if other_name_in_role(other_toks, claim):
        return "another name in the claim's place"
    if slot_swapped(other_toks, claim):
        return "another word in the claim's place"
    return ""


def _reason(s: Sentence, claim: Claim, vocabulary: set[str]) -> str:
    other = sentence_words(s.toks, s.text)
    if not _about_the_claim(other, s.toks, claim):
        return ""
    if opposite_said(s.toks, other, claim):
        return "the opposite"
    update = _update_disputes(s, other, claim)
    if update is not None:
        return "an update or correction" if update else ""
    said = quantities(s.text)
    months = _other_months(s.toks, claim)
    shared = _shared_subject(other, s.toks, claim)
    same_head = _same_head(other, s.toks, claim)
    if (months or other_figures(claim.quantities, said)) and shared and same_head:
        return ANOTHER_YEAR if not months and _years_only(claim, said) else "other figures"
    if contradicts(claim.toks, align(claim.toks, s.toks), vocabulary):
        return "another figure or name in its place"
    if not same_head or _label_line(s.toks):
        # What follows is about another thing the claim's words also name, or the
        # sentence says what a label stands for ("People team: people@…").
        return ""
    return _words_reason(s.toks, other, claim, shared=shared)


def _words_reason(toks: list[Token], other: Words, claim: Claim, *, shared: bool) -> str:
    """What a sentence about the claim's subject says otherwise in words: another name or
    word in the claim's place, the opposite, another kind of thing ("" when nothing)."""
    swapped = _put_in_place(other, toks, claim)
    if swapped:
        return swapped
    if shared and _polarity_disputes(other, toks, claim):
        return "the opposite"
    if other.statement and _limited_otherwise(toks, other, claim):
        return "the opposite"
    if word_swapped(claim.toks, toks, other.statement and _mostly_known(other, claim)):
        return "other words in the claim's place"
    if other.statement and other_kind(toks, other, claim):
        return "that it is something else"
    return ""


# "This document explains …" in one tool result and "Nothing in this document is a
# policy" in another speak of two documents.
_THIS_DOCUMENT_RE = re.compile(
    r"\b(this|these) (document|documents|page|policy|handbook|manual|guide|section|chapter)\b",
    re.IGNORECASE,
)


def about_something_else(claim_text: str, support: Sentence, other: Sentence) -> bool:
    """The sentence is about another subject than the claim ("Hotel stays in London"
    beside hotel stays on business trips) or another kind of it ("The holiday freeze"
    beside "The annual peak-season code freeze"), as the words show; or both speak of
    "this document" (policy, page, …) and it comes from another tool result than the
    claim's support, so each speaks of its own ("This policy does not apply to
    contractors" still disputes "The travel policy applies to contractors")."""
    if (
        other.source != support.source
        and _THIS_DOCUMENT_RE.search(other.text)
        and _THIS_DOCUMENT_RE.search(claim_text)
    ):
        return True
    claim = tokens(claim_text)
    known = {t.lower for t in claim + support.toks if not t.punct}
    state = Claim(claim, claim_text, sentence_words(claim), quantities(claim_text), known)
    words = sentence_words(other.toks, other.text)
    return _about_other_subject(words, other.toks, state) or _another_kind(other.toks, state)


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
    state = Claim(claim, claim_text, sentence_words(claim), quantities(claim_text), known)
    for s in evidence:
        if s is support or s.text == support.text or s.text.rstrip().endswith("?"):
            continue  # the same statement, or a question (it states nothing)
        reason = _reason(s, state, vocabulary)
        if reason and (reason in _FIGURE_REASONS or _same_fact(s, state, support, reason)):
            return Dispute(s, reason)
    return None


# What the rules read of figures disputes a claim from any sentence whose subject shares
# a word with the claim's; what they read of words (the opposite, another word or name in
# its place, an update, another kind) only from a sentence about the same fact
# (``_same_fact``).
_FIGURE_REASONS = frozenset({"other figures", "another figure or name in its place"})
# Other years alone dispute from a sentence about the same fact only (``_years_only``).
ANOTHER_YEAR = "another year"
# A sentence is about the same fact when this share of its content words are the claim's
# or its support's (the rules here, the entailment model's rivals in ``meaning``) ...
SAME_FACT_SHARE = 0.5


def _same_fact(s: Sentence, claim: Claim, support: Sentence, reason: str = "") -> bool:
    """... or it names the claim's whole subject ("Hybrid employees do not receive an
    internet allowance" is not about "Fully remote employees"), but for another year:
    a subject has many dated events ("In 2014, Henrike Oltmanns joined as head of
    sales" dates no "| 2020 | Henrike Oltmanns becomes CEO")."""
    theirs = sentence_words(s.toks).content
    known = claim.words.content | sentence_words(support.toks).content
    if theirs and len(theirs & known) / len(theirs) >= SAME_FACT_SHARE:
        return True
    if reason == ANOTHER_YEAR:
        return False
    subject = subject_of(claim.toks)
    return bool(subject) and subject <= unpossessed(s.toks)
