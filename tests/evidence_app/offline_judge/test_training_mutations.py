"""Issue 44: the contradictions the training data makes by rule from FEVER's supported
claims contradict their evidence, and a mutation the evidence also states is dropped."""

from __future__ import annotations

from evidence_app.offline_judge.training.mutations import (
    KINDS,
    contradictions,
    mutate,
    not_entailed,
    object_names,
)

PREMISE = "Shane Black (born December 16, 1961) is an American screenwriter and director."


def test_each_kind_changes_what_the_evidence_states() -> None:
    kinds = dict(KINDS)
    names = ["Danny Boyle", "Paris"]
    assert kinds["year"]("Shane Black was born in 1961.", PREMISE, "k", names) not in (
        None,
        "Shane Black was born in 1961.",
    )
    assert kinds["negation"]("Shane Black is a director.", PREMISE, "k", names) == (
        "Shane Black is not a director."
    )
    nation = kinds["nationality"]("Shane Black is an American writer.", PREMISE, "k", names)
    assert nation is not None and "American" not in nation
    assert kinds["opposite"]("Rio 2 was the first film.", "Rio 2 was a film.", "k", names) == (
        "Rio 2 was the last film."
    )
    assert (
        kinds["name"]("The Beach was directed by Danny Boyle.", "", "k", names)
        == ("The Beach was directed by Paris.")
        or kinds["name"]("The Beach was directed by Danny Boyle.", "", "k", names) is None
    )
    # Every mutation is labelled a contradiction and names its kind.
    made = mutate("Shane Black was born in 1961.", PREMISE, "k", names)
    assert made is not None and made[1] in kinds


def test_a_mutation_the_evidence_states_is_not_made() -> None:
    premise = "The film was released in 1998 and again in 1999."
    for key in ("a", "b", "c", "d", "e", "f", "g"):
        result = mutate("The film was released in 1998.", premise, key, [])
        assert result is None or "1999" not in result[0], result


def test_names_after_the_verb_are_replaced_never_the_subject() -> None:
    assert [n for _s, _e, n in object_names("The Beach stars Leonardo DiCaprio.")] == [
        "Leonardo DiCaprio"
    ]
    assert object_names("Shane Black") == []
    rows = [
        (
            "The Beach is a 2000 adventure drama film directed by Danny Boyle.",
            "The Beach was directed by Danny Boyle.",
            "entailment",
            "fever:dev:1",
        ),
        ("Rio 2 was released by Fox.", "Rio 2 was released by Fox.", "entailment", "fever:dev:2"),
    ]
    out = list(contradictions(rows))
    assert out and all(label == "contradiction" for _p, _h, label, _i in out)
    for _premise, hypothesis, _label, row_id in out:
        assert row_id.rsplit(":", 1)[1] in {
            "negation",
            "year",
            "number",
            "opposite",
            "nationality",
            "name",
        }
        assert hypothesis.startswith(("The Beach", "Rio 2"))


def test_claims_the_evidence_does_not_entail_are_made_three_ways() -> None:
    """Issue 44: the relation read the other way round, another predicate noun and another
    month, each labelled not_entailment and named by its kind; a common noun phrase moves
    to the object in lower case, a name as written."""
    rows = [
        (
            "A subgenre of the action film, martial arts films contain fights.",
            "Martial arts films are a subgenre of action films.",
            "entailment",
            "fever:dev:1",
        ),
        ("Paris is the capital of France.", "Paris is the capital of France.", "entailment", "f:2"),
        (
            "Carol Danvers is a fictional character appearing in comic books.",
            "Carol Danvers is a fictional character.",
            "entailment",
            "f:3",
        ),
        ("Jo Hill is an American actor.", "Jo Hill is an American actor.", "entailment", "f:4"),
        (
            "Trevor Griffiths (born 4 April 1935) is an English dramatist.",
            "Trevor Griffiths was born on 4 April 1935.",
            "entailment",
            "f:5",
        ),
    ]
    made = {row_id: (claim, label) for _p, claim, label, row_id in not_entailed(rows)}
    assert made["fever:dev:1:reversed"] == (
        "Action films are a subgenre of martial arts films.",
        "not_entailment",
    )
    assert made["f:2:reversed"][0] == "France is the capital of Paris."
    assert made["f:3:predicate"][0] == "Carol Danvers is a fictional actor."
    assert made["f:4:predicate"][0] == "Jo Hill is an American character."
    month = made["f:5:month"][0]
    assert "April" not in month and month.endswith("1935.")
    assert {label for _c, label in made.values()} == {"not_entailment"}
