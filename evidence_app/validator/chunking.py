"""Judging evidence in ordered chunks when it exceeds the model's budget.

Nothing is truncated silently. When system prompt + user message exceed the validator
model's context budget (``VALIDATOR_CONTEXT_CHARS[model]``, else
``VALIDATOR_DEFAULT_CONTEXT_CHARS``, in characters), the evidence is split in order
into parts that fit beside the fixed sections (request, rules, history, earlier
feedback, answer). A part never cuts a wrapped block open: a block split across parts
is closed at the end of one part and reopened, labelled "(continued)", in the next.

Each part is judged on its own ("is the answer supported by *this* part?"), every
part's verdict is kept, and the verdicts are combined:

1. a part that produced no valid verdict → ``validator_error`` (the task goes to a person);
2. any part ``rejected`` (a clear contradiction) → ``rejected``;
3. any part ``accepted`` (that part alone supports every claim) → ``accepted``;
4. otherwise each part lists the claims it could not support. A claim quoted from the
   answer is a gap only if *every* part lists it (another part may support it); any
   other gap (e.g. sources disagreeing) is kept from every part. Gaps or a requirement
   every part reports missing → ``insufficient_evidence``; none → ``accepted``.

If even the fixed sections leave no room for evidence, the status is
``validator_error`` with that reason.

Claims are combined per claim, after each part's citations are verified:
a claim is ``contradicted`` if any part contradicts it with a verified citation,
else ``supported`` if any part supports it with a verified citation, else it keeps
the strongest unverified verdict a part gave (so its unverified citations stay
visible). A requirement counts as met as well as the best part met it. When every
combined claim has verified support and every requirement is met, the combined
verdict is ``accepted`` even if no single part saw everything. The same
reconciliation as for a single request then applies.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from django.conf import settings

from evidence_app.validator.citations import normalised
from evidence_app.validator.schema import Claim, Requirement, ValidationResult
from project.untrusted import TAG, WARNING

# Room kept per part for the part note and a closing/reopening wrapper.
PART_OVERHEAD_CHARS = 600
MIN_EVIDENCE_CHARS = 2_000

CHUNK_ADDENDUM = """

The evidence is too long for one request, so you see it in parts; this request holds
ONE part (the part number is given in the evidence section). Judge the answer against
THIS part only:
- "accepted": every claim of the answer is supported by this part;
- "rejected": only if this part clearly contradicts the answer;
- otherwise "insufficient_evidence", listing in "evidence_gaps" each claim of the answer
  this part does not support, as: Not supported by the evidence: "<the claim, quoted
  exactly from the answer>". Other parts may support it; do not call it fabricated."""

_OPEN_RE = re.compile(rf'^<{TAG} label="(?P<label>[^"]*)">$')
_CLOSE = f"</{TAG}>"
_QUOTED_RE = re.compile(r'"(.+)"')


def context_budget(model_name: str) -> int:
    return int(
        settings.VALIDATOR_CONTEXT_CHARS.get(model_name, settings.VALIDATOR_DEFAULT_CONTEXT_CHARS)
    )


@dataclass(frozen=True)
class EvidencePart:
    index: int  # 1-based
    count: int
    text: str
    start: int  # offsets in the unsplit evidence
    end: int

    @property
    def note(self) -> str:
        """What the validator is told of the part it reads."""
        return (
            f"(Evidence part {self.index} of {self.count}: characters {self.start}–{self.end} "
            "of the rendered evidence. Judge the answer against this part only.)"
        )


def split_evidence(evidence: str, capacity: int) -> list[EvidencePart]:
    """Cut ``evidence`` into ordered parts of at most ``capacity`` characters (plus a
    closing/reopening wrapper line) without leaving a wrapped block open."""
    if capacity < 1:
        raise ValueError("capacity must be positive")
    pieces: list[tuple[str, int, int]] = []
    lines = evidence.split("\n")
    current: list[str] = []
    size = 0
    start = 0
    offset = 0
    open_label: str | None = None
    reopen = ""

    def flush(end: int) -> None:
        nonlocal current, size, start, reopen
        carried: list[str] = []
        if open_label is not None and len(current) > 1 and _OPEN_RE.match(current[-1]):
            # A block opened on the last line: move its opening to the next part
            # instead of leaving an empty block here.
            carried = [current.pop()]
            end -= len(carried[0]) + 1
        text = reopen + "\n".join(current)
        if carried:
            reopen = ""
        elif open_label is not None:
            text += f"\n{_CLOSE}\n{WARNING}"
            reopen = f'<{TAG} label="{open_label} (continued)">\n'
        else:
            reopen = ""
        pieces.append((text, start, end))
        current, size, start = carried, sum(len(c) + 1 for c in carried), end

    for line in lines:
        # Lines longer than a part are cut (inside a block, so re-wrapped like any part).
        segments = [line[i : i + capacity] for i in range(0, len(line), capacity)] or [""]
        for segment in segments:
            only_an_opening = len(current) == 1 and _OPEN_RE.match(current[0]) is not None
            # Never start a part with a block's closing line (an empty "continued" block).
            closing = segment == _CLOSE
            if current and size + len(segment) + 1 > capacity and not (only_an_opening or closing):
                flush(offset)
            current.append(segment)
            size += len(segment) + 1
            offset += len(segment)
        offset += 1  # the newline
        if (m := _OPEN_RE.match(line)) is not None:
            open_label = m.group("label")
        elif line == _CLOSE:
            open_label = None
    if current:
        open_label = None  # the evidence itself closes every block it opens
        flush(len(evidence))
    count = len(pieces)
    return [
        EvidencePart(index=i, count=count, text=text, start=s, end=e)
        for i, (text, s, e) in enumerate(pieces, start=1)
    ]


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _claim_quote(gap: str, answer: str) -> str | None:
    """The answer text a gap quotes, if it quotes the answer."""
    match = _QUOTED_RE.search(gap)
    if match and _norm(match.group(1)) in _norm(answer):
        return _norm(match.group(1))
    return None


def _combined_rejection(rejected: list[ValidationResult], parts: int) -> ValidationResult:
    """The rejecting parts' verdicts merged into one rejection (of ``parts`` parts)."""
    first = rejected[0]
    scores = [v.score for v in rejected if v.score is not None]
    return ValidationResult(
        status="rejected",
        score=min(scores) if scores else None,
        issues=_unique(i for v in rejected for i in v.issues),
        missing_requirements=_unique(m for v in rejected for m in v.missing_requirements),
        evidence_gaps=_unique(g for v in rejected for g in v.evidence_gaps),
        recommended_revision_prompt=" ".join(
            _unique(v.recommended_revision_prompt for v in rejected)
        ).strip(),
        failure_category=first.failure_category or "unsupported_claim",
        reasoning=f"Rejected in {len(rejected)} of {parts} evidence part(s). "
        + " ".join(_unique(v.reasoning for v in rejected)),
    )


def _remaining_gaps(verdicts: list[ValidationResult], answer: str) -> list[str]:
    """The gaps left when every part is insufficient: a gap quoting a claim of the answer
    only if every part lists that claim, any other gap from every part."""
    per_part_claims = []
    other_gaps: list[str] = []
    first_text: dict[str, str] = {}
    for verdict in verdicts:
        claims = set()
        for gap in verdict.evidence_gaps:
            quote = _claim_quote(gap, answer)
            if quote is None:
                other_gaps.append(gap)
            else:
                claims.add(quote)
                first_text.setdefault(quote, gap)
        per_part_claims.append(claims)
    unsupported = set.intersection(*per_part_claims) if per_part_claims else set()
    return _unique([first_text[q] for q in sorted(unsupported)] + other_gaps)


def _missing_everywhere(verdicts: list[ValidationResult]) -> list[str]:
    """The missing requirements every part reports (as each part words them)."""
    missing_sets = [{_norm(m) for m in v.missing_requirements} for v in verdicts]
    missing_everywhere = set.intersection(*missing_sets) if missing_sets else set()
    return _unique(
        m for v in verdicts for m in v.missing_requirements if _norm(m) in missing_everywhere
    )


def _combined_insufficient(verdicts: list[ValidationResult], answer: str) -> ValidationResult:
    """The verdict when every part is insufficient: ``insufficient_evidence`` with the
    gaps and missing requirements no part makes up for, else ``accepted``."""
    gaps = _remaining_gaps(verdicts, answer)
    missing = _missing_everywhere(verdicts)
    scores = [v.score for v in verdicts if v.score is not None]
    if not gaps and not missing:
        return ValidationResult(
            status="accepted",
            score=max(scores) if scores else None,
            reasoning=f"Every claim is supported by one of the {len(verdicts)} evidence parts.",
        )
    return ValidationResult(
        status="insufficient_evidence",
        score=min(scores) if scores else None,
        issues=_unique([*missing, *gaps]),
        missing_requirements=missing,
        evidence_gaps=gaps,
        failure_category=None,
        reasoning=f"Judged in {len(verdicts)} evidence parts; {len(gaps)} gap(s) remain after "
        "combining them.",
    )


def combine(verdicts: list[ValidationResult], *, answer: str) -> ValidationResult:
    """One verdict from the verdicts of every part (rules in the module docstring)."""
    if not verdicts:
        return ValidationResult.validator_error("No evidence part was judged.")
    errors = [v for v in verdicts if v.status == "validator_error"]
    if errors:
        return ValidationResult.validator_error(
            "Part verdicts incomplete: " + "; ".join(i for v in errors for i in v.issues)
        )
    rejected = [v for v in verdicts if v.status == "rejected"]
    if rejected:
        return _combined_rejection(rejected, len(verdicts))
    accepted = [v for v in verdicts if v.status == "accepted"]
    if accepted:
        return accepted[0].model_copy(
            update={
                "reasoning": f"Accepted on evidence part(s) alone ({len(accepted)} of "
                f"{len(verdicts)}). " + accepted[0].reasoning
            }
        )
    # Every part is insufficient: a claim gap survives only if no part supports it.
    return _combined_insufficient(verdicts, answer)


_MET_RANK = {"no": 0, "partly": 1, "yes": 2}


def _claims_by_text(
    verdicts: list[ValidationResult],
) -> tuple[dict[str, list[Claim]], list[dict[str, str]]]:
    """Every part's claims grouped by normalised text (first seen first), and per part
    its claim ids mapped to that text."""
    by_key: dict[str, list[Claim]] = {}
    part_ids: list[dict[str, str]] = []  # per part: claim id -> key
    for verdict in verdicts:
        ids: dict[str, str] = {}
        for claim in verdict.claims:
            key = normalised(claim.text)
            by_key.setdefault(key, []).append(claim)
            ids[claim.id] = key
        part_ids.append(ids)
    return by_key, part_ids


def _strongest(seen: list[Claim]) -> tuple[str, list[Claim]]:
    """The verdict the parts' versions of one claim combine to, and the versions that
    gave it: verified contradiction, verified support, then unverified ones."""
    for name, verified_only in (
        ("contradicted", True),
        ("supported", True),
        ("contradicted", False),
        ("supported", False),
    ):
        chosen = [
            c for c in seen if c.verdict == name and (c.verified_citations or not verified_only)
        ]
        if chosen:
            return name, chosen
    return "unsupported", []


def _combined_claim(claim_id: str, seen: list[Claim]) -> Claim:
    """One claim from the parts' versions of it, with the chosen versions' citations
    (their verified ones when they have any) and notes."""
    verdict_name, chosen = _strongest(seen)
    source = chosen or seen
    citations = [
        cit
        for c in source
        for cit in (c.verified_citations if chosen and c.verified_citations else c.citations)
    ]
    return Claim(
        id=claim_id,
        text=seen[0].text,
        verdict=verdict_name,  # type: ignore[arg-type]
        citations=citations,
        note=" ".join(_unique(c.note for c in source)),
    )


def _combined_requirements(
    verdicts: list[ValidationResult], part_ids: list[dict[str, str]], new_id: dict[str, str]
) -> list[Requirement]:
    """Each requirement (by normalised text) as well met as the best part met it, with the
    combined ids of the claims of every part that met it that well."""
    requirements: dict[str, Requirement] = {}
    for verdict, ids in zip(verdicts, part_ids, strict=True):
        for requirement in verdict.requirements:
            key = normalised(requirement.text)
            mapped = [new_id[ids[i]] for i in requirement.claim_ids if i in ids]
            current = requirements.get(key)
            if current is None or _MET_RANK[requirement.met] > _MET_RANK[current.met]:
                requirements[key] = requirement.model_copy(update={"claim_ids": mapped})
            elif _MET_RANK[requirement.met] == _MET_RANK[current.met]:
                current.claim_ids = _unique([*current.claim_ids, *mapped])
    return list(requirements.values())


def combine_claims(
    verdicts: list[ValidationResult],
) -> tuple[list[Claim], list[Requirement]]:
    """Per-claim and per-requirement combination of verified part verdicts."""
    by_key, part_ids = _claims_by_text(verdicts)
    new_id = {key: str(i) for i, key in enumerate(by_key, start=1)}
    claims = [_combined_claim(new_id[key], seen) for key, seen in by_key.items()]
    return claims, _combined_requirements(verdicts, part_ids, new_id)


def combine_verified(verdicts: list[ValidationResult], *, answer: str) -> ValidationResult:
    """``combine`` plus per-claim combination of the parts' verified claims."""
    combined = combine(verdicts, answer=answer)
    if combined.status == "validator_error" or not any(v.claims for v in verdicts):
        return combined
    claims, requirements = combine_claims(verdicts)
    update: dict[str, object] = {"claims": claims, "requirements": requirements}
    everything_holds = (
        claims
        and requirements
        and all(c.verdict == "supported" and c.verified_citations for c in claims)
        and all(r.met == "yes" for r in requirements)
    )
    if combined.status == "insufficient_evidence" and everything_holds:
        update.update(
            status="accepted",
            failure_category=None,
            issues=[],
            evidence_gaps=[],
            missing_requirements=[],
            reasoning=f"Every claim has verified support in one of the {len(verdicts)} "
            "evidence parts and every requirement is met.",
        )
    return combined.model_copy(update=update)


def _unique(items: Iterable[str | None]) -> list[str]:
    seen: list[str] = []
    for item in items:
        if item and item not in seen:
            seen.append(item)
    return seen
