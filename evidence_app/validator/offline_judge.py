"""``offline:judge``: a deterministic, network-free grounding judge (X7).

It is not an LLM. It reads the validator prompt it is sent (the user message built by
``evidence_app.validator.prompt``), takes the tool results as evidence and the answer
under review (the last section), and really checks the answer against the evidence:

- the answer is split into claims (sentences; an extractive quote ``- "…" (source: …)``
  is one claim; headers like "Sources: …" are skipped);
- a claim is *supported* when one evidence sentence shares at least
  ``SUPPORT_OVERLAP`` of the claim's content words and every number or code of the
  claim appears in that sentence or its neighbours;
- names (capitalised words inside a sentence) are checked like figures: a claim naming
  someone or something the evidence never mentions is not supported;
- a claim is *contradicted* when it is not supported and an evidence sentence about
  the same thing (``CONFLICT_OVERLAP`` of shared content words) states different numbers,
  or another name where the claim has one the evidence lacks;
- a supported claim whose figure is disputed by another source (same words, different
  numbers, in another tool result) is an *evidence conflict*: a person must decide;
- a question asking for a figure (how many / how much / how long / what percentage /
  when) needs a figure in the answer.

Verdict: any contradiction → ``rejected`` (``unsupported_claim``); otherwise any
unsupported claim, evidence conflict or missing figure → ``insufficient_evidence``
with the claims listed in ``evidence_gaps``; otherwise ``accepted``. It returns the
validator JSON as text, like a real model would.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models import Model
from pydantic_ai.models.function import AgentInfo, FunctionModel

from evidence_app.validator.prompt import ANSWER_LABEL, REQUEST_LABEL
from project.llm.messages import first_user_prompt

MODEL_NAME = "offline:judge"
SUPPORT_OVERLAP = 0.6
CONFLICT_OVERLAP = 0.6
MIN_CONFLICT_SHARED = 3
# A figure answers a "how many/how long/when" request only in a claim about the request's
# subject: one sharing this share of the request's content words.
FIGURE_RELEVANCE = 0.4
_QUESTION_WORDS = frozenset({"many", "much", "long", "often", "old", "far", "percentage", "date"})

_BLOCK_RE = re.compile(
    r'<EXTERNAL-CONTENT label="(?P<label>[^"]*)">\n(?:(?P<body>.*?)\n)?</EXTERNAL-CONTENT>',
    re.DOTALL,
)
_TOOL_RESULT_LABEL_RE = re.compile(r"^R\d+ \S+ result( \(continued\))?$")
_SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(*])")
_QUOTE_RE = re.compile(r'^"(?P<sentence>.+)"\s*(\((source|sources):[^)]*\))?\.?$')
_WORD_RE = re.compile(r"[A-Za-z][A-Za-z'-]*")
_NUMBER_RE = re.compile(r"[A-Za-z]*[-]?\d[\d,.:/-]*[A-Za-z0-9]*|\d")
_FIGURE_QUESTION_RE = re.compile(
    r"\b(how (many|much|long|often|old|far)|what percentage|which percentage|when|what date|"
    r"how many days)\b",
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
    how i if in into is it its may might must no not of on or our per shall should so such
    than that the their them then there these they this those to under up was we were what
    when where which while who whom why will with within would you your all any each every
    also only other some more most very about after before over between during above below
    out off again further once here both few own same too just now yes""".split()
)


def offline_judge_model() -> Model:
    return FunctionModel(respond, model_name=MODEL_NAME)


def _stem(word: str) -> str:
    word = word.lower().strip("'-")
    for suffix in ("ations", "ation", "ings", "ing", "ies", "ied", "es", "ed", "ly", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def content_words(text: str) -> set[str]:
    return {_stem(w) for w in _WORD_RE.findall(text) if len(w) >= 3 and w.lower() not in STOPWORDS}


# "one" is left out: "one of", "no one" are rarely figures.
_NUMBER_WORDS = {
    word: str(value)
    for value, word in enumerate(
        "two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen twenty".split(),
        start=2,
    )
}
_NUMBER_WORD_RE = re.compile(r"\b(" + "|".join(_NUMBER_WORDS) + r")\b", re.IGNORECASE)


def numbers(text: str) -> set[str]:
    """Numbers and codes (tokens with a digit), normalised: "1,750" == "1750"; number
    words count as their figure ("four years" == "4 years")."""
    found = set()
    for token in _NUMBER_RE.findall(text):
        norm = token.lower().replace(",", "").rstrip(".:/-")
        if any(ch.isdigit() for ch in norm):
            found.add(norm)
    for word in _NUMBER_WORD_RE.findall(text):
        found.add(_NUMBER_WORDS[word.lower()])
    return found


_NAME_RE = re.compile(r"(?<!^)(?<![A-Za-z])([A-Z][a-zA-Z]{2,})(?![A-Za-z])")
_LETTERS_RE = re.compile(r"[A-Za-z]+")


def names(text: str) -> set[str]:
    """Capitalised words that are not the first of a sentence (names, places, brands),
    lowercased; checked like figures, since a wrong name is as wrong as a wrong number."""
    found = set()
    for sentence in _SENTENCE_SPLIT_RE.split(text.strip()):
        for match in _NAME_RE.finditer(sentence.strip()):
            word = match.group(1).lower()
            if word not in STOPWORDS:
                found.add(word)
    return found


def subject_words(request: str) -> set[str]:
    """The request's content words without the question's own words ("how long")."""
    return {w for w in content_words(request) if w not in _QUESTION_WORDS}


@dataclass
class EvidenceSentence:
    text: str
    source: str  # the tool result label, e.g. "R3 read_document result"
    words: set[str]
    window_numbers: set[str]  # this sentence's and its neighbours' numbers
    own_numbers: set[str]
    own_names: set[str]


@dataclass
class ClaimCheck:
    claim: str
    supported: bool
    support: EvidenceSentence | None = None
    contradiction: EvidenceSentence | None = None
    conflict: EvidenceSentence | None = None


def _split_sentences(text: str) -> list[str]:
    sentences: list[str] = []
    for raw_line in text.splitlines():
        line = re.sub(r"^\s*(#+|>|[-*•]|\d+\.)\s*", "", raw_line).strip().strip("*").strip()
        if not line:
            continue
        sentences.extend(s.strip() for s in _SENTENCE_SPLIT_RE.split(line) if s.strip())
    return sentences


def evidence_sentences(prompt: str) -> list[EvidenceSentence]:
    """Sentences of every tool result block in the prompt, with neighbour windows."""
    out: list[EvidenceSentence] = []
    for match in _BLOCK_RE.finditer(prompt):
        label = match.group("label")
        if not _TOOL_RESULT_LABEL_RE.match(label):
            continue
        source = label.removesuffix(" (continued)")
        sentences = _split_sentences(match.group("body") or "")
        nums = [numbers(s) for s in sentences]
        for i, sentence in enumerate(sentences):
            window = set().union(*nums[max(0, i - 1) : i + 2])
            out.append(
                EvidenceSentence(
                    text=sentence,
                    source=source,
                    words=content_words(sentence),
                    window_numbers=window,
                    own_numbers=nums[i],
                    own_names=names(sentence),
                )
            )
    return out


def block(prompt: str, label: str) -> str | None:
    """The body of the last wrapped block with this label."""
    bodies = [
        m.group("body") or "" for m in _BLOCK_RE.finditer(prompt) if m.group("label") == label
    ]
    return bodies[-1] if bodies else None


def claims_of(answer: str) -> list[str]:
    claims = []
    for raw_line in answer.splitlines():
        line = re.sub(r"^\s*([-*•]|\d+\.)\s*", "", raw_line).strip()
        if not line or _SKIP_LINE_RE.match(line):
            continue
        quoted = _QUOTE_RE.match(line)
        if quoted:
            claims.append(quoted.group("sentence").strip())
            continue
        for sentence in _SENTENCE_SPLIT_RE.split(line):
            sentence = re.sub(r"\s*\((source|sources):[^)]*\)", "", sentence).strip()
            if len(content_words(sentence)) >= 2:
                claims.append(sentence)
    return claims


def _overlap(claim_words: set[str], sentence_words: set[str]) -> float:
    if not claim_words:
        return 0.0
    return len(claim_words & sentence_words) / len(claim_words)


def check_claim(
    claim: str, evidence: list[EvidenceSentence], vocabulary: set[str] | None = None
) -> ClaimCheck:
    """Support, contradiction or cross-source conflict of one claim. ``vocabulary`` is
    every word of the evidence (lowercased): a name in the claim must be in it."""
    words = content_words(claim)
    claim_numbers = numbers(claim)
    claim_names = names(claim)
    if vocabulary is None:
        vocabulary = {w.lower() for e in evidence for w in _LETTERS_RE.findall(e.text)}
    unknown_names = claim_names - vocabulary
    ranked = sorted(evidence, key=lambda e: _overlap(words, e.words), reverse=True)
    support = None
    if not unknown_names:
        support = next(
            (
                e
                for e in ranked
                if _overlap(words, e.words) >= SUPPORT_OVERLAP and claim_numbers <= e.window_numbers
            ),
            None,
        )

    def about_the_same(e: EvidenceSentence) -> bool:
        return (
            len(words & e.words) >= MIN_CONFLICT_SHARED
            and _overlap(words, e.words) >= CONFLICT_OVERLAP
        )

    def disputes(e: EvidenceSentence) -> bool:
        """Same statement, other figures."""
        return bool(e.own_numbers) and about_the_same(e) and not (claim_numbers & e.own_numbers)

    def renames(e: EvidenceSentence) -> bool:
        """Same statement, another name where the claim has one the evidence lacks."""
        return bool(e.own_names - claim_names) and about_the_same(e)

    def differs(e: EvidenceSentence) -> bool:
        """Same statement; each side has a figure the other lacks ("Kranhafen 19, 20457"
        against "Kranhafen 9, 20457")."""
        return (
            bool(claim_numbers - e.own_numbers)
            and bool(e.own_numbers - claim_numbers)
            and about_the_same(e)
        )

    if support is None:
        contradiction = next(
            (
                e
                for e in ranked
                if (claim_numbers and (disputes(e) or differs(e))) or (unknown_names and renames(e))
            ),
            None,
        )
        return ClaimCheck(claim=claim, supported=False, contradiction=contradiction)
    conflict = None
    if claim_numbers:
        conflict = next((e for e in ranked if e.source != support.source and disputes(e)), None)
    return ClaimCheck(claim=claim, supported=True, support=support, conflict=conflict)


@dataclass
class AnswerClaim:
    text: str  # as it stands in the answer
    source: str = ""  # the source the answer attributes it to ("Travel Policy", "R2")


_SOURCE_RE = re.compile(r"\s*\((?:source|sources):\s*(?P<source>[^)]*)\)")
_REF_MARK_RE = re.compile(r"\s*\[(?P<ref>R\d+)\]")


def answer_claims(answer: str) -> list[AnswerClaim]:
    """The claims of an answer with the source each names, if any."""
    claims: list[AnswerClaim] = []
    for raw_line in answer.splitlines():
        line = re.sub(r"^\s*([-*•]|\d+\.)\s*", "", raw_line).strip()
        if not line or _SKIP_LINE_RE.match(line):
            continue
        quoted = _QUOTE_RE.match(line)
        if quoted:
            source = _SOURCE_RE.search(line)
            claims.append(
                AnswerClaim(
                    quoted.group("sentence").strip(),
                    source.group("source").strip() if source else "",
                )
            )
            continue
        for sentence in _SENTENCE_SPLIT_RE.split(line):
            source = _SOURCE_RE.search(sentence) or _REF_MARK_RE.search(sentence)
            named = ""
            if source is not None:
                named = (source.groupdict().get("source") or source.group(0)).strip(" []")
            sentence = _REF_MARK_RE.sub("", _SOURCE_RE.sub("", sentence)).strip()
            if len(content_words(sentence)) >= 2:
                claims.append(AnswerClaim(sentence, named))
    return claims


# A request splits into the things it asks for at question marks, semicolons and "and"
# before a new question ("What is X and how long is Y?").
_PART_SPLIT_RE = re.compile(
    r"\?|;|\n|\b(?:and|also|plus)\s+(?=(?:what|how|when|which|who|where|whether|is|are|"
    r"does|do|can|must|should)\b)",
    re.IGNORECASE,
)
# A requirement is met by a supported claim sharing this share of its subject words.
REQUIREMENT_COVER = 0.5


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


def _named(source: str, sentence: EvidenceSentence, titles: dict[str, str]) -> bool:
    ref = _ref(sentence)
    wanted = source.strip().lower().rstrip(".")
    return wanted == ref.lower() or wanted == titles.get(ref, "").lower()


def _claim_entry(
    index: int, claim: AnswerClaim, check: ClaimCheck, note: str = ""
) -> dict[str, object]:
    if check.contradiction is not None:
        verdict, cited = "contradicted", [check.contradiction]
    elif check.supported and check.support is not None:
        verdict, cited = "supported", [check.support]
    else:
        verdict, cited = "unsupported", []
    if check.conflict is not None:
        cited = [*cited, check.conflict]
        note = (note + " Another source states other figures: a person must decide.").strip()
    return {
        "id": str(index),
        "text": claim.text,
        "verdict": verdict,
        "citations": [{"ref": _ref(e), "quote": e.text} for e in cited],
        "note": note,
    }


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
    evidence = evidence_sentences(prompt)
    titles = _titles(prompt)
    found = answer_claims(answer)
    claims = [c for c in found if not _ABSENCE_RE.search(c.text)]
    absences = [c.text for c in found if _ABSENCE_RE.search(c.text)]
    vocabulary = {w.lower() for e in evidence for w in _LETTERS_RE.findall(e.text)}
    checks: list[ClaimCheck] = []
    notes: list[str] = []
    for claim in claims:
        check = check_claim(claim.text, evidence, vocabulary)
        note = ""
        named_sources = [e for e in evidence if claim.source and _named(claim.source, e, titles)]
        if check.supported and named_sources and not _named(claim.source, check.support, titles):  # type: ignore[arg-type]
            # The answer attributes the claim to a source that does not state it.
            own = check_claim(claim.text, named_sources, vocabulary)
            if not own.supported:
                note = (
                    f"The answer attributes this to {claim.source}, which does not state it "
                    f"(it is in {_ref(check.support)})."
                )
                check = ClaimCheck(claim=claim.text, supported=False)
            else:
                check = own
        checks.append(check)
        notes.append(note)
    entries = [
        _claim_entry(i, claim, check, note)
        for i, (claim, check, note) in enumerate(zip(claims, checks, notes, strict=True), start=1)
    ]
    supported = [c for c in checks if c.supported]
    contradicted = [c for c in checks if c.contradiction is not None]
    conflicts = [c for c in checks if c.conflict is not None]
    score = round(len(supported) / len(checks), 2) if checks else 0.0

    # Goal achievement: each thing the request asks for needs a supported claim about it.
    requirements: list[dict[str, object]] = []
    for part in requirements_of(request):
        wanted = subject_words(part)
        covering = [
            str(i)
            for i, check in enumerate(checks, start=1)
            if check.supported and _overlap(wanted, content_words(check.claim)) >= REQUIREMENT_COVER
        ]
        met = "yes" if covering else "no"
        if covering and _FIGURE_QUESTION_RE.search(part):
            if not any(numbers(checks[int(i) - 1].claim) for i in covering):
                met = "partly"
        admitted = any(
            _overlap(wanted, content_words(text)) >= REQUIREMENT_COVER for text in absences
        )
        requirements.append(
            {"text": part, "met": met, "claim_ids": covering, "admitted_missing": admitted}
        )
    if absences and not any(r["admitted_missing"] for r in requirements):
        # A general "the documents do not state it" covers whatever is unanswered.
        for r in requirements:
            r["admitted_missing"] = True
    unmet = [r for r in requirements if r["met"] != "yes"]
    # Not addressed at all and not admitted: the answer skipped it. (An answer on the
    # subject that lacks the figure asked for is "partly": a person checks the gap.)
    silent_misses = [r for r in unmet if r["met"] == "no" and not r["admitted_missing"]]
    missing = [
        f"Not answered: {r['text']}"
        + (" (the answer says the evidence lacks it)" if r["admitted_missing"] else "")
        for r in unmet
    ]
    for r in requirements:
        del r["admitted_missing"]

    if contradicted:
        issues = [
            f'The answer says "{c.claim}" but [{_ref(c.contradiction)}] says '
            f'"{c.contradiction.text}".'
            for c in contradicted
            if c.contradiction is not None
        ]
        return _verdict(
            "rejected",
            score,
            issues=issues,
            failure_category="unsupported_claim",
            recommended_revision_prompt=(
                "Correct the figures that contradict the evidence and quote the source that "
                "states them: " + " ".join(issues)
            ),
            reasoning=f"{len(contradicted)} of {len(checks)} claim(s) contradict the evidence.",
            claims=entries,
            requirements=requirements,
        )

    gaps = [f'Not supported by the evidence: "{c.claim}"' for c in checks if not c.supported]
    gaps += [
        f'The evidence disagrees: [{_ref(c.support)}] says "{c.support.text}" but '
        f'[{_ref(c.conflict)}] says "{c.conflict.text}".'
        for c in conflicts
        if c.support is not None and c.conflict is not None
    ]
    if not checks:
        missing.insert(
            0,
            "The answer says the evidence does not hold the answer."
            if absences
            else "The answer makes no checkable statement that answers the request.",
        )
    if checks and not gaps and unmet and silent_misses:
        # Every claim holds, but the answer does not do what was asked: a task failure.
        nothing_met = all(r["met"] == "no" for r in requirements)
        category = "goal_missed" if nothing_met else "incomplete"
        reason = (
            "The answer's claims appear in the evidence but none of them addresses the request."
            if nothing_met
            else "The answer leaves part of the request unanswered."
        )
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
    if gaps or missing:
        return _verdict(
            "insufficient_evidence",
            score,
            evidence_gaps=gaps,
            missing_requirements=missing,
            issues=[*missing, *gaps],
            failure_category="incomplete" if missing and not gaps else None,
            reasoning=(
                f"{len(supported)} of {len(checks)} claim(s) found in the evidence"
                + (f"; {len(conflicts)} disputed by another source" if conflicts else "")
                + ("; " + " ".join(missing) if missing else "")
                + ". A person should check the gaps."
            ),
            claims=entries,
            requirements=requirements,
        )
    return _verdict(
        "accepted",
        1.0,
        reasoning=(
            f"All {len(checks)} claim(s) appear in the evidence"
            f" ({', '.join(sorted({_ref(c.support) for c in supported if c.support}))})"
            f" and the {len(requirements)} requirement(s) of the request are met."
        ),
        claims=entries,
        requirements=requirements,
    )


def _ref(sentence: EvidenceSentence | None) -> str:
    return sentence.source.split(" ", 1)[0] if sentence else "?"


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
