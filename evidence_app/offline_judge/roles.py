"""Who is what of whom, as words show it: readings the entailment model gets wrong and
words settle, each an objection (no reading of meaning may then support the claim; a
person decides):

- **a relation the other way round**: the claim says "A is a N of B" where the evidence
  says "N of A" ("Action films are a subgenre of martial arts films" against "a subgenre
  of the action film, martial arts films"), or "A is a N" where the evidence gives "N of
  A" ("... of which Daimler AG is a division" against "a division of ... Daimler AG");
- **another name in a role**: the claim says "A created B" where the evidence says B was
  "created by C", C sharing no word with A; or "written by N" where the evidence has
  "portrayed by N" and "written" nowhere;
- **a date in another month**: the claim dates something "May 4, 1935" where the
  evidence gives the same year with another month ("4 April 1935");
- **another year after the same word**: "made her film debut in 2006" where the evidence
  has "making her film debut in 2003";
- **one for many**: "received one nomination" where the evidence has "multiple
  nominations" ("more than one" and "at least one" agree with it);
- **another name after "by"**: "was directed by N" where the evidence has "directed by
  M" and N in none of its lists after that verb and "by";
- **another ordinal in the same year**: "won his first title in 2013" where the evidence
  has "his second title in 2013";
- **a birth year given to something else**: "graduated in 2007" where the evidence gives
  2007 only as a birth date ("born June 6, 2007").
"""

from __future__ import annotations

from collections.abc import Callable

from evidence_app.offline_judge.claim_words import is_content
from evidence_app.offline_judge.quantities import CALENDAR, ORDINAL_WORDS
from evidence_app.offline_judge.wording import FILLERS, Sentence, Token

__all__ = ["role_objection"]

_BE = frozenset({"is", "are", "was", "were"})
_CLAUSE_STARTS = frozenset({"which", "that", "who", "whom", "whose"})
# How far after "N of" the evidence may name the other side of the relation.
WINDOW = 6
# Past forms whose agent the evidence names with "by": who did it.
AGENT_VERBS = frozenset(
    """created directed wrote written founded produced composed designed invented
    discovered developed painted built co-created co-founded""".split()
)
# Between the verb and "by": other participles and the list's punctuation ("directed,
# produced, and written by").
_BEFORE_BY = 8
_LIST_WORDS = AGENT_VERBS | {"and", "co-written", "co-produced", "also"}


def _subject(toks: list[Token], at: int) -> set[str]:
    """The content words of the subject ending before position ``at`` (back to the
    clause's start)."""
    words: set[str] = set()
    i = at - 1
    while i >= 0 and not toks[i].punct and toks[i].lower not in _CLAUSE_STARTS:
        if is_content(toks[i]) or toks[i].name:
            words.add(toks[i].norm)
        i -= 1
    return words


def _clause(toks: list[Token], start: int) -> list[Token]:
    """The words from ``start`` to the clause's end (at most ``WINDOW``), articles aside."""
    out = []
    for t in toks[start : start + WINDOW]:
        if t.punct or t.lower in _CLAUSE_STARTS:
            break
        if t.lower not in FILLERS:
            out.append(t)
    return out


def _relations(claim: list[Token]) -> list[tuple[set[str], str, set[str]]]:
    """(A, N, B) for each "A is a N of B" of the claim (B empty for "A is a N")."""
    found = []
    for v, t in enumerate(claim):
        if t.lower not in _BE:
            continue
        n = v + 1
        while n < len(claim) and claim[n].lower in FILLERS:
            n += 1
        if n >= len(claim) or claim[n].name or not is_content(claim[n]):
            continue
        subject = _subject(claim, v)
        if not subject:
            continue
        follows = claim[n + 1] if n + 1 < len(claim) else None
        if follows is not None and follows.lower == "of":
            other = {x.norm for x in _clause(claim, n + 2) if is_content(x) or x.name}
            if other:
                found.append((subject, claim[n].norm, other))
        elif follows is None or follows.punct:
            found.append((subject, claim[n].norm, set()))
    return found


def _reversed(claim: list[Token], evidence: list[Sentence]) -> str | None:
    for subject, noun, other in _relations(claim):
        for s in evidence:
            if noun not in s.norms or "of" not in s.norms:
                continue
            toks = s.toks
            for k in range(len(toks) - 1):
                if toks[k].norm != noun or toks[k + 1].lower != "of":
                    continue
                after = {t.norm for t in _clause(toks, k + 2)}
                if (subject - other) & after and not ((other - subject) & after):
                    return (
                        f'the evidence has "{toks[k].text} of" the claim\'s subject: the'
                        " relation the other way round"
                    )
    return None


def _name_run(toks: list[Token], start: int) -> set[str]:
    words: set[str] = set()
    for t in toks[start : start + 5]:
        if t.name:
            words.add(t.norm)
        elif words or t.punct:
            break
    return words


def _agent_after(
    toks: list[Token], k: int, names: Callable[[list[Token], int], set[str]] = _name_run
) -> set[str]:
    """The name after "by" that follows the verb at ``k`` ("directed, produced, and
    written by Randall Wallace"), as ``names`` reads it from there; empty when none
    follows."""
    for j in range(k + 1, min(len(toks), k + _BEFORE_BY)):
        if toks[j].lower == "by":
            return names(toks, j + 1)
        if not (toks[j].punct or toks[j].lower in _LIST_WORDS):
            break
    return set()


def _agent_swapped(claim: list[Token], evidence: list[Sentence]) -> str | None:
    for v, t in enumerate(claim):
        if t.lower not in AGENT_VERBS or (v and claim[v - 1].lower in _BE | {"been"}):
            continue
        if v + 1 < len(claim) and claim[v + 1].lower == "by":
            continue  # "a song written by ...": the claim names the agent itself
        subject = {
            x.norm for i, x in enumerate(claim[:v]) if x.name or (i == 0 and x.text[:1].isupper())
        }
        if not subject:
            continue
        for s in evidence:
            if t.norm not in s.norms or "by" not in s.norms:
                continue
            for k, e in enumerate(s.toks):
                agent = _agent_after(s.toks, k) if e.norm == t.norm else set()
                if agent and not (agent & subject):
                    return (
                        f'the evidence names another as the one who {t.lower} it ("{t.lower} by")'
                    )
    return None


def _agent_verb_swapped(claim: list[Token], evidence: list[Sentence]) -> str | None:
    """ "X was written by N" where the evidence has N after another verb ("portrayed by
    N") and the claim's verb nowhere."""
    known = frozenset().union(*(s.norms for s in evidence))
    for v, t in enumerate(claim[:-1]):
        if t.lower not in AGENT_VERBS or claim[v + 1].lower != "by" or t.norm in known:
            continue
        agent = _name_run(claim, v + 2)
        for s in evidence:
            if "by" not in s.norms:
                continue
            for k in range(1, len(s.toks) - 1):
                other = s.toks[k - 1]
                if s.toks[k].lower == "by" and agent and agent <= _name_run(s.toks, k + 1):
                    if other.lower.endswith(("ed", "en")) and other.norm != t.norm:
                        return (
                            f'the evidence has "{other.text} by" where the claim has "{t.text} by"'
                        )
    return None


def _is_year(t: Token) -> bool:
    return t.figure and len(t.norm) == 4 and t.norm.isdigit()


def _figure_after(toks: list[Token], k: int) -> Token | None:
    """The figure within two words after position ``k`` ("debut in 2003")."""
    for t in toks[k + 1 : k + 3]:
        if t.figure:
            return t
        if t.punct:
            break
    return None


def _other_figure_after(claim: list[Token], evidence: list[Sentence]) -> str | None:
    """The claim's figure follows a word ("debut in 2006") that the evidence follows with
    another figure of the same kind ("film debut in 2003")."""
    for i, t in enumerate(claim):
        if not _is_year(t):
            continue  # years only: counts and days are read in too many ways
        words = [w for w in claim[max(0, i - 3) : i] if is_content(w)]
        if not words:
            continue
        anchor = words[-1]
        for s in evidence:
            if anchor.norm not in s.norms:
                continue
            for k, e in enumerate(s.toks):
                if e.norm != anchor.norm:
                    continue
                other = _figure_after(s.toks, k)
                if other is not None and len(other.norm) == 4 and other.norm != t.norm:
                    return f'the evidence gives {other.text} after "{e.text}", not {t.text}'
    return None


_MANY = frozenset({"multiple", "several", "many", "numerous", "various"})
_AT_LEAST = frozenset({"than", "least", "over"})


def _one_of_many(claim: list[Token], evidence: list[Sentence]) -> str | None:
    """ "one nomination" where the evidence has "multiple nominations"."""
    for i, t in enumerate(claim[:-1]):
        if t.norm != "1" or claim[i + 1].punct:
            continue
        if i and claim[i - 1].lower in _AT_LEAST:
            continue  # "more than one", "at least one": many agrees
        noun = claim[i + 1].norm
        for s in evidence:
            if noun not in s.norms:
                continue
            for k, e in enumerate(s.toks):
                if e.lower in _MANY and any(x.norm == noun for x in s.toks[k + 1 : k + 3]):
                    return f'the evidence has "{e.text}" where the claim has one'
    return None


def _dates(toks: list[Token]) -> list[tuple[str, str]]:
    """(month, year) of each date written with a month name."""
    out = []
    for i, t in enumerate(toks):
        if t.lower not in CALENDAR or not t.text[:1].isupper():
            continue
        near = [x for x in toks[max(0, i - 2) : i + 4] if x.figure and len(x.norm) == 4]
        if near:
            out.append((t.lower, near[0].norm))
    return out


def _other_month(claim: list[Token], evidence: list[Sentence]) -> str | None:
    mine = _dates(claim)
    if not mine:
        return None
    years = {year for _month, year in mine}
    theirs = [d for s in evidence if years & s.norms for d in _dates(s.toks)]
    for month, year in mine:
        same_year = {m for m, y in theirs if y == year}
        if same_year and month not in same_year:
            return f"the evidence dates it in {year} in another month"
    return None


def _agent_list(toks: list[Token], start: int) -> set[str]:
    """The names listed from ``start`` ("Rian Johnson", "Joel and Ethan Coen", "A, B
    and C"), up to the first word that is neither a name nor joins names."""
    words: set[str] = set()
    for t in toks[start : start + 16]:
        if t.name:
            words.add(t.norm)
        elif t.lower not in _JOINS:
            break
    return words


_JOINS = frozenset({"and", ",", "&", "-"})


def _other_agent(claim: list[Token], evidence: list[Sentence]) -> str | None:
    """ "X was directed by N" where every "directed by" of the evidence lists others."""
    for v, t in enumerate(claim[:-2]):
        if t.lower not in AGENT_VERBS or claim[v + 1].lower != "by" or not claim[v + 2].name:
            continue  # "directed by a Belgian film director" names nobody
        agent = _name_run(claim, v + 2)
        lists = [
            listed
            for s in evidence
            if agent and t.norm in s.norms and "by" in s.norms
            for k, e in enumerate(s.toks)
            if e.norm == t.norm and (listed := _agent_after(s.toks, k, _agent_list))
        ]
        if lists and not any(agent & listed for listed in lists):
            return f'the evidence names another after "{t.lower} by"'
    return None


def _year_in(toks: list[Token]) -> set[str]:
    return {t.norm for t in toks if _is_year(t)}


def _other_ordinal(claim: list[Token], evidence: list[Sentence]) -> str | None:
    """ "his first title in 2013" where the sentences of the evidence giving 2013 have
    another ordinal before the same noun ("his second title in 2013") and never the
    claim's."""
    years = _year_in(claim)
    if not years:
        return None
    for i, t in enumerate(claim):
        if t.lower not in ORDINAL_WORDS:
            continue
        nouns = {x.norm for x in claim[i + 1 : i + 4] if is_content(x) and not x.figure}
        seen = {
            e.lower
            for s in evidence
            if years & s.norms
            for k, e in enumerate(s.toks)
            if e.lower in ORDINAL_WORDS and nouns & {x.norm for x in s.toks[k + 1 : k + 4]}
        }
        if seen and t.lower not in seen:
            return f'the evidence has "{min(seen)}" where the claim has "{t.text}"'
    return None


_BIRTH = frozenset({"born", "birth", "birthday", "b."})
# How far before a year "born" may stand ("born June 6, 2007").
_BORN_WINDOW = 5


def _birth_year_elsewhere(claim: list[Token], evidence: list[Sentence]) -> str | None:
    """The claim gives a year to something other than a birth where the evidence gives
    that year only as a birth date."""
    if any(t.lower in _BIRTH for t in claim):
        return None
    for year in sorted(_year_in(claim)):
        places = [
            (s.toks, k)
            for s in evidence
            if year in s.norms
            for k, e in enumerate(s.toks)
            if e.norm == year and e.figure
        ]
        if places and all(
            any(x.lower in _BIRTH for x in toks[max(0, k - _BORN_WINDOW) : k]) for toks, k in places
        ):
            return f"the evidence gives {year} only as a birth date"
    return None


def role_objection(claim: list[Token], evidence: list[Sentence]) -> str | None:
    """Why the evidence's words keep the claim (its tokens) from being read as stated:
    one of the readings above; None when none. Each reading looks only into the
    sentences holding the words it needs (``Sentence.norms``), not through every token of
    the evidence."""
    return (
        _reversed(claim, evidence)
        or _agent_swapped(claim, evidence)
        or _agent_verb_swapped(claim, evidence)
        or _other_month(claim, evidence)
        or _other_figure_after(claim, evidence)
        or _one_of_many(claim, evidence)
        or _other_agent(claim, evidence)
        or _other_ordinal(claim, evidence)
        or _birth_year_elsewhere(claim, evidence)
    )
