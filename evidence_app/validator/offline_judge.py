"""``offline:judge``: a deterministic, network-free grounding judge (X7, "An honest judge").

It is not an LLM and does not understand paraphrase. It reads the validator prompt it is
sent (the user message built by ``evidence_app.validator.prompt``), takes the tool
results as evidence and the answer under review (the last section), and accepts only
what it can verify word for word (``evidence_app.validator.grounding``):

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
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models import Model
from pydantic_ai.models.function import AgentInfo, FunctionModel

from evidence_app.validator import grounding
from evidence_app.validator.citations import normalised
from evidence_app.validator.confidence import ClaimSignal, answer_confidence
from evidence_app.validator.grounding import Finding, Sentence
from evidence_app.validator.prompt import ANSWER_LABEL, REQUEST_LABEL
from project.llm.messages import first_user_prompt

MODEL_NAME = "offline:judge"
# A claim sharing this share of a part's subject words is about that part (it is then
# never "about another subject"); answering it needs all of them (``_covers``).
REQUIREMENT_COVER = 0.5
# A source is about the request's subject when it holds this share of its subject words.
SOURCE_ABOUT = 0.5
# Claims with fewer essential words than this are short answers ("Delhi", "in 1998").
SHORT_CLAIM = 3

_QUESTION_WORDS = frozenset(
    """many much long often old far percentage date source sources say says said tell know
    known describe explain information evidence document documents according please give
    answer question state write sentence text page""".split()
)
_GENERIC = frozenset(grounding.stem(w) for w in _QUESTION_WORDS)
_BLOCK_RE = re.compile(
    r'<EXTERNAL-CONTENT label="(?P<label>[^"]*)">\n(?:(?P<body>.*?)\n)?</EXTERNAL-CONTENT>',
    re.DOTALL,
)
_TOOL_RESULT_LABEL_RE = re.compile(r"^R\d+ .+ result( \(continued\))?$")
# A sentence ends at . ! ? before a space and a capital, digit or quote, or straight
# before a capitalised word ("century.First"); not after an initial or an abbreviation.
_BOUNDARY_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(*“‘])|(?<=[a-z]{2}[.!?])(?=[A-Z][a-z])")
_ABBREVIATIONS = frozenset(
    """mr mrs ms dr st jr sr prof inc ltd co no vs etc mt ft gen col capt lt sgt rev hon
    jan feb mar apr jun jul aug sep sept oct nov dec approx fig vol ed eds""".split()
)
_QUOTE_RE = re.compile(r'^"(?P<sentence>.+)"\s*(\((source|sources):[^)]*\))?\.?$')
_LETTERS_RE = re.compile(r"[A-Za-z]+")
_FIGURE_QUESTION_RE = re.compile(
    r"\b(how (many|much|long|often|old|far)|what percentage|which percentage|when|what date|"
    r"what year|which year)\b",
    re.IGNORECASE,
)
# "I could not find …", "The handbook does not state …": statements about the evidence,
# not claims to check; an answer made only of them answers nothing.
_ABSENCE_RE = re.compile(
    r"\b(could not|cannot|can't|couldn't|unable to|no information|does not (state|say|mention|"
    r"specify|contain)|do not (state|say|mention|specify|contain)|not (stated|mentioned|"
    r"specified|found)|none of the passages|may not contain)\b",
    re.IGNORECASE,
)
_SKIP_LINE_RE = re.compile(r"^(from the knowledge base:?|sources?:.*|answer:?)$", re.IGNORECASE)
STOPWORDS = frozenset(
    """a an and are as at be been being but by can could did do does for from had has have
    how i if in into is it its may might must of on or our per shall should so such
    than that the their them then there these they this those to under up was we were what
    when where which while who whom why will with within would you your all each every
    also other some very about after before over between during above below
    out off again further once here both few own same too just now yes""".split()
)
# What a "what/which <kind>" question asks for, and answers that are of another kind.
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


def _content_tokens(text: str) -> list[str]:
    """The compared forms of a text's content words and figures, in order."""
    return [
        t.norm
        for t in grounding.tokens(text)
        if not t.punct and (t.figure or (len(t.text) >= 3 and t.lower not in STOPWORDS))
    ]


def content_words(text: str) -> set[str]:
    """Words of three letters or more that are not stop words, and numbers, in the form
    the grounding check compares ("Arthur's" is "arthur", "four" is "4")."""
    return set(_content_tokens(text))


def _pairs(norms: list[str]) -> set[tuple[str, str]]:
    return set(zip(norms, norms[1:], strict=False))


def subject_words(request: str) -> set[str]:
    """The request's content words without the question's own words ("how long",
    "what does the source say about")."""
    return {w for w in content_words(request) if w not in _GENERIC}


def split_sentences(text: str) -> list[str]:
    """Sentences of one line of text: not cut at initials ("Mark L. Lester") or
    abbreviations, cut where a sentence is joined to the next ("century.First")."""
    out: list[str] = []
    start = 0
    for match in _BOUNDARY_RE.finditer(text):
        before = text[start : match.start()].rstrip()
        last = re.search(r"(\S+)$", before)
        word = last.group(1).rstrip(".!?").lower().lstrip("(\"'") if last else ""
        initial = before.endswith(".") and (
            (len(word) == 1 and word.isalpha())
            or word in _ABBREVIATIONS
            or re.fullmatch(r"(?:[a-z]\.)+[a-z]", word) is not None
        )
        if initial:
            continue
        out.append(text[start : match.start()].strip())
        start = match.end()
    out.append(text[start:].strip())
    return [s for s in out if s]


def _split_lines(text: str) -> list[str]:
    sentences: list[str] = []
    for raw_line in text.splitlines():
        line = re.sub(r"^\s*(#+|>|[-*•]|\d+\.)\s*", "", raw_line).strip().strip("*").strip()
        if line:
            sentences.extend(split_sentences(line))
    return sentences


def evidence_sentences(prompt: str) -> list[Sentence]:
    """Sentences of every tool result block in the prompt."""
    out: list[Sentence] = []
    for match in _BLOCK_RE.finditer(prompt):
        label = match.group("label")
        if _TOOL_RESULT_LABEL_RE.match(label):
            source = label.removesuffix(" (continued)")
            out.extend(
                grounding.sentence(s, source) for s in _split_lines(match.group("body") or "")
            )
    return out


def block(prompt: str, label: str) -> str | None:
    """The body of the last wrapped block with this label."""
    bodies = [
        m.group("body") or "" for m in _BLOCK_RE.finditer(prompt) if m.group("label") == label
    ]
    return bodies[-1] if bodies else None


@dataclass
class AnswerClaim:
    text: str  # as it stands in the answer
    source: str = ""  # the source the answer attributes it to ("Travel Policy", "R2")


_SOURCE_RE = re.compile(r"\s*\((?:source|sources):\s*(?P<source>[^)]*)\)")
_REF_MARK_RE = re.compile(r"\s*\[(?P<ref>R\d+)\]")


def answer_claims(answer: str) -> list[AnswerClaim]:
    """The claims of an answer with the source each names, if any; a one-word answer is
    a claim too."""
    claims: list[AnswerClaim] = []
    for raw_line in answer.splitlines():
        line = re.sub(r"^\s*([-*•]|\d+\.)\s*", "", raw_line).strip()
        if not line or _SKIP_LINE_RE.match(line):
            continue
        quoted = _QUOTE_RE.match(line)
        if quoted:
            source = _SOURCE_RE.search(line)
            named = source.group("source").strip() if source else ""
            claims.append(AnswerClaim(quoted.group("sentence").strip(), named))
            continue
        for sentence in split_sentences(line):
            source = _SOURCE_RE.search(sentence) or _REF_MARK_RE.search(sentence)
            named = ""
            if source is not None:
                named = (source.groupdict().get("source") or source.group(0)).strip(" []")
            sentence = _REF_MARK_RE.sub("", _SOURCE_RE.sub("", sentence)).strip()
            if grounding.words_of(grounding.tokens(sentence)):
                claims.append(AnswerClaim(sentence, named))
    return claims


# A request splits into the things it asks for at question marks, semicolons and "and"
# before a new question ("What is X and how long is Y?").
_PART_SPLIT_RE = re.compile(
    r"\?|;|\n|\b(?:and|also|plus)\s+(?=(?:what|how|when|which|who|where|whether|is|are|"
    r"does|do|can|must|should)\b)",
    re.IGNORECASE,
)


def requirements_of(request: str) -> list[str]:
    """The things the request asks for, in order (one part for a single question)."""
    parts: list[str] = []
    for piece in _PART_SPLIT_RE.split(request):
        piece = (piece or "").strip(" ,.")
        if not piece:
            continue
        if len(subject_words(piece)) < 2 and parts:
            parts[-1] = f"{parts[-1]} {piece}"
        elif len(subject_words(piece)) >= 1:
            parts.append(piece)
    return parts or ([request.strip()] if request.strip() else [])


def _titles(prompt: str) -> dict[str, str]:
    """Tool result label (``R3``) -> the document title its header or body names."""
    titles: dict[str, str] = {}
    for match in re.finditer(
        r"^\[(?P<ref>R\d+)\] [^\n]*?title: (?P<title>[^;\n]+)", prompt, re.MULTILINE
    ):
        titles.setdefault(match.group("ref"), match.group("title").strip())
    for match in _BLOCK_RE.finditer(prompt):
        label = match.group("label")
        if _TOOL_RESULT_LABEL_RE.match(label):
            ref = label.split(" ", 1)[0]
            body_title = re.match(r"Title:\s*(.+)", match.group("body") or "")
            if body_title and ref not in titles:
                titles[ref] = body_title.group(1).strip()
    return titles


def _ref(sentence: Sentence | None) -> str:
    return sentence.source.split(" ", 1)[0] if sentence else "?"


def _named(source: str, sentence: Sentence, titles: dict[str, str]) -> bool:
    ref = _ref(sentence)
    wanted = source.strip().lower().rstrip(".")
    return wanted == ref.lower() or wanted == titles.get(ref, "").lower()


def _kind_notes(claim: str, said: str, request: str) -> list[str]:
    """What the question asks for against what the short answer is: a city answered with
    a country, a figure question ("how many", "what year") answered without one."""
    kind = _KIND_QUESTION_RE.search(request)
    if kind and said in _COUNTRIES:
        return [f'The request asks for a {kind.group("kind").lower()}; "{claim}" is a country.']
    if _FIGURE_QUESTION_RE.search(request) and not _has_figure(claim):
        return [f'The request asks for a figure or a date; "{claim}" has none.']
    return []


def short_answer(claim: str, request: str, evidence_text: str, vocabulary: set[str]) -> Finding:
    """A one- or two-word answer names something; whether the evidence gives it for what
    the question asks is a judgement a person makes. The note says what was checked."""
    flat = " " + re.sub(r"[^a-z0-9]+", " ", evidence_text.lower()) + " "
    said = re.sub(r"[^a-z0-9]+", " ", claim.lower()).strip()
    notes = _kind_notes(claim, said, request)
    if said and f" {said} " in flat:
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


@dataclass
class Judged:
    claim: AnswerClaim
    finding: Finding
    short: bool = False

    @property
    def supported(self) -> bool:
        return self.finding.verdict == "supported"

    @property
    def support(self) -> Sentence | None:
        return self.finding.support[0] if self.finding.support else None


@dataclass
class Material:
    request: str
    evidence: list[Sentence]
    titles: dict[str, str]
    vocabulary: set[str]
    text: str
    # source label -> its content words and adjacent content-word pairs (is a source
    # about the request's subject?)
    source_words: dict[str, set[str]] = field(default_factory=dict)
    source_pairs: dict[str, set[tuple[str, str]]] = field(default_factory=dict)


def _material(prompt: str, request: str) -> Material:
    evidence = evidence_sentences(prompt)
    text = "\n".join(s.text for s in evidence)
    source_words: dict[str, set[str]] = {}
    source_pairs: dict[str, set[tuple[str, str]]] = {}
    for s in evidence:
        source_words.setdefault(s.source, set()).update(s.norms)
        source_pairs.setdefault(s.source, set()).update(_pairs(_content_tokens(s.text)))
    return Material(
        request=request,
        evidence=evidence,
        titles=_titles(prompt),
        vocabulary={w.lower() for w in _LETTERS_RE.findall(text)},
        text=text,
        source_words=source_words,
        source_pairs=source_pairs,
    )


def is_short(text: str) -> bool:
    """A short answer names something rather than stating it: fewer than three words
    ("Delhi", "in 1998"), or only names and figures ("President Richard Nixon")."""
    words = grounding.essential(grounding.tokens(text))
    if len(words) < SHORT_CLAIM:
        return True
    return all(t.name or t.figure or t.text[:1].isupper() for t in words)


def judge_claim(claim: AnswerClaim, m: Material) -> Judged:
    if is_short(claim.text):
        return Judged(claim, short_answer(claim.text, m.request, m.text, m.vocabulary), True)
    finding = grounding.check(claim.text, m.evidence, m.vocabulary, m.text)
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
        f"(it is in {_ref(support)})."
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
        note = (note + f" {_conflict_where(finding)} other figures: a person must decide.").strip()
    return {
        "id": str(index),
        "text": judged.claim.text,
        "verdict": finding.verdict,
        "citations": [{"ref": _ref(e), "quote": e.text, "stance": stance} for e, stance in cited],
        "note": note,
    }


def _conflict_where(finding: Finding) -> str:
    """Who states the other figures: the supporting source itself, or another one."""
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


def _overlap(wanted: set[str], words: set[str]) -> float:
    return len(wanted & words) / len(wanted) if wanted else 1.0


def _requirement(part: str, judged: list[Judged], absences: list[str]) -> dict[str, object]:
    wanted = subject_words(part)
    relevant = [
        (str(i), content_words(j.claim.text))
        for i, j in enumerate(judged, start=1)
        if j.supported and (not wanted or _shares(wanted, content_words(j.claim.text)))
    ]
    union = set().union(*(words for _i, words in relevant))
    covering = [i for i, _words in relevant] if relevant and _covers(wanted, union) else []
    met = "yes" if covering else "no"
    if covering and _FIGURE_QUESTION_RE.search(part):
        if not any(_has_figure(judged[int(i) - 1].claim.text) for i in covering):
            met = "partly"
    touched = any(wanted & content_words(j.claim.text) for j in judged)
    if met == "no" and (touched or any(j.short for j in judged)):
        met = "partly"  # on the subject, or a short answer naming something: not "off"
    admitted = any(_overlap(wanted, content_words(t)) >= REQUIREMENT_COVER for t in absences)
    return {"text": part, "met": met, "claim_ids": covering, "admitted_missing": admitted}


def _off_subject(judged: list[Judged], request: str, m: Material) -> bool:
    """Every claim is verified, none covers a part of the request, and every source they
    come from is about something else: it lacks the request's subject words and never
    has two of them side by side ("stock options"). An answer about another subject."""
    if not judged or any(not j.supported or j.short for j in judged):
        return False
    sources = {s.source for j in judged for s in j.finding.support}
    for part in requirements_of(request):
        subject = subject_words(part)
        if not subject:
            return False
        if any(_overlap(subject, content_words(j.claim.text)) >= REQUIREMENT_COVER for j in judged):
            return False
        phrase = _pairs([w for w in _content_tokens(part) if w not in _GENERIC])
        for src in sources:
            if not _lacks_subject(subject, m.source_words.get(src, set())):
                return False
            if phrase & m.source_pairs.get(src, set()):
                return False
    return True


def _lacks_subject(subject: set[str], words: set[str]) -> bool:
    """The source lacks more than half of the subject words, or two of three or more."""
    share = _overlap(subject, words)
    return share < SOURCE_ABOUT or (len(subject - words) >= 2 and len(subject) >= 3)


def judge(prompt: str) -> dict[str, object]:
    """The verdict for one validator prompt, as the validator JSON object."""
    answer = block(prompt, ANSWER_LABEL)
    request = block(prompt, REQUEST_LABEL) or ""
    if answer is None:
        return _verdict(
            "insufficient_evidence",
            0.0,
            reasoning="The prompt holds no answer under review, so nothing can be confirmed.",
            evidence_gaps=["No answer section was found in the validator input."],
        )
    material = _material(prompt, request)
    found = answer_claims(answer)
    absences = [c.text for c in found if _ABSENCE_RE.search(c.text)]
    judged = [judge_claim(c, material) for c in found if not _ABSENCE_RE.search(c.text)]
    entries = [_claim_entry(i, j) for i, j in enumerate(judged, start=1)]
    requirements = [_requirement(p, judged, absences) for p in requirements_of(request)]
    if absences and not any(r["admitted_missing"] for r in requirements):
        # A general "the documents do not state it" covers whatever is unanswered.
        for r in requirements:
            r["admitted_missing"] = True
    return _decide(judged, entries, requirements, absences, material)


def _decide(
    judged: list[Judged],
    entries: list[dict[str, object]],
    requirements: list[dict[str, object]],
    absences: list[str],
    material: Material,
) -> dict[str, object]:
    supported = [j for j in judged if j.supported]
    score = _confidence(judged, requirements, material)
    contradicted = [j for j in judged if j.finding.verdict == "contradicted"]
    if contradicted:
        return _rejected_contradiction(contradicted, judged, score, entries, requirements)
    unmet, missing, silent = _unmet(requirements)
    gaps = _gaps(judged)
    failure = _task_failure(judged, gaps, absences, silent, requirements, material)
    if failure:
        category, reason = failure
        return _rejected_task(category, reason, score, missing, unmet, entries, requirements)
    if not judged:
        missing.insert(
            0,
            "The answer says the evidence does not hold the answer."
            if absences
            else "The answer makes no checkable statement that answers the request.",
        )
    if gaps or missing:
        return _insufficient(judged, supported, score, gaps, missing, entries, requirements)
    refs = sorted({_ref(s) for j in supported for s in j.finding.support})
    return _verdict(
        "accepted",
        score,
        reasoning=(
            f"Every one of the {len(judged)} claim(s) is stated in the evidence "
            f"({', '.join(refs)}) and the {len(requirements)} requirement(s) of the "
            "request are met. (offline:judge checks wording, not meaning.)"
        ),
        claims=entries,
        requirements=requirements,
    )


def _confidence(judged: list[Judged], requirements: list[dict[str, object]], m: Material) -> float:
    """The verdict's graded score (``evidence_app.validator.confidence``)."""
    everything: frozenset[str] = frozenset().union(*(s.norms for s in m.evidence))
    signals = [_signal(j, m, everything) for j in judged]
    return answer_confidence(signals, [str(r["met"]) for r in requirements])


def _signal(judged: Judged, m: Material, everything: frozenset[str]) -> ClaimSignal:
    words = content_words(judged.claim.text)
    finding, support = judged.finding, judged.support
    if not judged.supported or support is None:
        coverage = len(words & everything) / len(words) if words else 0.0
        return ClaimSignal(finding.verdict, coverage=coverage, short=judged.short)
    stated = content_words(support.text)
    return ClaimSignal(
        "supported",
        coverage=1.0,
        tightness=len(words & stated) / len(stated) if stated else 0.0,
        sources=_sources(judged, m, words),
        disputed=finding.conflict is not None,
        short=judged.short,
    )


def _sources(judged: Judged, m: Material, words: set[str]) -> int:
    """Distinct sources stating the claim: its own, and any other whose sentence holds
    every content word of it and states it."""
    stating = {s.source for s in judged.finding.support}
    for s in m.evidence:
        if s.source in stating or not words <= s.norms:
            continue
        if grounding.check(judged.claim.text, [s], m.vocabulary, m.text).verdict == "supported":
            stating.add(s.source)
    return len(stating)


def _unmet(
    requirements: list[dict[str, object]],
) -> tuple[list[dict[str, object]], list[str], list[dict[str, object]]]:
    """The unmet requirements, their "Not answered" lines, and those skipped silently."""
    unmet = [r for r in requirements if r["met"] != "yes"]
    missing = [
        f"Not answered: {r['text']}"
        + (" (the answer says the evidence lacks it)" if r["admitted_missing"] else "")
        for r in unmet
    ]
    silent = [r for r in unmet if r["met"] == "no" and not r["admitted_missing"]]
    for r in requirements:
        del r["admitted_missing"]
    return unmet, missing, silent


def _task_failure(
    judged: list[Judged],
    gaps: list[str],
    absences: list[str],
    silent: list[dict[str, object]],
    requirements: list[dict[str, object]],
    material: Material,
) -> tuple[str, str] | None:
    """A task failure needs no citation: verified claims about another subject, or a
    part of a two-part request skipped without a word. Never for a short answer."""
    if not judged or gaps:
        return None
    if not absences and _off_subject(judged, material.request, material):
        return (
            "goal_missed",
            "The answer's claims appear in the evidence, but in sources about another "
            "subject: none of them addresses the request.",
        )
    if silent and len(silent) < len(requirements):
        return "incomplete", "The answer leaves part of the request unanswered."
    return None


def _gaps(judged: list[Judged]) -> list[str]:
    gaps = []
    for j in judged:
        if not j.supported:
            # The wording is matched across V11 parts; the reason is in the claim's note.
            gaps.append(f'Not supported by the evidence: "{j.claim.text}"')
        elif j.finding.conflict is not None and j.support is not None:
            gaps.append(
                f'The evidence disagrees: [{_ref(j.support)}] says "{j.support.text}" but '
                f'[{_ref(j.finding.conflict)}] says "{j.finding.conflict.text}".'
            )
    return gaps


def _rejected_contradiction(
    contradicted: list[Judged],
    judged: list[Judged],
    score: float,
    entries: list[dict[str, object]],
    requirements: list[dict[str, object]],
) -> dict[str, object]:
    for r in requirements:
        r.pop("admitted_missing", None)
    issues = [
        f'The answer says "{j.claim.text}" but [{_ref(j.finding.contradiction)}] says '
        f'"{j.finding.contradiction.text}".'
        for j in contradicted
        if j.finding.contradiction is not None
    ]
    return _verdict(
        "rejected",
        score,
        issues=issues,
        failure_category="unsupported_claim",
        recommended_revision_prompt=(
            "Correct the figures or names that contradict the evidence and quote the source "
            "that states them: " + " ".join(issues)
        ),
        reasoning=f"{len(contradicted)} of {len(judged)} claim(s) contradict the evidence.",
        claims=entries,
        requirements=requirements,
    )


def _rejected_task(
    category: str,
    reason: str,
    score: float,
    missing: list[str],
    unmet: list[dict[str, object]],
    entries: list[dict[str, object]],
    requirements: list[dict[str, object]],
) -> dict[str, object]:
    return _verdict(
        "rejected",
        score,
        issues=[reason, *missing],
        missing_requirements=missing,
        failure_category=category,
        recommended_revision_prompt=(
            "Answer what the request asks: "
            + "; ".join(str(r["text"]) for r in unmet)
            + ". If the knowledge base does not state it, say so plainly instead of "
            "quoting unrelated passages."
        ),
        reasoning=reason,
        claims=entries,
        requirements=requirements,
    )


def _insufficient(
    judged: list[Judged],
    supported: list[Judged],
    score: float,
    gaps: list[str],
    missing: list[str],
    entries: list[dict[str, object]],
    requirements: list[dict[str, object]],
) -> dict[str, object]:
    conflicts = sum(1 for j in judged if j.finding.conflict is not None)
    return _verdict(
        "insufficient_evidence",
        score,
        evidence_gaps=gaps,
        missing_requirements=missing,
        issues=[*missing, *gaps],
        failure_category=_insufficient_category(judged, missing=bool(missing), gaps=bool(gaps)),
        reasoning=(
            f"{len(supported)} of {len(judged)} claim(s) stated in the evidence"
            + (f"; {conflicts} disputed by other figures in the evidence" if conflicts else "")
            + ("; " + " ".join(missing) if missing else "")
            + ". offline:judge accepts only what the evidence states word for word; "
            "a person should check the rest."
        ),
        claims=entries,
        requirements=requirements,
    )


def _insufficient_category(judged: list[Judged], *, missing: bool, gaps: bool) -> str | None:
    """The category of a verdict a person must check, where one fits: a part of the
    request left out, or a claim the evidence does not state. Sources that disagree
    about a supported claim have none (the claim is disputed, not unsupported)."""
    if missing and not gaps:
        return "incomplete"
    if any(j.finding.verdict == "unsupported" for j in judged):
        return "unsupported_claim"
    return None


def _verdict(
    status: str,
    score: float,
    *,
    issues: list[str] | None = None,
    missing_requirements: list[str] | None = None,
    evidence_gaps: list[str] | None = None,
    recommended_revision_prompt: str = "",
    failure_category: str | None = None,
    reasoning: str = "",
    claims: list[dict[str, object]] | None = None,
    requirements: list[dict[str, object]] | None = None,
) -> dict[str, object]:
    return {
        "claims": claims or [],
        "requirements": requirements or [],
        "status": status,
        "score": score,
        "issues": issues or [],
        "missing_requirements": missing_requirements or [],
        "evidence_gaps": evidence_gaps or [],
        "recommended_revision_prompt": recommended_revision_prompt,
        "failure_category": failure_category,
        "reasoning": reasoning,
    }


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
        stated_by.setdefault(normalised(sentence.text), set()).add(_ref(sentence))
    verdict = corroborate(judge(prompt), stated_by)
    return ModelResponse(parts=[TextPart(json.dumps(verdict, ensure_ascii=False))])


def corroborating_judge_model() -> Model:
    """``offline:judge-corroborating``: the offline judge asking two sources per claim; a
    deterministic second judge that disagrees with ``offline:judge`` on single-source
    answers (the demo's second judge)."""
    return FunctionModel(respond_corroborating, model_name=CORROBORATING_MODEL_NAME)
