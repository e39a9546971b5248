"""Issue 44: what the entailment model decides beside the rules. A second source that
shares only a word or two with the answer disputes it when the model is nearly sure it
contradicts it; a dispute the rules read from words alone ("another word in the claim's
place") falls when the model reads the answer as entailing the other sentence (it states a
part of the answer in other words). Each case runs through the full validation path with
the shipped model."""

from __future__ import annotations

from typing import Any

import pytest

from evidence_app.validation.services import validation_run
from tests.evidence_app.validation_helpers import validating_task

pytestmark = pytest.mark.django_db

BEACH = (
    "The Beach is a 2000 adventure drama film directed by Danny Boyle and based on the 1996"
    " novel of the same name by Alex Garland."
)
MOHRA = (
    "Mohra (Pawn) is a 1994 Indian action thriller film directed by Rajiv Rai starring"
    " Akshay Kumar and Raveena Tandon."
)


def _judge(settings: Any, answer: str, second: str) -> Any:
    settings.VALIDATOR_MODEL = "offline:judge"
    task = validating_task(
        answer=answer,
        evidence=[answer, second],
        request=f"What does the source say about {answer.split(' is ')[0]}?",
    )
    snapshot = validation_run(task_id=task.pk, attempt_index=1)
    assert snapshot is not None
    return snapshot


def _stances(snapshot: Any) -> list[tuple[str, str]]:
    return [(c["stance"], c["quote"]) for c in snapshot.result["claims"][0]["citations"]]


@pytest.mark.parametrize(
    ("answer", "second"),
    [
        (
            "The Quiet is a 2005 American drama thriller film directed by Jamie Babbit and"
            " starring Camilla Belle and Elisha Cuthbert.",
            "The Quiet is only a television show.",
        ),
        (
            "Shane Lee Lindstrom, professionally known as Murda Beatz, is a Canadian hip hop"
            " record producer from Fort Erie, Ontario.",
            "Murda Beatz's real name is Marshall Mathers.",
        ),
    ],
    ids=["another kind of work", "another real name"],
)
def test_a_source_sharing_few_words_disputes_when_the_model_is_sure(
    settings: Any, answer: str, second: str
) -> None:
    """The second source shares one or two words with the answer (not "the same fact" by
    words), and the model reads a contradiction above ``FAR_CONTRADICTS``: a person
    decides, with both quotes."""
    snapshot = _judge(settings, answer, second)
    assert snapshot.status == "insufficient_evidence", snapshot.result
    assert _stances(snapshot) == [("supports", answer), ("contradicts", second)]


@pytest.mark.parametrize(
    ("answer", "second"),
    [
        (BEACH, "Danny Boyle was born in Radcliffe, Lancashire."),
        (MOHRA, "Raveena Tandon was born in Bombay."),
    ],
    ids=["the director's birthplace", "an actress's birthplace"],
)
def test_a_source_about_something_else_disputes_nothing(
    settings: Any, answer: str, second: str
) -> None:
    snapshot = _judge(settings, answer, second)
    assert snapshot.status == "accepted", snapshot.result
    assert _stances(snapshot) == [("supports", answer)]


@pytest.mark.parametrize(
    "second", ["Mohra is an action movie.", "Mohra is a film from India."], ids=["movie", "from"]
)
def test_a_part_of_the_answer_in_other_words_is_no_dispute(settings: Any, second: str) -> None:
    """The rules read another word in the answer's place ("movie" for "film"); the model
    reads the answer as entailing the sentence: it says a part of the answer, and the
    answer is accepted."""
    snapshot = _judge(settings, MOHRA, second)
    assert snapshot.status == "accepted", snapshot.result
    assert _stances(snapshot) == [("supports", MOHRA)]


def test_a_word_dispute_the_model_does_not_overrule_stands(settings: Any) -> None:
    """The same kind of sentence saying something else ("a comedy film"): the rules'
    dispute stands and a person decides."""
    second = "Mohra (Pawn) is a 1994 Indian comedy film."
    snapshot = _judge(settings, MOHRA, second)
    assert snapshot.status == "insufficient_evidence", snapshot.result
    assert ("contradicts", second) in _stances(snapshot)


NORTHWIND = (
    "Northwind Traders runs a chain of hardware stores throughout Canada, and in Ireland"
    " outlets in four towns."
)


def test_a_source_with_the_same_figure_and_another_place_is_read_by_the_model(
    settings: Any,
) -> None:
    """The second source repeats the answer's figure ("four") but puts it somewhere else
    ("Chinese towns" against "in Ireland"): the figures agree and the rules see no word in
    another's place, so the model reads it, and reads the contradiction: a person
    decides, with both quotes."""
    second = "Northwind Traders has outlets in four Chinese towns."
    snapshot = _judge(settings, NORTHWIND, second)
    assert snapshot.status == "insufficient_evidence", snapshot.result
    assert _stances(snapshot) == [("supports", NORTHWIND), ("contradicts", second)]


def test_a_source_with_the_same_figure_and_only_the_answer_s_words_is_left_to_the_rules(
    settings: Any,
) -> None:
    """A sentence that states the answer's figure and nothing the answer does not say is
    the rules' to compare (they read figures better than the model): accepted."""
    second = "Northwind Traders has outlets in four towns."
    snapshot = _judge(settings, NORTHWIND, second)
    assert snapshot.status == "accepted", snapshot.result
