"""Issue 44: word rules that objected to correct answers the entailment model reads as
entailed, on what is no qualifier and no other name: the month in "12 May 1950" is no
"may", "appeared in" is no "appears to", "science fiction" is a genre, a middle name
does not splice a name, "It" where the claim names its subject, a linking verb or a
British spelling in one word's place, an "or" inside a parenthesis, "about" before a
figure the claim does not state. Each now leaves the claim to the model, and the
objections they were mistaken for still stand."""

from __future__ import annotations

import re
from typing import Any

import pytest

from evidence_app.offline_judge.grounding import check, sentence
from evidence_app.validation.services import validation_run
from tests.evidence_app.validation_helpers import validating_task


def _finding(claim: str, evidence: str) -> Any:
    sentences = [sentence(s, "R1 read_document result") for s in re.split(r"(?<=[.])\s+", evidence)]
    vocabulary = {w.lower() for w in re.findall(r"[A-Za-z][A-Za-z'\-]*", evidence)}
    return check(claim, sentences, vocabulary, evidence)


PLAIN = [
    (
        "Mel B had a career as a singer.",
        "Melanie Janine Brown (born 29 May 1975) had a career as a singer and songwriter.",
    ),
    (
        "Estelle Getty was an actress.",
        "Estelle Getty was an actress who appeared in The Golden Girls.",
    ),
    (
        "James Spader starred in a film.",
        "James Spader starred in a science fiction film.",
    ),
    (
        "Alexandra Daddario is American.",
        "Alexandra Anna Daddario (born March 16, 1986) is an American actress.",
    ),
    (
        "Philomena was nominated for four Academy Awards.",
        "Philomena is a 2013 British drama film. It was nominated for four Academy Awards.",
    ),
    (
        "Red Bull Racing races under an Austrian license.",
        "Red Bull Racing races under an Austrian licence.",
    ),
    (
        "The Quran is the central religious text of Islam.",
        "The Quran (also romanized Qur'an or Koran) is the central religious text of Islam.",
    ),
    ("Japan consists of islands.", "Japan consists of about 6,852 islands."),
]


@pytest.mark.parametrize(("claim", "evidence"), PLAIN, ids=[c for c, _e in PLAIN])
def test_no_objection_where_nothing_qualifies_or_replaces_the_claim(
    claim: str, evidence: str
) -> None:
    finding = _finding(claim, evidence)
    assert finding.verdict == "supported" or not finding.objection, finding.note


OBJECTED = [
    # A hedge, a name spliced from two people, another word in the claim's place: still
    # objections whatever the model reads.
    ("Estelle Getty was an actress.", "Estelle Getty appeared to be an actress."),
    ("Mel B had a career as a singer.", "Mel B may have had a career as a singer."),
    (
        "Barack Bush was a president.",
        "Barack Obama was a president. George W. Bush was a president.",
    ),
    ("The company raises prices in May.", "The company lowers prices in May."),
    ("Japan consists of 6,852 islands.", "Japan consists of about 6,852 islands."),
    ("The Quran is a religious text.", "The Quran is, or was, a religious text."),
]


@pytest.mark.parametrize(("claim", "evidence"), OBJECTED, ids=[e for _c, e in OBJECTED])
def test_the_objections_they_resemble_still_stand(claim: str, evidence: str) -> None:
    finding = _finding(claim, evidence)
    assert finding.verdict != "supported"
    assert finding.objection, finding.note


@pytest.mark.django_db
def test_a_claim_naming_the_subject_of_it_is_accepted_through_the_model(settings: Any) -> None:
    """The full validation path: the rules leave "It was nominated" to the model, which
    reads the sentence before it."""
    settings.VALIDATOR_MODEL = "offline:judge"
    evidence = (
        "Alexandra Anna Daddario (born March 16, 1986) is an American actress. She is known"
        " for playing Annabeth Chase in the Percy Jackson films."
    )
    task = validating_task(
        answer="Alexandra Daddario is an American actress.",
        evidence=[evidence],
        request="What does the source say about Alexandra Daddario?",
    )
    snapshot = validation_run(task_id=task.pk, attempt_index=1)
    assert snapshot is not None
    assert snapshot.result["status"] == "accepted", snapshot.result


def test_names_with_letters_beyond_ascii_are_read_whole() -> None:
    """Issue 44: "Müller" was read as "M" and "ller", so a sentence naming "Möller"
    stated a claim about "Müller", and "Eugène Ionesco" was never written as the claim
    writes it."""
    evidence = "Travel above 2,000 EUR is approved by Jürgen Möller."
    wrong = _finding("Travel above 2,000 EUR is approved by Jürgen Müller.", evidence)
    assert wrong.verdict != "supported"
    right = _finding("Travel above 2,000 EUR is approved by Jürgen Möller.", evidence)
    assert right.verdict == "supported"
    play = _finding("Exit the King is by Eugène Ionesco.", "Exit the King is by Eugène Ionesco.")
    assert play.verdict == "supported"
