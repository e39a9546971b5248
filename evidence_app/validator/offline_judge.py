"""``offline:judge``: a deterministic, network-free grounding judge (SPEC X7).

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
from tasks_app.agents.messages import first_user_prompt

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
    r"specify)|do not (state|say|mention|specify)|not (stated|mentioned|specified|found))\b",
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


def numbers(text: str) -> set[str]:
    """Numbers and codes (tokens with a digit), normalised: "1,750" == "1750"."""
    found = set()
    for token in _NUMBER_RE.findall(text):
        norm = token.lower().replace(",", "").rstrip(".:/-")
        if any(ch.isdigit() for ch in norm):
            found.add(norm)
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

    if support is None:
        contradiction = next(
            (
                e
                for e in ranked
                if (claim_numbers and disputes(e)) or (unknown_names and renames(e))
            ),
            None,
        )
        return ClaimCheck(claim=claim, supported=False, contradiction=contradiction)
    conflict = None
    if claim_numbers:
        conflict = next((e for e in ranked if e.source != support.source and disputes(e)), None)
    return ClaimCheck(claim=claim, supported=True, support=support, conflict=conflict)


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
    all_claims = claims_of(answer)
    claims = [c for c in all_claims if not _ABSENCE_RE.search(c)]
    says_absent = len(claims) < len(all_claims)
    vocabulary = {w.lower() for e in evidence for w in _LETTERS_RE.findall(e.text)}
    checks = [check_claim(claim, evidence, vocabulary) for claim in claims]
    supported = [c for c in checks if c.supported]
    contradicted = [c for c in checks if c.contradiction is not None]
    conflicts = [c for c in checks if c.conflict is not None]
    score = round(len(supported) / len(checks), 2) if checks else 0.0

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
        )

    gaps = [f'Not supported by the evidence: "{c.claim}"' for c in checks if not c.supported]
    gaps += [
        f'The evidence disagrees: [{_ref(c.support)}] says "{c.support.text}" but '
        f'[{_ref(c.conflict)}] says "{c.conflict.text}".'
        for c in conflicts
        if c.support is not None and c.conflict is not None
    ]
    missing: list[str] = []
    if not checks:
        missing.append(
            "The answer says the evidence does not hold the answer."
            if says_absent
            else "The answer makes no checkable statement that answers the request."
        )
    elif _FIGURE_QUESTION_RE.search(request) and not any(
        numbers(c.claim)
        and _overlap(subject_words(request), content_words(c.claim)) >= FIGURE_RELEVANCE
        for c in supported
    ):
        missing.append("The request asks for a figure or date; the answer gives none.")
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
        )
    return _verdict(
        "accepted",
        1.0,
        reasoning=(
            f"All {len(checks)} claim(s) appear in the evidence"
            f" ({', '.join(sorted({_ref(c.support) for c in supported if c.support}))})."
        ),
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
) -> dict[str, object]:
    return {
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
