"""Render an evidence packet as text for synthesis and validation.

There is no truncation anywhere: every character of every tool result is in the
output. A tool result identical to an earlier one (same tool, same content) is
rendered once and later occurrences point to it, so its tokens are paid once.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from evidence_app.packets.task_packet import RunEvidence, TaskEvidencePacket, ToolEvidence
from project.untrusted import wrap_external

# What the validator's evidence says in place of the answer under review, which it
# reads once, in its own section at the end.
ANSWER_POINTER = "[the final answer: see ANSWER UNDER REVIEW below]"


def _arguments(arguments: dict[str, object]) -> str:
    return json.dumps(arguments, ensure_ascii=False, sort_keys=True)


def evidence_labels(packet: TaskEvidencePacket) -> dict[int, str]:
    """The ``R<n>`` label of every tool result of the packet, by evidence id: numbered
    in rendering order (team runs in graph order, then the main/synthesis run; each
    run's results in order). The validator, the citation check and the UI all use it."""
    labels: dict[int, str] = {}
    for run in packet.all_runs:
        for result in run.tool_results:
            labels[result.evidence_id] = f"R{len(labels) + 1}"
    return labels


@dataclass(frozen=True)
class CitableResult:
    label: str
    evidence_id: int
    content: str


def citable_results(packet: TaskEvidencePacket) -> dict[str, CitableResult]:
    """Every tool result of the attempt by the ``R<n>`` label the validator saw: what its
    citations may name (``validator.citations`` checks them against it)."""
    labels = evidence_labels(packet)
    out: dict[str, CitableResult] = {}
    for run in packet.all_runs:
        for result in run.tool_results:
            label = labels[result.evidence_id]
            out[label] = CitableResult(
                label=label, evidence_id=result.evidence_id, content=result.content
            )
    return out


class _Renderer:
    def __init__(self, labels: dict[int, str], answer: str = "") -> None:
        self.answer = answer.strip()
        self.parts: list[str] = []
        self.first_ref: dict[str, str] = {}
        self.ref_by_call: dict[str, str] = {}
        self.labels = labels

    def tool_result(self, result: ToolEvidence) -> None:
        ref = self.labels[result.evidence_id]
        if result.tool_call_id:
            self.ref_by_call[result.tool_call_id] = ref
        header = f"[{ref}] {result.tool_name}({_arguments(result.arguments)})"
        meta = []
        if result.title:
            meta.append(f"title: {result.title}")
        if result.url:
            meta.append(f"url: {result.url}")
        if result.is_error:
            meta.append("TOOL ERROR")
        if (result.event_payload or {}).get("truncated_at_source"):
            # The agent's own exporter cut it before it reached us.
            meta.append("TRUNCATED AT THE SOURCE: shorter than what the agent saw")
        meta.append(f"{len(result.content)} chars")
        header += " — " + "; ".join(meta)
        earlier = self.first_ref.get(result.content_sha256)
        if earlier is not None:
            self.parts.append(
                f"{header}\nIdentical to [{earlier}] (same tool, same content); not repeated.\n"
            )
            self.ref_by_call.setdefault(result.tool_call_id, earlier)
            return
        self.first_ref[result.content_sha256] = ref
        self.parts.append(header)
        self.parts.append(wrap_external(result.content, label=f"{ref} {result.tool_name} result"))
        self.parts.append("")

    def run(self, run: RunEvidence, heading: str) -> None:
        self.parts.append(heading)
        facts = [f"run {run.run_id}", f"model {run.model_name}" if run.model_name else ""]
        facts += [
            f"status {run.status}" if run.status else "",
            f"finish_reason {run.finish_reason or '-'}",
        ]
        self.parts.append("(" + ", ".join(f for f in facts if f) + ")")
        if run.error:
            self.parts.append(wrap_external(run.error, label=f"run {run.run_id} error"))
        for warning in run.warnings:
            self.parts.append(f"Warning: {warning}")
        if run.tool_results:
            self.parts.append(f"Tool results ({len(run.tool_results)}):")
            for result in run.tool_results:
                self.tool_result(result)
        else:
            self.parts.append("Tool results: none.")
        trajectory = list(self._trajectory(run))
        if trajectory:
            self.parts.append("Trajectory:")
            self.parts.extend(trajectory)
        self.parts.append("Output of this run:")
        self.parts.append(self._text(run.output_text, label=f"run {run.run_id} output"))
        self.parts.append("")

    def _trajectory(self, run: RunEvidence) -> Iterable[str]:
        """Assistant steps in order; tool returns point at their rendered result."""
        for message in run.transcript:
            if message.role in ("system", "user"):
                continue
            if message.role == "tool":
                ref = self.ref_by_call.get(message.tool_call_id or "")
                if ref:
                    yield f"  {message.index}. tool returned -> [{ref}]"
                    continue
                yield f"  {message.index}. tool returned:"
                yield wrap_external(
                    message.content, label=f"run {run.run_id} message {message.index}"
                )
                continue
            if message.content:
                yield f"  {message.index}. {message.role}:"
                yield self._text(message.content, label=f"run {run.run_id} message {message.index}")

    def _text(self, text: str, *, label: str) -> str:
        """A run's text wrapped, or the pointer to the answer when it is the answer."""
        if not text:
            return "(no output)"
        if self.answer and text.strip() == self.answer:
            return ANSWER_POINTER
        return wrap_external(text, label=label)


def render_packet(packet: TaskEvidencePacket, *, answer: str = "") -> str:
    """The packet as text: team runs in graph order, then the main/synthesis run,
    node results and the final output. Nothing is cut.

    With ``answer`` (the validator's answer under review, which it reads in a section of
    its own), a run output or assistant message that is that answer is replaced by
    ``ANSWER_POINTER``, so the answer is read, and paid, once. Tool results are never
    replaced."""
    renderer = _Renderer(evidence_labels(packet), answer=answer)
    parts = renderer.parts
    parts.append(f"EVIDENCE PACKET — task {packet.task_id}, attempt {packet.attempt_index}")
    parts.append(
        f"{len(packet.all_runs)} run(s), {packet.tool_result_count} tool result(s), "
        f"{packet.evidence_chars} characters of tool output."
    )
    parts.append("")
    if packet.team_runs:
        parts.append("== TEAM RUNS (graph order) ==")
        for position, run in enumerate(packet.team_runs, start=1):
            role = f", role: {run.node_role}" if run.node_role else ""
            renderer.run(run, f"--- Team node {position}: {run.node_id}{role} ---")
        parts.append("== TEAM NODE RESULTS ==")
        for result in packet.team_node_results:
            state = "succeeded" if result.success else "did not succeed"
            line = (
                f"- {result.node_id} ({result.role or 'no role'}): {state}, "
                f"finish_reason {result.finish_reason or '-'}"
            )
            if result.error:
                line += " — error recorded above"
            parts.append(line)
        parts.append("")
    if packet.main_run:
        title = "SYNTHESIS RUN" if packet.main_run.kind == "synthesis" else "MAIN RUN"
        renderer.run(packet.main_run, f"== {title} ==")
    if not packet.all_runs:
        parts.append("No runs were recorded for this attempt.")
    parts.append("== FINAL OUTPUT ==")
    parts.append(
        wrap_external(packet.final_output, label="final output")
        if packet.final_output
        else "(empty)"
    )
    return "\n".join(parts)
