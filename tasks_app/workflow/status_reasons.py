"""Why a task is in its status, in one line a person reads: the reason of the change that
moved it there ("validator: accepted (score 0.90), below the certified threshold 0.95: a
person decides", "judges disagree: …"), with the stored codes in words, or, when the
change gave none, what the status means."""

from __future__ import annotations

import re

from tasks_app.workflow.states import TaskStatus

__all__ = ["codes_in_words", "status_reason_words"]

MEANING: dict[str, str] = {
    TaskStatus.OPEN: "waiting for the agent to start",
    TaskStatus.RUNNING: "the agent is working on the request",
    TaskStatus.VALIDATING: "the validator is checking the answer",
    TaskStatus.AWAITING_FEEDBACK: "the answer is ready for the requester",
    TaskStatus.NEEDS_REVIEW: "a person decides",
    TaskStatus.NEEDS_REVISION: "another attempt will address the feedback",
    TaskStatus.FAILED: "no usable answer came",
    TaskStatus.CLOSED: "the requester has the answer",
    TaskStatus.ABANDONED: "a person abandoned it",
}
# A stored code such as insufficient_evidence or goal_missed (lower-case words joined by
# underscores); names with other characters (models, templates) are left as they are.
_CODE = re.compile(r"(?<![\w:@./-])([a-z]+(?:_[a-z]+)+)(?![\w:@./-])")
LONGEST = 240


def status_reason_words(status: str, reason: str) -> str:
    """The one line saying why a task is in ``status``, given the reason stored with the
    change that moved it there ("" when none was)."""
    line = reason.strip().splitlines()[0].strip() if reason.strip() else ""
    if not line:
        return MEANING.get(status, "")
    line = codes_in_words(line)
    return line if len(line) <= LONGEST else line[: LONGEST - 1].rstrip() + "…"


def codes_in_words(text: str) -> str:
    """``text`` with each stored code in it (``insufficient_evidence``,
    ``unsupported_claim``) written as words; names of models and templates kept."""
    return _CODE.sub(lambda m: m.group(1).replace("_", " "), text)
