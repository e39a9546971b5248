"""The verdicts ``offline:judge`` writes from its judged claims and requirements:
rejected (a contradiction, another subject, a part skipped), insufficient evidence (a
person checks) or accepted, as the validator JSON object."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict, Unpack

from evidence_app.offline_judge import grounding
from evidence_app.offline_judge.answer_text import (
    GENERIC,
    AnswerClaim,
    content_tokens,
    content_words,
    pairs,
    requirements_of,
    subject_words,
)
from evidence_app.offline_judge.confidence import ClaimSignal, answer_confidence
from evidence_app.offline_judge.grounding import Finding, Sentence

# A claim sharing this share of a part's subject words is about that part (it is then
# never "about another subject"); answering it needs all of them (``_covers``).
REQUIREMENT_COVER = 0.5
# A source is about the request's subject when it holds this share of its subject words.
SOURCE_ABOUT = 0.5


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


def ref(sentence: Sentence | None) -> str:
    return sentence.source.split(" ", 1)[0] if sentence else "?"


def overlap(wanted: set[str], words: set[str]) -> float:
    return len(wanted & words) / len(wanted) if wanted else 1.0


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
        if any(overlap(subject, content_words(j.claim.text)) >= REQUIREMENT_COVER for j in judged):
            return False
        phrase = pairs([w for w in content_tokens(part) if w not in GENERIC])
        for src in sources:
            if not _lacks_subject(subject, m.source_words.get(src, set())):
                return False
            if phrase & m.source_pairs.get(src, set()):
                return False
    return True


def _lacks_subject(subject: set[str], words: set[str]) -> bool:
    """The source lacks more than half of the subject words, or two of three or more."""
    share = overlap(subject, words)
    return share < SOURCE_ABOUT or (len(subject - words) >= 2 and len(subject) >= 3)


def decide(
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
    refs = sorted({ref(s) for j in supported for s in j.finding.support})
    return verdict(
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
    """The verdict's graded score (``evidence_app.offline_judge.confidence``)."""
    everything: frozenset[str] = frozenset().union(*(s.norms for s in m.evidence))
    signals = [_signal(j, m, everything) for j in judged]
    return answer_confidence(signals, [str(r["met"]) for r in requirements])


def _signal(judged: Judged, m: Material, everything: frozenset[str]) -> ClaimSignal:
    words = content_words(judged.claim.text)
    finding, support = judged.finding, judged.support
    if not judged.supported or support is None:
        coverage = len(words & everything) / len(words) if words else 0.0
        return ClaimSignal(
            finding.verdict,
            coverage=coverage,
            short=judged.short,
            entailment=finding.entailment,
            contradiction=finding.contradiction_p,
        )
    stated = content_words(support.text)
    return ClaimSignal(
        "supported",
        coverage=1.0,
        tightness=len(words & stated) / len(stated) if stated else 0.0,
        sources=_sources(judged, m, words),
        disputed=finding.conflict is not None,
        short=judged.short,
        entailment=finding.entailment,
        contradiction=finding.contradiction_p,
        entailed=finding.entailed,
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
                f'The evidence disagrees: [{ref(j.support)}] says "{j.support.text}" but '
                f'[{ref(j.finding.conflict)}] says "{j.finding.conflict.text}".'
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
        f'The answer says "{j.claim.text}" but [{ref(j.finding.contradiction)}] says '
        f'"{j.finding.contradiction.text}".'
        for j in contradicted
        if j.finding.contradiction is not None
    ]
    return verdict(
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
    return verdict(
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
    return verdict(
        "insufficient_evidence",
        score,
        evidence_gaps=gaps,
        missing_requirements=missing,
        issues=[*missing, *gaps],
        failure_category=_insufficient_category(judged, missing=bool(missing), gaps=bool(gaps)),
        reasoning=(
            f"{len(supported)} of {len(judged)} claim(s) stated in the evidence"
            + (f"; {conflicts} disputed by other statements in the evidence" if conflicts else "")
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


class VerdictFields(TypedDict, total=False):
    """A verdict's fields besides its status and score; absent, each is empty."""

    issues: list[str]
    missing_requirements: list[str]
    evidence_gaps: list[str]
    recommended_revision_prompt: str
    failure_category: str | None
    reasoning: str
    claims: list[dict[str, object]]
    requirements: list[dict[str, object]]


def verdict(status: str, score: float, **fields: Unpack[VerdictFields]) -> dict[str, object]:
    """The verdict as the offline judge answers it (the validator's JSON)."""
    return {
        "claims": fields.get("claims") or [],
        "requirements": fields.get("requirements") or [],
        "status": status,
        "score": score,
        "issues": fields.get("issues") or [],
        "missing_requirements": fields.get("missing_requirements") or [],
        "evidence_gaps": fields.get("evidence_gaps") or [],
        "recommended_revision_prompt": fields.get("recommended_revision_prompt", ""),
        "failure_category": fields.get("failure_category"),
        "reasoning": fields.get("reasoning", ""),
    }
