"""Issue 44: readings the entailment model got wrong at the top of its scores, which
words settle: a relation the other way round, another name in a role or another verb
before the claim's name, a date in another month, another year after the same word,
"one" where the evidence has "multiple", another name after "directed by", another
ordinal in the same year, a birth year given to another event. Each is an objection (no
reading of meaning supports the claim), and a claim the evidence states the right way
round is untouched."""

from __future__ import annotations

import re

import pytest

from evidence_app.offline_judge.grounding import check, sentence, tokens
from evidence_app.offline_judge.roles import role_objection


def _evidence(text: str) -> list:
    return [sentence(s, "1") for s in re.split(r"(?<=[.])\s+", text)]


def _vocabulary(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[A-Za-z][A-Za-z'\-]*", text)}


CASES = [
    # (claim, evidence): the model read each as entailed.
    (
        "Action films are a subgenre of martial arts films.",
        "A subgenre of the action film, martial arts films contain numerous fights.",
    ),
    (
        "Mercedes-Benz is a company of which Daimler AG is a division.",
        "Mercedes-Benz is a global automobile manufacturer and a division of the German"
        " company Daimler AG.",
    ),
    (
        "Issa Rae created Arrested Development.",
        "Arrested Development is an American television sitcom created by Mitchell Hurwitz."
        " Jo-Issa Rae Diop is an American actress and web series creator.",
    ),
    (
        "Jerry Bruckheimer directed the 1998 film The Man in the Iron Mask.",
        "The Man in the Iron Mask is a 1998 American action drama film directed, produced,"
        " and written by Randall Wallace.",
    ),
    (
        "Trevor Griffiths was born on May 4, 1935.",
        "Trevor Griffiths (born 4 April 1935, Ancoats, Manchester), is an English dramatist.",
    ),
    (
        "Buffy Summers has been written by Kristy Swanson.",
        "Buffy was portrayed by Kristy Swanson in the film, and later by Sarah Michelle"
        " Gellar in the television series.",
    ),
    (
        "Eva Green made her film debut in 2006.",
        "She portrayed Vesper Lynd in Casino Royale (2006). She started her career in"
        " theatre before making her film debut in 2003 in The Dreamers.",
    ),
    (
        "Mom (TV series) has received one nomination.",
        "The show has also garnered multiple nominations at the Critics' Choice Television Awards.",
    ),
    (
        "Brick (film) was directed by Joseph Gordon-Levitt.",
        "Brick is a 2005 American neo-noir mystery film written and directed by Rian Johnson"
        " in his directorial debut, starring Joseph Gordon-Levitt.",
    ),
    (
        "Chris Bosh won his first NBA Finals title in 2013.",
        "He won his second title in 2013 as the Heat defeated the San Antonio Spurs. Bosh won"
        " his first NBA title after Miami defeated the Oklahoma City Thunder in 2012.",
    ),
    (
        "Aubrey Anderson-Emmons graduated in 2007.",
        "Aubrey Frances Anderson-Emmons (born June 6, 2007) is an American child actress.",
    ),
]


@pytest.mark.parametrize(("claim", "evidence"), CASES)
def test_the_rules_object_where_words_show_it_is_not_so(claim: str, evidence: str) -> None:
    finding = check(claim, _evidence(evidence), _vocabulary(evidence), evidence)
    assert finding.verdict == "unsupported"
    assert finding.objection
    assert finding.note.startswith("Not stated as claimed:")


CONTROLS = [
    # The right way round, the agent named by the claim itself, the same month.
    (
        "Martial arts films are a subgenre of action films.",
        "A subgenre of the action film, martial arts films contain numerous fights.",
    ),
    (
        "The English Wikipedia is an edition of a free online encyclopedia.",
        "The English Wikipedia is the English-language edition of the free online"
        " encyclopedia Wikipedia.",
    ),
    (
        "Mitchell Hurwitz created Arrested Development.",
        "Arrested Development is an American television sitcom created by Mitchell Hurwitz.",
    ),
    (
        "Al Jardine sang lead vocals on a song written by a songwriter.",
        "Jardine sang lead on Then I Kissed Her, a song written by Phil Spector.",
    ),
    (
        "Trevor Griffiths was born on April 4, 1935.",
        "Trevor Griffiths (born 4 April 1935, Ancoats, Manchester), is an English dramatist.",
    ),
    ("Dark matter is a type of matter.", "Dark matter is a hypothetical type of matter."),
    (
        "Mom (TV series) has received more than one nomination.",
        "The show has also garnered multiple nominations at the Critics' Choice Television Awards.",
    ),
    (
        "Eva Green made her film debut in 2003.",
        "She portrayed Vesper Lynd in Casino Royale (2006). She started her career in"
        " theatre before making her film debut in 2003 in The Dreamers.",
    ),
    (
        "Buffy Summers was portrayed by Kristy Swanson.",
        "Buffy was portrayed by Kristy Swanson in the film.",
    ),
    (
        "Brick (film) was directed by Rian Johnson.",
        "Brick is a 2005 American neo-noir mystery film written and directed by Rian Johnson"
        " in his directorial debut, starring Joseph Gordon-Levitt.",
    ),
    # One of several names after "by", and a "by" followed by no name.
    ("Fargo was directed by Ethan Coen.", "Fargo is a film directed by Joel and Ethan Coen."),
    ("Toy Story was produced by Pixar.", "Toy Story was produced by the studio Pixar."),
    (
        "Underdog was directed by a Belgian film director.",
        "Frederik Du Chau is a Belgian film director. Directed by Frederik Du Chau, the film"
        " stars Jim Belushi.",
    ),
    (
        "Chris Bosh won his second NBA title in 2013.",
        "He won his second title in 2013 as the Heat defeated the San Antonio Spurs. Bosh won"
        " his first NBA title after Miami defeated the Oklahoma City Thunder in 2012.",
    ),
    (
        "Aubrey Anderson-Emmons was born in 2007.",
        "Aubrey Frances Anderson-Emmons (born June 6, 2007) is an American child actress.",
    ),
    # The year given to another event as well as to the birth.
    (
        "Aubrey Anderson-Emmons joined Modern Family in 2011.",
        "Aubrey Anderson-Emmons (born June 6, 2007) joined Modern Family in 2011.",
    ),
]


@pytest.mark.parametrize(("claim", "evidence"), CONTROLS)
def test_no_objection_where_the_evidence_says_it_the_same_way(claim: str, evidence: str) -> None:
    assert role_objection(tokens(claim), _evidence(evidence)) is None
