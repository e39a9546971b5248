"""``offline:judge``: a deterministic, network-free grounding judge ("An honest judge").

It is not an LLM and does not understand paraphrase. It reads the validator prompt it is
sent (the user message built by ``evidence_app.validator.prompt``), takes the tool
results as evidence and the answer under review (the last section), and accepts only
what it can verify word for word (``evidence_app.offline_judge.grounding``):

- the answer is split into claims (sentences; an extractive quote ``- "…" (source: …)``
  is one claim; headers like "Sources: …" are skipped; a one- or two-word answer is one
  short claim);
- a claim is *supported* only when one evidence sentence states it: all its words, in
  order, with nothing between them that names another entity, gives a figure, negates,
  hedges or changes the role; or when a date or a relative figure ("born two years
  after X") computes from the years the evidence gives;
- a claim is *contradicted* when a sentence states the same thing with another figure,
  a comparison the figure breaks, or another name where the claim's name is nowhere in
  the evidence;
- everything else (paraphrase, negation, roles, relations, short answers whose role in
  the evidence it cannot check) is *unsupported*: a person decides.

Verdict: any contradiction → ``rejected`` (``unsupported_claim``); every claim supported
and every part of the request answered → ``accepted``; verified claims from sources that
are about another subject than the request → ``rejected`` (``goal_missed``), or that
skip a part of a two-part request → ``rejected`` (``incomplete``); anything else →
``insufficient_evidence``. A correct answer is never rejected for not restating the
question. It returns the validator JSON as text, like a real model would.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models import Model
from pydantic_ai.models.function import AgentInfo, FunctionModel

from evidence_app.offline_judge import grounding
from evidence_app.offline_judge.answer_text import (
    ABSENCE_RE,
    FIGURE_QUESTION_RE,
    LETTERS_RE,
    AnswerClaim,
    answer_claims,
    block,
    content_tokens,
    content_words,
    evidence_sentences,
    pairs,
    requirements_of,
    split_sentences,
    subject_words,
    titles_of,
)
from evidence_app.offline_judge.grounding import Finding, Sentence
from evidence_app.offline_judge.meaning import with_meaning, with_short_meaning
from evidence_app.offline_judge.verdicts import (
    REQUIREMENT_COVER,
    Judged,
    Material,
    decide,
    overlap,
    ref,
    verdict,
)
from evidence_app.offline_judge.wording import flat
from evidence_app.validator.citations import normalised
from evidence_app.validator.prompt import ANSWER_LABEL, REQUEST_LABEL
from project.llm.messages import first_user_prompt

__all__ = [
    "MODEL_NAME",
    "CORROBORATING_MODEL_NAME",
    "content_words",
    "corroborate",
    "judge",
    "offline_judge_model",
    "corroborating_judge_model",
    "split_sentences",
]

MODEL_NAME = "offline:judge"
# Claims with fewer essential words than this are short answers ("Delhi", "in 1998").
SHORT_CLAIM = 3

_COUNTRIES = frozenset(
    """afghanistan albania algeria argentina armenia australia austria bangladesh belgium
    bolivia brazil bulgaria cambodia cameroon canada chile china colombia croatia cuba
    denmark ecuador egypt england estonia ethiopia finland france germany ghana greece
    hungary iceland india indonesia iran iraq ireland israel italy jamaica japan jordan
    kenya korea latvia lebanon libya lithuania malaysia mexico morocco nepal netherlands
    nigeria norway pakistan peru philippines poland portugal romania russia scotland serbia
    slovakia slovenia spain sweden switzerland syria taiwan thailand tunisia
    turkey uganda ukraine uruguay venezuela vietnam wales yemen zimbabwe""".split()
)
_KIND_QUESTION_RE = re.compile(
    r"\b(?:what|which|in what|in which)\s+(?P<kind>city|town)\b", re.IGNORECASE
)


def offline_judge_model() -> Model:
    return FunctionModel(respond, model_name=MODEL_NAME)


def _kind_notes(claim: str, said: str, request: str) -> list[str]:
    """What the question asks for against what the short answer is: a city answered with
    a country, a figure question ("how many", "what year") answered without one."""
    kind = _KIND_QUESTION_RE.search(request)
    if kind and said in _COUNTRIES:
        return [f'The request asks for a {kind.group("kind").lower()}; "{claim}" is a country.']
    if FIGURE_QUESTION_RE.search(request) and not _has_figure(claim):
        return [f'The request asks for a figure or a date; "{claim}" has none.']
    return []


def short_answer(claim: str, request: str, evidence_text: str, vocabulary: set[str]) -> Finding:
    """A one- or two-word answer names something; whether the evidence gives it for what
    the question asks is a judgement a person makes. The note says what was checked."""
    evidence = f" {flat(evidence_text)} "
    said = flat(claim)
    notes = _kind_notes(claim, said, request)
    if said and f" {said} " in evidence:
        notes.append(
            f'"{claim}" occurs in the evidence; whether the evidence gives it as the answer '
            "to the request is for a person to check."
        )
    else:
        spliced = grounding.spliced_names(grounding.tokens(claim), evidence_text, vocabulary)
        notes.append(
            f'"{spliced[0]}" does not occur as written in the evidence (its words occur apart).'
            if spliced
            else f'"{claim}" does not occur in the evidence.'
        )
    return Finding("unsupported", note=" ".join(notes))


def _material(prompt: str, request: str) -> Material:
    evidence = evidence_sentences(prompt)
    text = "\n".join(s.text for s in evidence)
    source_words: dict[str, set[str]] = {}
    source_pairs: dict[str, set[tuple[str, str]]] = {}
    for s in evidence:
        source_words.setdefault(s.source, set()).update(s.norms)
        source_pairs.setdefault(s.source, set()).update(pairs(content_tokens(s.text)))
    return Material(
        request=request,
        evidence=evidence,
        titles=titles_of(prompt),
        vocabulary={w.lower() for w in LETTERS_RE.findall(text)},
        text=text,
        source_words=source_words,
        source_pairs=source_pairs,
    )


def _named(source: str, sentence: Sentence, titles: dict[str, str]) -> bool:
    label = ref(sentence)
    wanted = source.strip().lower().rstrip(".")
    return wanted == label.lower() or wanted == titles.get(label, "").lower()


def is_short(text: str) -> bool:
    """A short answer names something rather than stating it: fewer than three words
    ("Delhi", "in 1998"), or only names and figures ("President Richard Nixon")."""
    words = grounding.essential(grounding.tokens(text))
    if len(words) < SHORT_CLAIM:
        return True
    return all(t.name or t.figure or t.text[:1].isupper() for t in words)


def judge_claim(claim: AnswerClaim, m: Material) -> Judged:
    if is_short(claim.text):
        finding = short_answer(claim.text, m.request, m.text, m.vocabulary)
        return Judged(claim, with_short_meaning(m.request, claim.text, finding, m.evidence), True)
    finding = grounding.check(claim.text, m.evidence, m.vocabulary, m.text)
    finding = with_meaning(claim.text, finding, m.evidence)
    support = finding.support[0] if finding.support else None
    if finding.verdict != "supported" or not claim.source or support is None:
        return Judged(claim, finding)
    named_sources = [e for e in m.evidence if _named(claim.source, e, m.titles)]
    if not named_sources or _named(claim.source, support, m.titles):
        return Judged(claim, finding)
    # The answer attributes the claim to a source that does not state it.
    own = grounding.check(claim.text, named_sources, m.vocabulary, m.text)
    if own.verdict == "supported":
        return Judged(claim, own)
    note = (
        f"The answer attributes this to {claim.source}, which does not state it "
        f"(it is in {ref(support)})."
    )
    return Judged(claim, Finding("unsupported", note=note))


def _claim_entry(index: int, judged: Judged) -> dict[str, object]:
    finding = judged.finding
    cited: list[tuple[Sentence, str]] = []
    if finding.contradiction is not None:
        cited = [(finding.contradiction, "contradicts")]
    elif finding.verdict == "supported":
        cited = [(e, "supports") for e in finding.support]
    note = finding.note
    if finding.conflict is not None:
        cited.append((finding.conflict, "contradicts"))
        stated = finding.dispute or "other figures"
        note = (note + f" {_conflict_where(finding)} {stated}: a person must decide.").strip()
    return {
        "id": str(index),
        "text": judged.claim.text,
        "verdict": finding.verdict,
        "citations": [{"ref": ref(e), "quote": e.text, "stance": stance} for e, stance in cited],
        "note": note,
    }


def _conflict_where(finding: Finding) -> str:
    """Who disputes the claim: the supporting source itself, or another one."""
    if finding.support and finding.conflict is not None:
        if finding.conflict.source == finding.support[0].source:
            return "The same source also states"
    return "Another source states"


def _has_figure(text: str) -> bool:
    return any(t.figure for t in grounding.tokens(text))


def _same_word(a: str, b: str) -> bool:
    """One word, stemmed differently ("name" and "named")."""
    return a == b or (min(len(a), len(b)) >= 4 and (a.startswith(b) or b.startswith(a)))


def _shares(wanted: set[str], words: set[str]) -> bool:
    return any(_same_word(w, x) for w in wanted for x in words)


def _covers(wanted: set[str], words: set[str]) -> bool:
    """The claims answer a part of the request when together they hold every subject word
    of it (one may be missing from four or more): sharing words is not answering."""
    lacking = [w for w in wanted if not any(_same_word(w, x) for x in words)]
    return len(lacking) <= (1 if len(wanted) >= 4 else 0)


def _covering(
    wanted: set[str], relevant: list[tuple[str, set[str]]], judged: list[Judged]
) -> list[str]:
    """The claims that answer a part: the relevant ones when together they hold its
    subject words; else a short answer the model read as the answer to the request."""
    union = set().union(*(words for _i, words in relevant))
    if relevant and _covers(wanted, union):
        return [i for i, _words in relevant]
    return [str(i) for i, j in enumerate(judged, start=1) if j.short and j.finding.entailed]


def _requirement(part: str, judged: list[Judged], absences: list[str]) -> dict[str, object]:
    wanted = subject_words(part)
    relevant = [
        (str(i), content_words(j.claim.text))
        for i, j in enumerate(judged, start=1)
        if j.supported and (not wanted or _shares(wanted, content_words(j.claim.text)))
    ]
    covering = _covering(wanted, relevant, judged)
    met = "yes" if covering else "no"
    if covering and FIGURE_QUESTION_RE.search(part):
        if not any(_has_figure(judged[int(i) - 1].claim.text) for i in covering):
            met = "partly"
    touched = any(wanted & content_words(j.claim.text) for j in judged)
    if met == "no" and (touched or any(j.short for j in judged)):
        met = "partly"  # on the subject, or a short answer naming something: not "off"
    admitted = any(overlap(wanted, content_words(t)) >= REQUIREMENT_COVER for t in absences)
    return {"text": part, "met": met, "claim_ids": covering, "admitted_missing": admitted}


def judge(prompt: str) -> dict[str, object]:
    """The verdict for one validator prompt, as the validator JSON object."""
    answer = block(prompt, ANSWER_LABEL)
    request = block(prompt, REQUEST_LABEL) or ""
    if answer is None:
        return verdict(
            "insufficient_evidence",
            0.0,
            reasoning="The prompt holds no answer under review, so nothing can be confirmed.",
            evidence_gaps=["No answer section was found in the validator input."],
        )
    material = _material(prompt, request)
    found = answer_claims(answer)
    absences = [c.text for c in found if ABSENCE_RE.search(c.text)]
    judged = [judge_claim(c, material) for c in found if not ABSENCE_RE.search(c.text)]
    entries = [_claim_entry(i, j) for i, j in enumerate(judged, start=1)]
    requirements = [_requirement(p, judged, absences) for p in requirements_of(request)]
    if absences and not any(r["admitted_missing"] for r in requirements):
        # A general "the documents do not state it" covers whatever is unanswered.
        for r in requirements:
            r["admitted_missing"] = True
    return decide(judged, entries, requirements, absences, material)


def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    # The first user message is the validator material (retry feedback comes later).
    verdict = judge(first_user_prompt(messages))
    return ModelResponse(parts=[TextPart(json.dumps(verdict, ensure_ascii=False))])


# --- A stricter stand-in: two sources for every claim ---------------------------------------

CORROBORATING_MODEL_NAME = "offline:judge-corroborating"


def corroborate(
    verdict: dict[str, Any], stated_by: dict[str, set[str]] | None = None
) -> dict[str, Any]:
    """The offline judge's verdict held to a stricter rule: a claim counts as supported
    only when two different tool results state it (its citations' sources, and every
    other source stating a cited sentence word for word: ``stated_by``, normalised
    sentence -> refs). A supported claim with one source becomes unsupported (the reason
    in its note), and an accepted verdict with such a claim becomes
    ``insufficient_evidence``: a person looks. Nothing else changes."""
    stated_by = stated_by or {}
    claims = [dict(c) for c in verdict.get("claims") or []]
    weakened = False
    for claim in claims:
        sources: set[str] = set()
        for citation in claim.get("citations") or []:
            if citation.get("stance", "supports") == "supports":
                sources.add(str(citation.get("ref")))
                sources |= stated_by.get(normalised(str(citation.get("quote", ""))), set())
        if claim.get("verdict") == "supported" and len(sources) < 2:
            claim["verdict"] = "unsupported"
            claim["note"] = "stated by one source only; this judge asks for two"
            weakened = True
    if not weakened or verdict.get("status") != "accepted":
        return {**verdict, "claims": claims}
    return {
        **verdict,
        "claims": claims,
        "status": "insufficient_evidence",
        "score": min(float(verdict.get("score") or 0.0), 0.5),
        "failure_category": "unsupported_claim",
        "evidence_gaps": [
            *(verdict.get("evidence_gaps") or []),
            "A claim is stated by one source only; this judge asks for two.",
        ],
        "reasoning": "Every claim needs two sources that state it; at least one has one.",
    }


def respond_corroborating(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    prompt = first_user_prompt(messages)
    stated_by: dict[str, set[str]] = {}
    for sentence in evidence_sentences(prompt):
        stated_by.setdefault(normalised(sentence.text), set()).add(ref(sentence))
    verdict = corroborate(judge(prompt), stated_by)
    return ModelResponse(parts=[TextPart(json.dumps(verdict, ensure_ascii=False))])


def corroborating_judge_model() -> Model:
    """``offline:judge-corroborating``: the offline judge asking two sources per claim; a
    deterministic second judge that disagrees with ``offline:judge`` on single-source
    answers (the demo's second judge)."""
    return FunctionModel(respond_corroborating, model_name=CORROBORATING_MODEL_NAME)
