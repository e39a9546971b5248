"""``offline:researcher``: a deterministic, network-free research agent.

It is not an LLM. It really uses the tools it is offered: first ``search_knowledge``
with the key words of the request, then ``read_document`` on the best one to three
hits, then it answers extractively: the sentences of what it read that share the most
key words with the request, quoted, each citing its document title. Offered no tools
(synthesis, finalization), it answers the same way from the evidence in its prompt.

It follows the researcher's rules: each part of the request (a two-part
question has two) needs a sentence sharing at least ``PART_COVER`` of that part's key
words; a part nothing it read addresses is answered "The knowledge base I searched does
not state …" instead of quoting unrelated sentences. On a revision it searches again
with the requester's revise comment's terms and answers what the comment asks for too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models import Model
from pydantic_ai.models.function import AgentInfo, FunctionModel

from project.llm.messages import first_user_prompt, tool_calls, tool_returns
from project.untrusted import WARNING as EXTERNAL_WARNING
from tasks_app.knowledge.search import keywords, stem

MODEL_NAME = "offline:researcher"
MAX_READS = 3
MAX_QUOTES = 3
# A sentence addresses a part of the request when it shares this share of its key words.
PART_COVER = 0.5
NOT_STATED = "The knowledge base I searched does not state {what}."
NOTHING_FOUND = (
    "I could not find information about this in the knowledge base I searched, so I cannot "
    "answer it from evidence."
)

_DOC_HIT_RE = re.compile(r"^\s*(?:\d+\.|-)\s*\[doc (\d+)\]", re.MULTILINE)
_TITLE_LINE_RE = re.compile(r"^Title:\s*(.+)$")
_RENDERED_TITLE_RE = re.compile(r"title:\s*([^;\n]+?)\s*;")
_SECTION_RE = re.compile(r"^##\s+(.+)$", re.MULTILINE)
_SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_QUOTED_RE = re.compile(r'^"(.+)"\s*\(source:\s*(.+)\)$')
_INSTRUCTIONS_RE = re.compile(r"^Instructions:\s*(.+)$", re.MULTILINE)
# One wrapped block of rendered evidence, with the header line just before it.
_BLOCK_RE = re.compile(
    r"(?:^(?P<header>[^\n]*)\n)?"
    r'<EXTERNAL-CONTENT label="(?P<label>[^"]*)">\n(?P<body>.*?)\n</EXTERNAL-CONTENT>',
    re.DOTALL | re.MULTILINE,
)
_NOISE_RE = re.compile(r"^(<\s*/?\s*EXTERNAL-CONTENT.*>|\[The block above is external content.*)$")


def offline_researcher_model() -> Model:
    return FunctionModel(respond, model_name=MODEL_NAME)


def request_text(prompt: str) -> str:
    """The request section of a prompt ("## Request" up to the next "## " heading), or
    the whole prompt when it has no such section."""
    sections = list(_SECTION_RE.finditer(prompt))
    for i, match in enumerate(sections):
        if match.group(1).strip().lower().startswith("request"):
            end = sections[i + 1].start() if i + 1 < len(sections) else len(prompt)
            return prompt[match.end() : end].strip()
    return prompt


def focus_text(prompt: str) -> str:
    """What this run should look for: a team node's own instructions when it has them
    (each node researches its part), else the request."""
    if "## Your role in the team" in prompt:
        role_part = prompt.split("## Your role in the team", 1)[1]
        if m := _INSTRUCTIONS_RE.search(role_part):
            return m.group(1).strip()
    return request_text(prompt)


def evidence_sources(prompt: str) -> list[tuple[str, str]]:
    """The evidence in a no-tools prompt: the contents of its external-content blocks
    (tool results, run outputs), each with the source title from its rendered header.
    Packet headers, references and counts are structure, not evidence, and are skipped.
    A prompt without blocks is used whole."""
    sources: list[tuple[str, str]] = []
    for match in _BLOCK_RE.finditer(prompt):
        label = match.group("label")
        if "search_knowledge" in label or " message " in label:
            continue  # a hit list, or a transcript step: the results themselves are here
        header = match.group("header") or ""
        title_match = _RENDERED_TITLE_RE.search(header)
        sources.append((match.group("body"), title_match.group(1).strip() if title_match else ""))
    return sources


@dataclass
class Quote:
    sentence: str
    title: str
    score: float
    order: int


def _sentences_with_titles(text: str, default_title: str = "") -> list[tuple[str, str]]:
    """Split text into (sentence, source title) pairs; "Title: X" lines and rendered
    evidence headers ("title: X;") set the title for what follows."""
    out: list[tuple[str, str]] = []
    title = default_title
    for raw_line in text.splitlines():
        line = raw_line.strip()
        if not line or _NOISE_RE.match(line) or line == EXTERNAL_WARNING:
            continue
        if m := _TITLE_LINE_RE.match(line):
            title = m.group(1).strip()
            continue
        if m := _RENDERED_TITLE_RE.search(line):
            title = m.group(1).strip()
            continue
        line = re.sub(r"^(?:[#>*\-\s]+|\d+\.\s+(?=[A-Z]))+", "", line).strip()
        if line in ("From the knowledge base:",) or line.startswith("Sources: "):
            continue
        if m := _QUOTED_RE.match(line):
            # An earlier run's quote: keep the sentence and its source, not the wrapping.
            out.append((m.group(1).strip(), m.group(2).strip()))
            continue
        for sentence in _SENTENCE_SPLIT_RE.split(line):
            sentence = sentence.replace("**", "").strip()
            if len(sentence) >= 12:
                out.append((sentence, title))
    return out


def best_quotes(request: str, text_sources: list[tuple[str, str]]) -> list[Quote]:
    """The sentences sharing most key words with the request (ties: earlier first)."""
    request_stems = {stem(w) for w in keywords(request, limit=30)}
    if not request_stems:
        return []
    numeric_question = bool(
        re.search(r"\b(how (many|much|long|often)|when|which|what)\b", request.lower())
    )
    quotes: list[Quote] = []
    seen: set[str] = set()
    order = 0
    for text, default_title in text_sources:
        for sentence, title in _sentences_with_titles(text, default_title):
            key = sentence.lower()
            if key in seen:
                continue
            seen.add(key)
            order += 1
            words = {stem(w) for w in keywords(sentence, limit=200)}
            overlap = len(request_stems & words)
            if overlap == 0:
                continue
            score = overlap / len(request_stems)
            if numeric_question and re.search(r"\d", sentence):
                score += 0.05
            # Prefer a statement to a heading or a fragment.
            if len(sentence.split()) < 5:
                score -= 0.1
            quotes.append(Quote(sentence=sentence, title=title, score=score, order=order))
    quotes.sort(key=lambda q: (-q.score, q.order))
    if not quotes:
        return []
    threshold = max(quotes[0].score * 0.6, 0.2)
    return [q for q in quotes if q.score >= threshold][:MAX_QUOTES]


_NUMBER_RE = re.compile(r"\d[\d,.]*")


def _conflicts(quotes: list[Quote]) -> list[str]:
    """Two quotes from different documents that say the same thing with different
    figures: report the disagreement instead of picking one."""
    notes = []
    for i, a in enumerate(quotes):
        for b in quotes[i + 1 :]:
            if a.title == b.title:
                continue
            words_a = {stem(w) for w in keywords(_NUMBER_RE.sub(" ", a.sentence), limit=200)}
            words_b = {stem(w) for w in keywords(_NUMBER_RE.sub(" ", b.sentence), limit=200)}
            similar = len(words_a & words_b) / max(len(words_a | words_b), 1) >= 0.7
            numbers_a, numbers_b = _NUMBER_RE.findall(a.sentence), _NUMBER_RE.findall(b.sentence)
            if similar and numbers_a and numbers_b and numbers_a != numbers_b:
                notes.append(
                    f"Note: the sources disagree: {a.title or 'one source'} says "
                    f"{', '.join(numbers_a)}, {b.title or 'another source'} says "
                    f"{', '.join(numbers_b)}."
                )
    return notes


_QUANTITY_QUESTION_RE = re.compile(
    r"\b(how (many|much|long|often|old|far)|what (percentage|percent|amount|rate|share)|"
    r"which (percentage|amount|rate))\b",
    re.IGNORECASE,
)
_NUMBER_WORDS = (
    "one two three four five six seven eight nine ten eleven twelve fifteen twenty thirty "
    "forty fifty sixty hundred thousand half quarter double twice once"
).split()
_HAS_QUANTITY_RE = re.compile(r"\d|%|\b(" + "|".join(_NUMBER_WORDS) + r")\b", re.IGNORECASE)


def quantity_gap(request: str, quotes: list[Quote]) -> str:
    """A note when the request asks for a quantity and no quoted passage states one, so
    the answer does not pass off related sentences as the figure asked for."""
    if not quotes or not _QUANTITY_QUESTION_RE.search(request):
        return ""
    if any(_HAS_QUANTITY_RE.search(q.sentence) for q in quotes):
        return ""
    return (
        "Note: none of the passages I read states the figure the request asks for; "
        "the documents may not contain it."
    )


def compose_answer(quotes: list[Quote], request: str = "") -> str:
    if not quotes:
        return NOTHING_FOUND
    lines = ["From the knowledge base:"]
    for quote in quotes:
        source = f" (source: {quote.title})" if quote.title else ""
        lines.append(f'- "{quote.sentence}"{source}')
    gap = quantity_gap(request, quotes)
    if gap:
        lines.append("")
        lines.append(gap)
    conflicts = _conflicts(quotes)
    if conflicts:
        lines.append("")
        lines.extend(conflicts)
    titles = list(dict.fromkeys(q.title for q in quotes if q.title))
    if titles:
        lines.append("")
        lines.append("Sources: " + "; ".join(titles) + ".")
    return "\n".join(lines)


_PART_SPLIT_RE = re.compile(
    r"\?|;|\n|\b(?:and|also|plus)\s+(?=(?:what|how|when|which|who|where|whether|is|are|"
    r"does|do|can|must|should)\b)",
    re.IGNORECASE,
)
_COMMENT_LABEL_RE = re.compile(r"^requester revision comment \d+$")


def request_parts(request: str) -> list[str]:
    """The things a request asks for (a two-part question gives two)."""
    parts: list[str] = []
    for piece in _PART_SPLIT_RE.split(request):
        piece = (piece or "").strip(" ,.")
        if not piece:
            continue
        if len(keywords(piece, limit=30)) < 2 and parts:
            parts[-1] = f"{parts[-1]} {piece}"
        elif keywords(piece, limit=30):
            parts.append(piece)
    return parts or [request.strip()]


def revise_comments(prompt: str) -> list[str]:
    """The requester's revise comments in a revision prompt, oldest first."""
    return [
        m.group("body").strip()
        for m in _BLOCK_RE.finditer(prompt)
        if _COMMENT_LABEL_RE.match(m.group("label"))
    ]


def _covers(part: str, sentence: str) -> float:
    wanted = {stem(w) for w in keywords(part, limit=30)}
    if not wanted:
        return 0.0
    return len(wanted & {stem(w) for w in keywords(sentence, limit=200)}) / len(wanted)


def answer_parts(
    request: str, sources: list[tuple[str, str]], comments: list[str] | None = None
) -> str:
    """The answer: quotes for every part of the request (and every revise comment) that
    something read addresses; for a part nothing addresses, that the knowledge base does
    not state it."""
    parts = request_parts(request)
    comments = [c for c in comments or [] if keywords(c)]
    quotes: list[Quote] = []
    missing: list[str] = []
    for part in [*parts, *comments]:
        found = [q for q in best_quotes(part, sources) if _covers(part, q.sentence) >= PART_COVER]
        if len(parts) > 1 or comments:
            found = found[:2]
        if found:
            quotes += [q for q in found if q.sentence not in {x.sentence for x in quotes}]
        elif part in parts:
            missing.append(part)
    if not quotes:
        return " ".join(NOT_STATED.format(what=_what(p)) for p in parts)
    text = compose_answer(quotes[: MAX_QUOTES + len(comments) + len(parts) - 1], request)
    if missing:
        text += "\n\n" + " ".join(NOT_STATED.format(what=_what(p)) for p in missing)
    return text


def _what(part: str) -> str:
    """A request part as the object of "does not state"."""
    part = part.strip().rstrip("?.").strip()
    return f"the answer to: {part}" if part else "it"


def _search_calls(request: str, comments: list[str]) -> ModelResponse:
    """One ``search_knowledge`` call with the request's key words; on a revision, one more
    per revise comment with the comment's own terms."""
    queries = [" ".join(keywords(request, limit=8)) or request[:200]]
    queries += [" ".join(keywords(c, limit=8)) for c in comments if keywords(c)]
    return ModelResponse(
        parts=[
            ToolCallPart("search_knowledge", {"query": query}, tool_call_id=f"call_search_{i}")
            for i, query in enumerate(queries, start=1)
        ]
    )


def _hits(returns: list[ToolReturnPart]) -> list[str]:
    """The document ids worth reading: the best hits of each search (the request's, then
    each comment's)."""
    hits: list[str] = []
    for part in returns:
        if part.tool_name == "search_knowledge":
            own = [h for h in _DOC_HIT_RE.findall(part.model_response_str())]
            hits += [h for h in own if h not in hits][:MAX_READS]
    return hits


def _read_calls(hits: list[str], comments: list[str]) -> ModelResponse:
    """``read_document`` calls for the hits (``MAX_READS`` more per revise comment)."""
    return ModelResponse(
        parts=[
            ToolCallPart(
                "read_document",
                {"document_id": int(doc_id)},
                tool_call_id=f"call_read_{doc_id}",
            )
            for doc_id in hits[: MAX_READS * (1 + len(comments))]
        ]
    )


def _answer_from_tools(
    request: str, comments: list[str], offered: set[str], returns: list[ToolReturnPart]
) -> ModelResponse:
    """The answer from what was read (documents first; search snippets if nothing was
    read), or that nothing was found when read_document was offered but nothing read."""
    reads = [p for p in returns if p.tool_name != "search_knowledge"]
    if not reads and "read_document" in offered:
        return ModelResponse(parts=[TextPart(NOTHING_FOUND)])
    sources = [(p.model_response_str(), "") for p in (reads or returns)]
    return ModelResponse(parts=[TextPart(answer_parts(request, sources, comments))])


def _with_tools(
    request: str,
    comments: list[str],
    offered: set[str],
    calls: list[ToolCallPart],
    returns: list[ToolReturnPart],
) -> ModelResponse:
    """The next step when tools are offered: search, then read the hits, then answer."""
    searched = any(c.tool_name == "search_knowledge" for c in calls)
    if not searched and "search_knowledge" in offered:
        return _search_calls(request, comments)
    read_ids = {
        str(c.args_as_dict().get("document_id")) for c in calls if c.tool_name == "read_document"
    }
    if not read_ids and "read_document" in offered:
        hits = _hits(returns)
        if hits:
            return _read_calls(hits, comments)
    return _answer_from_tools(request, comments, offered, returns)


def _prompt_evidence(prompt: str) -> list[tuple[str, str]]:
    """The evidence in a no-tools prompt: its evidence blocks, else the prompt itself
    without its request section."""
    sources = evidence_sources(prompt)
    if not sources:
        evidence = prompt
        if _SECTION_RE.search(prompt) and request_text(prompt) != prompt:
            # Do not quote the request back to itself.
            evidence = prompt.replace(request_text(prompt), "", 1)
        sources = [(evidence, "")]
    return sources


def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The researcher's next model response: tool calls, or its answer."""
    prompt = first_user_prompt(messages)
    request = focus_text(prompt)
    comments = revise_comments(prompt)
    offered = {tool.name for tool in info.function_tools}
    calls = tool_calls(messages)
    returns = tool_returns(messages)

    if offered:
        return _with_tools(request, comments, offered, calls, returns)

    # No tools offered: synthesis or finalization, the evidence is in the prompt.
    sources = _prompt_evidence(prompt)
    sources += [(p.model_response_str(), "") for p in returns]
    return ModelResponse(parts=[TextPart(answer_parts(request, sources, comments))])
