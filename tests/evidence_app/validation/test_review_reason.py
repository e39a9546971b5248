"""The one line that says why a verdict is not an acceptance (issue 26 item 3), and how
a disputed claim names its sources."""

from __future__ import annotations

from evidence_app.validation.claims import dispute, review_reason, shown_claims


def _claim(cid: str, verdict: str, *citations: tuple[str, str, str]) -> dict[str, object]:
    return {
        "id": cid,
        "text": f"claim {cid}",
        "verdict": verdict,
        "citations": [
            {"ref": ref, "quote": quote, "verified": True, "stance": stance}
            for ref, quote, stance in citations
        ],
    }


MEAL = _claim(
    "1",
    "supported",
    ("R2", "The allowance is 46 EUR.", "supports"),
    ("R3", "The allowance is 38 EUR.", "contradicts"),
)


def test_reason_names_the_disagreement_then_the_unsupported_claims() -> None:
    """Issue 26 item 3: "sources disagree about the figure (R2: 46 EUR; R3 says
    38 EUR)", "2 claims unsupported"."""
    result = {"claims": [MEAL, _claim("2", "unsupported"), _claim("3", "unsupported")]}

    assert review_reason("insufficient_evidence", result) == (
        "sources disagree about the figure (R2: 46 EUR; R3 says 38 EUR); 2 claims unsupported"
    )
    assert review_reason("insufficient_evidence", {"claims": [_claim("2", "unsupported")]}) == (
        "1 claim unsupported"
    )


def test_reason_for_errors_verdicts_without_claims_and_acceptances() -> None:
    """Issue 26 item 3: "validator error: …" (first line of the error), "insufficient
    evidence" when nothing more precise is known, nothing for an acceptance."""
    assert (
        review_reason("validator_error", {}, "model timed out after 60 s\nTraceback …")
        == "validator error: model timed out after 60 s"
    )
    assert review_reason("insufficient_evidence", {"claims": []}) == "insufficient evidence"
    assert review_reason("rejected", {"failure_category": "goal_missed"}) == (
        "rejected: goal missed"
    )
    assert review_reason("accepted", {"claims": [MEAL]}) == ""


def test_a_claim_is_disputed_only_with_verified_sources_on_both_sides() -> None:
    """Issue 26 item 3: an unverified contradicting quote does not dispute a claim; a
    stance-less citation (stored before stances) reads as supporting."""
    unverified = {
        **MEAL,
        "citations": [
            MEAL["citations"][0],  # type: ignore[index]
            {**MEAL["citations"][1], "verified": False},  # type: ignore[index]
        ],
    }
    legacy = {**MEAL, "citations": [{"ref": "R2", "quote": "x is 46 EUR.", "verified": True}]}

    shown = shown_claims([MEAL, unverified, legacy])

    assert [c["shown"] for c in shown] == ["disputed", "supported", "supported"]
    assert shown[0]["dispute"] == "R2: 46 EUR; R3 says 38 EUR"
    assert (
        dispute(
            [
                {
                    "ref": "R1",
                    "quote": "Lunch is provided.",
                    "verified": True,
                    "stance": "supports",
                },
                {"ref": "R4", "quote": "No lunch.", "verified": True, "stance": "contradicts"},
            ]
        )
        == 'R1: "Lunch is provided."; R4 says "No lunch."'
    )
