"""Issue 37 item 1: offline:judge reads all the evidence. A claim one tool result states
word for word is disputed, never accepted, when another result states something
incompatible about the same subject (another figure in any spelling, date or name,
a negation, an update or a correction); a restatement, or figures about another subject,
keep it accepted. Each case runs through the full validation path."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from evidence_app.validation.services import validation_run
from tests.evidence_app.validation_helpers import validating_task

pytestmark = pytest.mark.django_db

REQUEST = "What is the maximum hotel rate per night?"
OTHER_RATE = "The maximum hotel rate is 150 EUR per night."


def _judge(settings: Any, answer: str, second: str, **fields: Any) -> Any:
    settings.VALIDATOR_MODEL = "offline:judge"
    task = validating_task(
        answer=answer, evidence=[answer, second], request=fields.pop("request", REQUEST), **fields
    )
    snapshot = validation_run(task_id=task.pk, attempt_index=1)
    assert snapshot is not None
    return snapshot


def _stances(snapshot: Any) -> list[tuple[str, str, bool]]:
    claim = snapshot.result["claims"][0]
    return [(c["stance"], c["quote"], c["verified"]) for c in claim["citations"]]


def _assert_accepted_undisputed(snapshot: Any) -> None:
    assert snapshot.status == "accepted", snapshot.result
    assert [s for s, _q, _v in _stances(snapshot)] == ["supports"]


def _assert_disputed_by(snapshot: Any, second: str) -> None:
    """A person decides, and the claim's second citation is ``second``, contradicting."""
    assert snapshot.status == "insufficient_evidence", snapshot.result
    assert _stances(snapshot)[1] == ("contradicts", second, True)


@pytest.mark.parametrize(
    "answer",
    [
        "Hotel stays on standard business trips are capped at 120 EUR a night.",
        "The maximum hotel rate is 120 EUR per night.",
        "The maximum hotel rate is EUR 120 per night.",
        "The maximum hotel rate is not 150 EUR per night.",
    ],
)
def test_the_testers_hotel_answers_beside_a_150_eur_source_go_to_a_person(
    settings: Any, answer: str
) -> None:
    """The tester's example: each answer is stated word for word by the first result and
    disputed by a second saying 150 EUR: insufficient evidence, with both quotes."""
    snapshot = _judge(settings, answer, OTHER_RATE)
    assert snapshot.status == "insufficient_evidence", snapshot.result
    assert snapshot.task.status == "needs_review"
    assert _stances(snapshot) == [("supports", answer, True), ("contradicts", OTHER_RATE, True)]
    assert "a person must decide" in snapshot.result["claims"][0]["note"]


@pytest.mark.parametrize(
    "second",
    [
        "The maximum hotel rate is €150 per night.",
        "The maximum hotel rate is one hundred and fifty euros per night.",
        "Hotels are no longer capped at 120 EUR per night.",
        "The maximum hotel rate was raised from 120 EUR to 150 EUR per night.",
        "Since March the maximum hotel rate is now 150 EUR per night.",
        "The maximum hotel rate is not 120 EUR but 150 EUR per night.",
    ],
    ids=["euro sign", "number words", "no longer", "changed from to", "since now", "not but"],
)
def test_other_figures_updates_and_corrections_dispute_the_claim(
    settings: Any, second: str
) -> None:
    answer = "The maximum hotel rate is 120 EUR per night."
    snapshot = _judge(settings, answer, second)
    _assert_disputed_by(snapshot, second)


@pytest.mark.parametrize(
    ("answer", "second"),
    [
        (
            "The travel handbook was written by Anna Berg in 2019.",
            "The travel handbook was written by Anna Berg in 2021.",
        ),
        (
            "The travel handbook was written by Anna Berg.",
            "The travel handbook was written by Jonas Lind.",
        ),
        (
            "The travel handbook was written by Anna Berg.",
            "The travel handbook is often named as written by Anna Berg, but it was written "
            "by Jonas Lind.",
        ),
        (
            "Morse code is less sensitive to poor signal conditions than voice.",
            "Morse code is more sensitive to poor signal conditions than voice.",
        ),
        (
            "His office moved to Leipzig on 3 October 2019.",
            "Jonas Lind's office moved to Leipzig on 5 October 2019.",
        ),
        (
            "The travel handbook was drafted and published by the Northwind Press team.",
            "The travel handbook was published by Contoso.",
        ),
        (
            "The travel handbook is published on the Northwind intranet.",
            "The travel handbook appears on Contoso's wiki.",
        ),
        (
            "Anna Berg was a writer and editor of the travel handbook.",
            "Anna Berg has yet to write a book.",
        ),
        (
            "The travel handbook is a German guide for business trips.",
            "The travel handbook is something other than a German guide.",
        ),
        (
            "The travel handbook, also called the blue book, is a guide for business trips.",
            "The travel handbook is a cookbook.",
        ),
        (
            "The travel handbook is a guide by the Northwind Press team.",
            "The travel handbook is by a robot.",
        ),
        (
            "The travel handbook is a German guide for business trips.",
            "The travel handbook is only in French.",
        ),
        (
            "Hotel stays on business trips are booked by the travel office of the company.",
            "Hotel stays on business trips are booked by the travel agency.",
        ),
        (
            "Hotel stays on business trips are booked by the travel office of the company.",
            "Hotel stays on business trips are quickly booked by the travel agency.",
        ),
        (
            "Contractors are covered only by the basic insurance of the company.",
            "Contractors are covered exclusively by premium insurance.",
        ),
        (
            "These include the travel insurance, the rail card and the meal allowance.",
            "The benefits exclude the travel insurance and the rail card.",
        ),
        (
            "The travel handbook was published in March 2019.",
            "The travel handbook was published in August 2019.",
        ),
        (
            "Interns book their own hotel stays on business trips.",
            "Interns are incapable of booking their own hotel stays.",
        ),
    ],
    ids=[
        "another year",
        "another name",
        "often named as, but",
        "the opposite word",
        "another day, whose office named",
        "another name after the claim's 'by'",
        "another name after 'on', a verb in the present",
        "the opposite, in another form of the word",
        "something other than what the claim says",
        "another kind of thing, the claim's 'is a' after a clause",
        "another author, no name",
        "only, naming something else",
        "one new word after a word of the claim",
        "one new word and a manner word",
        "both narrowed, to other things",
        "the opposite word, the claim's subject a pronoun",
        "another month, the same year",
        "incapable",
    ],
)
def test_other_dates_names_and_corrections_dispute_the_claim(
    settings: Any, answer: str, second: str
) -> None:
    snapshot = _judge(settings, answer, second, request="What does the source say?")
    _assert_disputed_by(snapshot, second)


@pytest.mark.parametrize(
    "second",
    [
        "Hotel stays are capped at EUR 120 a night.",
        "Hotel stays in London are capped at 180 EUR per night.",
        "The daily meal allowance is 46 EUR.",
        "The maximum hotel rate was raised from 100 EUR to 120 EUR per night.",
        "A night in a hotel may cost at most 120 EUR.",
    ],
    ids=["restated", "another subject", "another figure's subject", "update to it", "bound"],
)
def test_restatements_and_figures_about_other_subjects_keep_the_claim_accepted(
    settings: Any, second: str
) -> None:
    answer = "The maximum hotel rate is 120 EUR per night."
    snapshot = _judge(settings, answer, second)
    _assert_accepted_undisputed(snapshot)


def test_a_preposition_of_the_same_sense_keeps_the_claim_accepted(settings: Any) -> None:
    """ "during" for "on" is the same fact in other words, not another word in its place."""
    answer = "Hotel stays cost at most 120 EUR a night on business trips to Leipzig."
    second = "Hotel stays cost at most 120 EUR a night during business trips to Leipzig."
    snapshot = _judge(settings, answer, second, request="What do hotel stays cost?")
    assert snapshot.status == "accepted", snapshot.result


def test_a_word_after_for_beside_a_currency_is_no_other_name(settings: Any) -> None:
    """ "for a provided breakfast" does not put another name where the claim's "for
    domestic business travel is 46 EUR" has one: a currency is no name."""
    answer = "The daily meal allowance for domestic business travel is 46 EUR."
    second = (
        "If a meal is provided by a customer, a conference or the hotel, the allowance is "
        "reduced: by 20 percent for a provided breakfast and by 40 percent each for a "
        "provided lunch or dinner."
    )
    snapshot = _judge(settings, answer, second, request="What is the daily meal allowance?")
    assert snapshot.status == "accepted", snapshot.result


def test_an_address_is_no_other_name_for_what_the_heron_is_named(settings: Any) -> None:
    """ "is Kranhafen 9, … Hamburg" puts no name in the place of "is named Okkerlund": a
    form of "be" gives no role."""
    answer = (
        "The wooden heron that stands in the Hamburg reception is named Okkerlund, after "
        "the boat-builder who carved it."
    )
    second = "The headquarters address is Kranhafen 9, 20457 Hamburg, Germany."
    snapshot = _judge(settings, answer, second, request="What is the wooden heron named?")
    assert snapshot.status == "accepted", snapshot.result


def test_a_name_in_a_sentence_about_something_else_is_no_other_name(settings: Any) -> None:
    """Another name after a word the claim has ("the Head of Finance" for "the Head of
    Sales") disputes only a claim whose subject the sentence's shares."""
    answer = "Discounts up to 25 percent need approval from the Head of Sales."
    second = (
        "Claims submitted later are only paid in justified exceptions and need the approval "
        "of the Head of Finance."
    )
    snapshot = _judge(settings, answer, second, request="Who approves discounts up to 25 percent?")
    assert snapshot.status == "accepted", snapshot.result


FREEZE = (
    "The annual peak-season code freeze, known internally as the Lantern Freeze, begins on "
    "17 November and lasts 23 days."
)
FREEZE_REQUEST = (
    "When does the annual peak-season code freeze begin and how many days does it last?"
)


@pytest.mark.parametrize(
    "second",
    [
        "The following trainings must be completed within your first 14 days: information "
        "security awareness, data protection (GDPR) basics, and the code of conduct.",
        "Full-time employees are entitled to 30 days of paid annual leave per calendar year.",
        "The holiday freeze covers the period from 22 December to 2 January.",
        "The holiday freeze begins on 22 December and lasts 12 days.",
        "Teams are expected to plan their work with the freeze in mind: large features that "
        "are not ready by the last train before the freeze wait until January, and the weeks "
        "before the freeze are not the time for risky migrations.",
        "These two days do not count against your annual leave.",
        "The internal target for completing a data subject access request is 21 days.",
    ],
    ids=[
        "words shared after its verb",
        "annual leave",
        "another freeze",
        "another freeze's dates",
        "a month that is no date",
        "what the figure counts, shared",
        "what the figure counts and 'internal'",
    ],
)
def test_figures_about_another_period_or_freeze_keep_the_deep_fact_accepted(
    settings: Any, second: str
) -> None:
    """The demo's false dispute (PostgreSQL's search also returned the onboarding guide):
    the peak-season freeze's 23 days are not disputed by a sentence about other days
    that shares the claim's words only after its verb ("the code of conduct", "annual
    leave"), nor by another freeze's dates."""
    snapshot = _judge(settings, FREEZE, second, request=FREEZE_REQUEST)
    _assert_accepted_undisputed(snapshot)


@pytest.mark.parametrize(
    "second",
    [
        "The annual peak-season code freeze begins on 20 November.",
        "The annual peak-season code freeze begins on 20 November and lasts 23 days.",
        "The Lantern Freeze lasts 30 days.",
        "The annual peak-season code freeze no longer lasts 23 days.",
    ],
    ids=["another start", "another start, same length", "another duration", "no longer"],
)
def test_other_dates_of_the_same_freeze_dispute_the_deep_fact(settings: Any, second: str) -> None:
    snapshot = _judge(settings, FREEZE, second, request=FREEZE_REQUEST)
    _assert_disputed_by(snapshot, second)


def test_the_task_page_shows_the_disputed_claim_with_both_quotes(
    client: Client, reviewer: Any, requester: Any, settings: Any
) -> None:
    """The disputed claim is shown as disputed, with what each source says (both quotes
    when figures do not tell them apart), and its evidence fragment shows both."""
    answer = "Contractors are covered by the travel insurance."
    second = "Contractors are not covered by the travel insurance."
    snapshot = _judge(settings, answer, second, owner=requester, request="Are contractors insured?")
    assert snapshot.status == "insufficient_evidence", snapshot.result
    client.force_login(reviewer)

    html = client.get(f"/tasks/{snapshot.task.pk}/").content.decode()

    item = re.search(
        r'<li class="claim-item claim-disputed-item" id="claim-item-1">.*?</li>', html, re.S
    )
    assert item, "claim 1 is not shown as disputed"
    assert f'R1: "{answer}"; R2 says "{second}"' in item.group(0).replace("&quot;", '"')
    fragment = client.get(
        reverse("claim_evidence", args=[snapshot.task.pk, snapshot.pk, "1"]),
        headers={"HX-Request": "true"},
    ).content.decode()
    assert f"{answer}</mark>" in fragment and f"{second}</mark>" in fragment
    assert "states otherwise" in fragment


@pytest.mark.parametrize(
    ("answer", "second", "asked"),
    [
        (
            "Every trip needs the approval of your manager before you book anything.",
            "Laptops are replaced at the end of their replacement cycle or when they no "
            "longer meet the needs of your role.",
            "What does the source say about trip approval?",
        ),
        (
            "The Security Lead identifies volatile evidence at the start of the analysis "
            "and secures it first.",
            "After any rotation, the Security Lead verifies that the old credentials no "
            "longer work.",
            "What does the source say about volatile evidence?",
        ),
        (
            "New features are deployed dark, behind feature flags, and switched on "
            "gradually once they are proven.",
            "A feature flag is a switch that turns a feature on or off at runtime, used to "
            "release features gradually.",
            "What does the source say about new features?",
        ),
        (
            "Your manager approves or declines the request.",
            "Your manager approves requests.",
            "What does the source say about a request to the manager?",
        ),
        (
            "Data owners respond within five working days.",
            "IT will repair or replace it, normally within three working days.",
            "What does the source say about data owners?",
        ),
    ],
    ids=[
        "no longer, of laptops",
        "no longer, of credentials",
        "used to, a purpose",
        "or declines",
        "what the figures count",
    ],
)
def test_handbook_sentences_that_update_or_negate_something_else_dispute_nothing(
    settings: Any, answer: str, second: str, asked: str
) -> None:
    """Issue 37: sentences of the demo handbook that disputed true claims about other
    things. An update ("no longer") disputes a claim only when its own clause is about
    the claim's subject and what follows it is the claim's ("the old credentials no
    longer work" says nothing of what the Security Lead does first); "you" and "your"
    are no subject two sentences share, nor what a figure counts ("working days"); "is
    used to" states a purpose, not the past; "or declines" offers a choice, it negates
    nothing."""
    snapshot = _judge(settings, answer, second, request=asked)
    _assert_accepted_undisputed(snapshot)


@pytest.mark.parametrize(
    "second",
    [
        "Hotels used to be capped at 150 EUR per night.",
        "Hotel stays are capped at 150 EUR per night, as the rate was changed from 120 "
        "EUR to 150 EUR.",
        "Because costs rose, hotel stays are no longer capped at 120 EUR a night.",
    ],
    ids=["used to be", "changed from to, in a later clause", "no longer, after a clause"],
)
def test_updates_of_the_claims_own_subject_still_dispute_it(settings: Any, second: str) -> None:
    """Issue 37: the narrower update rule still reads an update about the claim's own
    subject, wherever in the sentence it stands."""
    answer = "Hotel stays on standard business trips are capped at 120 EUR a night."
    snapshot = _judge(settings, answer, second, request="What is the hotel cap per night?")
    _assert_disputed_by(snapshot, second)


@pytest.mark.parametrize(
    ("answer", "second", "asked"),
    [
        (
            "Credits must be claimed within 30 days after the end of the month.",
            "The following trainings must be completed within your first 14 days.",
            "When must credits be claimed?",
        ),
        (
            "Shared credentials are rotated by the owning team within five working days.",
            "The People team confirms the last working day in writing within three working days.",
            "When are shared credentials rotated?",
        ),
        (
            "Part-time employees receive a pro-rata entitlement based on their working days.",
            "They do not receive the weekly train.",
            "What do part-time employees receive?",
        ),
        (
            "In 2013, the team made the decision to rebuild LatticeRoute as a web application.",
            "By the end of 2012, LatticeRoute had six customers and the company had five"
            " employees.",
            "What does the source say about LatticeRoute?",
        ),
    ],
    ids=[
        "figures of another duty",
        "figures of another team",
        "a negation of something else",
        "the year of another event",
    ],
)
def test_figures_and_negations_whose_subject_is_another_dispute_nothing(
    settings: Any, answer: str, second: str, asked: str
) -> None:
    """Issue 44: handbook sentences that disputed true claims with other figures or a
    negation though neither subject holds a word of the other's (what "must" and
    "within" share is no subject), or with the year of another event (a year disputes
    only from a sentence about the same fact)."""
    snapshot = _judge(settings, answer, second, request=asked)
    _assert_accepted_undisputed(snapshot)


@pytest.mark.parametrize(
    "second",
    [
        "The public status page is updated within 30 minutes.",
        "The status page is not updated within 60 minutes.",
    ],
    ids=["other figures", "negated"],
)
def test_the_same_subject_with_other_figures_or_negated_still_disputes(
    settings: Any, second: str
) -> None:
    """Issue 44: the subject filter keeps the disputes about the claim's own subject."""
    answer = "The status page is updated within 60 minutes."
    snapshot = _judge(settings, answer, second, request="How soon is the status page updated?")
    _assert_disputed_by(snapshot, second)


def test_another_year_of_the_same_event_still_disputes(settings: Any) -> None:
    """Issue 44: a year disputes from a sentence about the same fact."""
    answer = "In 2020, Henrike Oltmanns became chief executive."
    second = "Henrike Oltmanns became chief executive in 2019."
    snapshot = _judge(settings, answer, second, request="When did she become chief executive?")
    _assert_disputed_by(snapshot, second)


def test_a_duration_in_years_is_no_year_of_another_event(settings: Any) -> None:
    """Issue 44: "for 30 years" is a duration, not a calendar year: it disputes a career
    "over five decades" from any sentence naming the subject, as other figures do."""
    answer = (
        "Alice Cooper (born February 4, 1948) is an American singer whose career spans over"
        " five decades."
    )
    second = "Alice Cooper has been working in his field for 30 years."
    snapshot = _judge(
        settings, answer, second, request="What does the source say about Alice Cooper?"
    )
    _assert_disputed_by(snapshot, second)


@pytest.mark.parametrize(
    ("answer", "second", "asked"),
    [
        (
            "A SEV1 incident is a complete outage of a core product.",
            "During a SEV1 or SEV2 incident, a hotfix may be merged with a single approving"
            " review from a senior engineer.",
            "What is a SEV1 incident?",
        ),
        (
            "Security and audit logs are retained for one year.",
            "Security hotline: call +49 40 5550 1910.",
            "How long are security logs retained?",
        ),
        (
            "Part-time employees receive a pro-rata entitlement based on the number of working"
            " days in their contract; an employee working four days per week receives four"
            " fifths of the full entitlement.",
            "Mailboxes of former employees are deleted 90 days after the last working day.",
            "What do part-time employees receive?",
        ),
        (
            "If a release in the last two hours correlates with the errors, roll it back.",
            "The release dashboard shows every deployment and feature flag change of the last"
            " 24 hours.",
            "When is a release rolled back?",
        ),
        (
            "The IT team (it@northwind-lattice.example) is responsible for all company hardware.",
            "People team: people@northwind-lattice.example.",
            "Who is responsible for company hardware?",
        ),
        (
            "Nothing in this document is a policy.",
            "This document explains what can be claimed, how to submit a claim, and when the"
            " money arrives in your account.",
            "Is it a policy?",
        ),
        (
            "| 2020 | Henrike Oltmanns becomes CEO.",
            "In 2014, Henrike Oltmanns joined as the company's first head of sales.",
            "When did Henrike Oltmanns become CEO?",
        ),
    ],
    ids=[
        "a code of letters and digits",
        "a telephone number",
        "the subject's head is another",
        "the head of the subject is the last word",
        "a label line",
        "another document's this document",
        "another dated event of the same person",
    ],
)
def test_codes_numbers_to_call_and_other_heads_dispute_nothing(
    settings: Any, answer: str, second: str, asked: str
) -> None:
    """Issue 44: handbook sentences that disputed true statements: "SEV1" and a telephone
    number are no amounts; a subject whose head is another thing ("Mailboxes of former
    employees", "The release dashboard") says nothing of the claim's; a label line says
    what the label stands for; "this document" in another tool result is that document;
    a subject's other dated event dates nothing of the claim's."""
    snapshot = _judge(settings, answer, second, request=asked)
    _assert_accepted_undisputed(snapshot)


@pytest.mark.parametrize(
    ("answer", "second"),
    [
        (
            "A SEV1 incident is resolved within 4 hours.",
            "A SEV1 incident is resolved within 8 hours.",
        ),
        (
            "The security hotline answers within 15 minutes.",
            "Security hotline: answers within 30 minutes.",
        ),
        (
            "Part-time employees receive four fifths of the full entitlement.",
            "Part-time employees receive three fifths of the full entitlement.",
        ),
        (
            "Because of their dependence on the sea ice, polar bears are classified as marine"
            " mammals; they depend on the ocean as their main food source.",
            "Polar bears depend on the land as their main food source.",
        ),
    ],
    ids=[
        "the same code, other figures",
        "a label line's figures",
        "the same head",
        "a plural read as the verb",
    ],
)
def test_the_same_head_or_a_label_with_other_figures_still_disputes(
    settings: Any, answer: str, second: str
) -> None:
    """Issue 44: the head and label rules leave the disputes about the claim's own
    subject."""
    snapshot = _judge(settings, answer, second, request="What does the handbook say?")
    _assert_disputed_by(snapshot, second)


def test_another_documents_this_policy_still_disputes_a_claim_naming_the_policy(
    settings: Any,
) -> None:
    """Issue 44: "this document" in another tool result speaks of its own document only
    beside a claim that says "this document" too; beside a claim that names the policy,
    the policy's own "This policy does not apply" still disputes it."""
    answer = "Contractors are covered by the travel policy."
    second = "This policy does not cover contractors."
    snapshot = _judge(settings, answer, second, request="Are contractors covered?")
    _assert_disputed_by(snapshot, second)
