"""Build the validator's messages from an attempt's evidence packet.

Instructions (the template) go in the system message; all material goes in the user
message, in this order, so the request and the answer sit at the two ends and the long
evidence in the middle ("lost in the middle"):

1. the user's request, 2. the task's rules, 3. the evidence (``render_packet``: team
nodes in graph order, then the main/synthesis run, every tool result in full, the
trajectory), 4. the recent conversation history (last ``VALIDATOR_HISTORY_MESSAGES``)
and the validator's feedback on earlier attempts, 5. the answer under review, last.

Every piece of untrusted text is wrapped with ``wrap_external``. Nothing is truncated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings

from evidence_app.packets.packet_text import CitableResult, citable_results, render_packet
from evidence_app.packets.task_packet import TaskEvidencePacket
from evidence_app.validator.schema import SCHEMA_DESCRIPTION
from evidence_app.validator.templates import TemplateVersion
from project.untrusted import wrap_external

ANSWER_LABEL = "answer under review"
REQUEST_LABEL = "user request"
RULES_LABEL = "task rules"
HISTORY_LABEL = "conversation history"
FEEDBACK_LABEL = "previous validator feedback"

SECTION_REQUEST = "== USER REQUEST =="
SECTION_RULES = "== TASK RULES =="
SECTION_EVIDENCE = "== EVIDENCE =="
SECTION_HISTORY = "== RECENT CONVERSATION HISTORY =="
SECTION_FEEDBACK = "== PREVIOUS VALIDATOR FEEDBACK =="
SECTION_ANSWER = "== ANSWER UNDER REVIEW (judge this) =="

# render_packet ends with the final output; the answer is placed last by us instead, so
# the packet is rendered with an empty final output and this exact tail removed.
_EMPTY_FINAL_TAIL = "\n== FINAL OUTPUT ==\n(empty)"


@dataclass(frozen=True)
class HistoryMessage:
    at: datetime
    role: str
    text: str


@dataclass(frozen=True)
class ValidationPrompt:
    """The pieces of one validation prompt; ``user`` joins them in V4 order."""

    system: str
    head: str  # request and rules
    evidence: str
    tail: str  # history, earlier feedback and the answer (last)
    answer: str = ""
    # The tool results the validator may cite, by R<n> label.
    citable: dict[str, CitableResult] = field(default_factory=dict)

    @property
    def user(self) -> str:
        return self.user_with(self.evidence)

    def user_with(self, evidence: str, *, evidence_note: str = "") -> str:
        note = f"{evidence_note}\n" if evidence_note else ""
        return f"{self.head}\n\n{SECTION_EVIDENCE}\n{note}{evidence}\n\n{self.tail}"

    @property
    def total_chars(self) -> int:
        return len(self.system) + len(self.user)


def render_evidence(packet: TaskEvidencePacket, *, answer: str = "") -> str:
    """The rendered packet without its final-output section (the answer comes last);
    a run output or message that is ``answer`` points to that last section instead."""
    rendered = render_packet(packet.model_copy(update={"final_output": ""}), answer=answer)
    if rendered.endswith(_EMPTY_FINAL_TAIL):
        rendered = rendered[: -len(_EMPTY_FINAL_TAIL)]
    return rendered


def system_prompt(template: TemplateVersion) -> str:
    return template.text.replace("{schema}", SCHEMA_DESCRIPTION)


def _history_block(history: list[HistoryMessage]) -> str:
    limit = settings.VALIDATOR_HISTORY_MESSAGES
    recent = history[-limit:] if limit else []
    if not recent:
        return f"{SECTION_HISTORY}\n(none)"
    lines = [f"[{m.at:%Y-%m-%d %H:%M}] {m.role}: {m.text}" for m in recent]
    return f"{SECTION_HISTORY} (last {len(recent)} of {len(history)} messages)\n" + wrap_external(
        "\n".join(lines), label=HISTORY_LABEL
    )


def _feedback_block(previous_feedback: list[str]) -> str:
    if not previous_feedback:
        return f"{SECTION_FEEDBACK}\n(none: first validation of this task)"
    # The validator's feedback quotes tool output, so it is wrapped like it.
    return f"{SECTION_FEEDBACK}\n" + wrap_external(
        "\n\n".join(previous_feedback), label=FEEDBACK_LABEL
    )


def build_prompt(
    packet: TaskEvidencePacket,
    *,
    template: TemplateVersion,
    answer: str,
    history: list[HistoryMessage] | None = None,
    previous_feedback: list[str] | None = None,
) -> ValidationPrompt:
    """Assemble the prompt for ``packet``; the answer under review is the last section."""
    head = f"{SECTION_REQUEST}\n" + wrap_external(packet.request, label=REQUEST_LABEL)
    rules = packet.rules.strip()
    head += f"\n\n{SECTION_RULES}\n" + (
        wrap_external(rules, label=RULES_LABEL) if rules else "(no task-specific rules)"
    )
    tail = "\n\n".join(
        [
            _history_block(history or []),
            _feedback_block(previous_feedback or []),
            f"{SECTION_ANSWER}\n" + wrap_external(answer, label=ANSWER_LABEL),
        ]
    )
    return ValidationPrompt(
        system=system_prompt(template),
        head=head,
        evidence=render_evidence(packet, answer=answer),
        tail=tail,
        answer=answer,
        citable=citable_results(packet),
    )


def format_feedback(attempt_index: int, result: dict[str, object]) -> str:
    """One earlier verdict as text, for the prompt of a later validation."""
    lines = [f"Attempt {attempt_index}: {result.get('status')}"]
    if result.get("failure_category"):
        lines.append(f"category: {result['failure_category']}")
    for key in ("issues", "missing_requirements", "evidence_gaps"):
        values = result.get(key) or []
        if isinstance(values, list) and values:
            lines.append(f"{key}: " + "; ".join(str(v) for v in values))
    if result.get("recommended_revision_prompt"):
        lines.append(f"recommended revision: {result['recommended_revision_prompt']}")
    return "\n".join(lines)
