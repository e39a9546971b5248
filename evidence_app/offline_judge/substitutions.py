"""Another word in the claim's place: a sentence that says what the claim says with one
thing changed (another name in the claim's role, another word in its slot, another kind
of thing, a word of opposite sense) disputes it."""

from __future__ import annotations

from collections.abc import Sequence
from difflib import SequenceMatcher

from evidence_app.offline_judge.claim_words import (
    POLARITY_SHARE,
    PRONOUNS,
    VERBISH,
    Claim,
    Words,
    akin,
    content_count,
    is_content,
    known_name,
    names_only,
)
from evidence_app.offline_judge.quantities import (
    CALENDAR,
    UNITS,
)
from evidence_app.offline_judge.wording import (
    FILLERS,
    Token,
)

# Prepositions that say the same as "in", "on" or "at": "during its opening weekend" for
# "on its opening weekend" is no other word in the claim's place.
_PLACE_AND_TIME = frozenset("during within throughout into onto upon across via through".split())


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


# A word put in another's place counts when the words matched around it hold this many
# content words ("Morse code is more sensitive to poor signal" against "… less …").
SWAP_FLANK = 2


# A sentence with one new word holds at least this many other content words.
SLOT_WORDS = 3


# A word this close in its letters to a known one is that word misspelled.
SPELLING = 0.85


# A name after a word both share is the claim's name in that role within this many words.
NAME_WINDOW = 6


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
        return names_only(claim[ops[k][1] : ops[k][2]]) and content_count(left) >= SWAP_FLANK
    if ops[k + 1][0] != "equal":
        return False
    right = claim[ops[k + 1][1] : ops[k + 1][2]]
    both = content_count(left) >= 1 and content_count(right) >= 1
    return both and content_count(left + right) >= SWAP_FLANK


def word_swapped(claim: list[Token], other: list[Token], restated: bool) -> bool:
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
        if k == len(ops) - 1 and not names_only(theirs[j1:j2]):
            continue
        if any(
            is_content(t) and t.lower not in _PLACE_AND_TIME and not akin(t.lower, replaced)
            for t in theirs[j1:j2]
        ):
            return True
    return False


def role_of(toks: list[Token], at: int) -> str:
    """The word before the name at ``toks[at]``, past an article ("created by the UFC":
    "by"), or "" when that is punctuation, a name or a form of "be", "have", "do"."""
    k = at - 1
    if k >= 0 and toks[k].lower in FILLERS:
        k -= 1
    if k < 0 or toks[k].punct or toks[k].text[:1].isupper() or toks[k].norm in VERBISH:
        return ""  # "is Kranhafen 9" and "is named Okkerlund" give no role
    return toks[k].lower


def other_name_in_role(other_toks: list[Token], claim: Claim) -> bool:
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


def _unknown_after_role(toks: list[Token], j: int, claim: Claim, known: list[str]) -> str:
    """The word before ``toks[j]`` when that is a name the claim does not hold, or "by"
    before a word that is no name, in no form the claim's ("is by a car")."""
    t = toks[j]
    if t.lower in CALENDAR or known_name(t.lower, claim.known):
        return ""
    role = role_of(toks, j)
    if t.name:
        return role
    plain = role == "by" and is_content(t) and not akin(t.lower, known)
    return role if plain else ""


def _names_elsewhere(claim: list[Token], role: str, theirs: list[str]) -> bool:
    """After ``role`` the claim names, within its clause, only names the sentence does not
    hold in any form (a currency is no name)."""
    for i, c in enumerate(claim):
        if c.lower != role:
            continue
        after = claim[i + 1 : i + 1 + NAME_WINDOW]
        stop = next((k for k, a in enumerate(after) if a.punct), len(after))
        named = [a.lower for a in after[:stop] if a.name and a.lower not in UNITS]
        if named and not any(n in theirs or akin(n, theirs) for n in named):
            return True
    return False


def _next_content(toks: list[Token], at: int) -> Token | None:
    """The first content word after ``toks[at]`` within its clause."""
    for t in toks[at + 1 :]:
        if t.punct:
            return None
        if is_content(t):
            return t
    return None


def slot_swapped(other_toks: list[Token], claim: Claim) -> bool:
    """All the sentence's words but one are the claim's (in any form), and that one
    follows a word the claim follows with another ("high birth and conversion pizzas"
    against "… conversion rates", "may be impeded by" against "may result from")."""
    at = _one_new_word(other_toks, claim)
    if at is None:
        return False
    before = next((t for t in reversed(other_toks[:at]) if is_content(t) or t.punct), None)
    if before is None or before.punct or before.text[:1].isupper():
        return False
    after = _next_content(other_toks, at)
    theirs = sorted({t.lower for t in other_toks})
    for i, c in enumerate(claim.toks):
        mine = _next_content(claim.toks, i) if c.norm == before.norm else None
        if mine is None or mine.name or akin(mine.lower, theirs):
            continue
        # The word after it, if any, follows the claim's word too: the same slot.
        following = _next_content(claim.toks, claim.toks.index(mine, i))
        if after is None or (following is not None and following.norm == after.norm):
            return True
    return False


def _one_new_word(toks: list[Token], claim: Claim) -> int | None:
    """Where the sentence's one content word in no form the claim's is, when it holds at
    least ``SLOT_WORDS`` content words (names aside)."""
    known = sorted(claim.known)
    # A manner word ("rapidly" for "significantly") says how, not what.
    words = [t for t in toks if is_content(t) and not t.name and not t.lower.endswith("ly")]
    new = [t for t in words if not _spelled_like(t.lower, known)]
    if len(words) < SLOT_WORDS or len(new) != 1:
        return None
    return toks.index(new[0])


def _spelled_like(word: str, known: list[str]) -> bool:
    """The word, another form of it ("spoken", "speaks"), or a misspelling of it
    ("actylcholine"), is among ``known``."""
    if word in known or akin(word, known):
        return True
    return any(SequenceMatcher(None, word, k).ratio() >= SPELLING for k in known if len(k) >= 6)


def _copular(toks: list[Token], at: int) -> bool:
    """ "<subject> is/was a|an|the …": the sentence says what its subject is."""
    if at >= len(toks) - 2 or toks[at].norm not in ("be", "was"):
        return False
    return toks[at + 1].lower in ("a", "an", "the")


def other_kind(other_toks: list[Token], other: Words, claim: Claim) -> bool:
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
    said = [t for t in other_toks[at + 2 :] if is_content(t) and not t.name]
    return any(not akin(t.lower, known) and t.lower not in claim.known for t in said)


def _opposites(other_toks: list[Token], claim: Claim) -> bool:
    """The sentence says the opposite word of one the claim says ("excludes" against
    "include", "last" against "first"), and neither says the other's."""
    theirs = {t.lower for t in other_toks}
    mine = {t.lower for t in claim.toks}
    for one, two in _OPPOSITES:
        for said, against in ((one, two), (two, one)):
            if theirs & said and mine & against and not (mine & said or theirs & against):
                return True
    return False


def opposite_said(other_toks: list[Token], other: Words, claim: Claim) -> bool:
    """An opposite word, in a statement sharing a word with the claim whose other content
    words are mostly the claim's (the subject aside where the claim's is a pronoun:
    "Folklore excludes jokes" against "These include … jokes")."""
    if not other.statement or not _opposites(other_toks, claim):
        return False
    before_verb = claim.toks[: claim.words.verb_at]
    pronoun = any(t.lower in PRONOUNS for t in before_verb)
    subject = {t.norm for t in other_toks[: other.verb_at]} if pronoun else set()
    said = [w for w in other.content if w not in subject]
    known = sorted(claim.known_forms)
    shared = [w for w in said if w in known or akin(w, known)]
    return bool(shared) and len(shared) / len(said) >= POLARITY_SHARE
