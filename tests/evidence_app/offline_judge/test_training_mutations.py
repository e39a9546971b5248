"""Issue 44: the contradictions the training data makes by rule from FEVER's supported
claims contradict their evidence, and a mutation the evidence also states is dropped."""

from __future__ import annotations

from evidence_app.offline_judge.training.mutations import (
    KINDS,
    contradictions,
    mutate,
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
