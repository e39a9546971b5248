"""Reading a validator prompt as ``offline:judge`` does: the tool results' sentences,
the answer's claims with the source each names, the parts of the request and the
content words compared between them."""

from __future__ import annotations

import re
from dataclasses import dataclass

from evidence_app.offline_judge import grounding
from evidence_app.offline_judge.grounding import Sentence
from evidence_app.offline_judge.wording import CAPITAL, LETTER, SMALL

QUESTION_WORDS = frozenset(
    """many much long often old far percentage date source sources say says said tell know
    known describe explain information evidence document documents according please give
    answer question state write sentence text page""".split()
)
GENERIC = frozenset(grounding.stem(w) for w in QUESTION_WORDS)
BLOCK_RE = re.compile(
    r'<EXTERNAL-CONTENT label="(?P<label>[^"]*)">\n(?:(?P<body>.*?)\n)?</EXTERNAL-CONTENT>',
    re.DOTALL,
)
TOOL_RESULT_LABEL_RE = re.compile(r"^R\d+ .+ result( \(continued\))?$")
# A sentence ends at . ! ? before a space and a capital, digit or quote, or straight
# before a capitalised word ("century.First"); not after an initial or an abbreviation.
_BOUNDARY_RE = re.compile(
    rf"(?<=[.!?])\s+(?={CAPITAL}|[0-9\"'(*“‘])|(?<={SMALL}{{2}}[.!?])(?={CAPITAL}{SMALL})"
)
_ABBREVIATIONS = frozenset(
    """mr mrs ms dr st jr sr prof inc ltd co no vs etc mt ft gen col capt lt sgt rev hon
    jan feb mar apr jun jul aug sep sept oct nov dec approx fig vol ed eds""".split()
)
_QUOTE_RE = re.compile(r'^"(?P<sentence>.+)"\s*(\((source|sources):[^)]*\))?\.?$')
LETTERS_RE = re.compile(f"{LETTER}+")
FIGURE_QUESTION_RE = re.compile(
    r"\b(how (many|much|long|often|old|far)|what percentage|which percentage|when|what date|"
    r"what year|which year)\b",
    re.IGNORECASE,
)
# "I could not find …", "The handbook does not state …": statements about the evidence,
# not claims to check; an answer made only of them answers nothing.
ABSENCE_RE = re.compile(
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


def content_tokens(text: str) -> list[str]:
    """The compared forms of a text's content words and figures, in order."""
    return [
        t.norm
        for t in grounding.tokens(text)
        if not t.punct and (t.figure or (len(t.text) >= 3 and t.lower not in STOPWORDS))
    ]


def content_words(text: str) -> set[str]:
    """Words of three letters or more that are not stop words, and numbers, in the form
    the grounding check compares ("Arthur's" is "arthur", "four" is "4")."""
    return set(content_tokens(text))


def pairs(norms: list[str]) -> set[tuple[str, str]]:
    return set(zip(norms, norms[1:], strict=False))


def subject_words(request: str) -> set[str]:
    """The request's content words without the question's own words ("how long",
    "what does the source say about")."""
    return {w for w in content_words(request) if w not in GENERIC}


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


def split_lines(text: str) -> list[str]:
    """Sentences of a text, line by line (headings, quotes, list marks and emphasis
    stripped)."""
    sentences: list[str] = []
    for raw_line in text.splitlines():
        line = re.sub(r"^\s*(#+|>|[-*•]|\d+\.)\s*", "", raw_line).strip().strip("*").strip()
        if line:
            sentences.extend(split_sentences(line))
    return sentences


def evidence_sentences(prompt: str) -> list[Sentence]:
    """Sentences of every tool result block in the prompt."""
    out: list[Sentence] = []
    for match in BLOCK_RE.finditer(prompt):
        label = match.group("label")
        if TOOL_RESULT_LABEL_RE.match(label):
            source = label.removesuffix(" (continued)")
            out.extend(
                grounding.sentence(s, source) for s in split_lines(match.group("body") or "")
            )
    return out


def block(prompt: str, label: str) -> str | None:
    """The body of the last wrapped block with this label."""
    bodies = [m.group("body") or "" for m in BLOCK_RE.finditer(prompt) if m.group("label") == label]
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


def titles_of(prompt: str) -> dict[str, str]:
    """Tool result label (``R3``) -> the document title its header or body names."""
    titles: dict[str, str] = {}
    for match in re.finditer(
        r"^\[(?P<ref>R\d+)\] [^\n]*?title: (?P<title>[^;\n]+)", prompt, re.MULTILINE
    ):
        titles.setdefault(match.group("ref"), match.group("title").strip())
    for match in BLOCK_RE.finditer(prompt):
        label = match.group("label")
        if TOOL_RESULT_LABEL_RE.match(label):
            ref = label.split(" ", 1)[0]
            body_title = re.match(r"Title:\s*(.+)", match.group("body") or "")
            if body_title and ref not in titles:
                titles[ref] = body_title.group(1).strip()
    return titles
