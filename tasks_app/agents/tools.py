"""The one tool registry (SPEC X8).

Tools: ``search_knowledge`` (PostgreSQL full-text search with ranking; a keyword
fallback on SQLite), ``read_document`` (full text, never cut), ``fetch_url`` (httpx with
an SSRF guard applied after DNS resolution on every hop, size and time limits, HTML
reduced to text). A tool error becomes a tool result the model sees (``is_error``),
never a crash of the run.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import re
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit

import httpx
from django.conf import settings
from django.db import connection
from pydantic_ai.tools import ToolDefinition

from tasks_app.agents.db import db_turn
from tasks_app.models import KnowledgeDocument

log = logging.getLogger(__name__)


class ToolError(Exception):
    """A failure the model should read as the tool's result."""


@dataclass
class ToolOutput:
    content: str
    title: str = ""
    url: str = ""
    is_error: bool = False
    payload: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    func: Callable[..., ToolOutput]

    def definition(self) -> ToolDefinition:
        return ToolDefinition(
            name=self.name, description=self.description, parameters_json_schema=self.parameters
        )


REGISTRY: dict[str, Tool] = {}
DEFAULT_TOOLS = ("search_knowledge", "read_document", "fetch_url")


def register_tool(tool: Tool) -> Tool:
    REGISTRY[tool.name] = tool
    return tool


def tool_definitions(names: list[str] | tuple[str, ...]) -> list[ToolDefinition]:
    return [REGISTRY[name].definition() for name in names if name in REGISTRY]


def run_tool(name: str, arguments: dict[str, Any] | str | None) -> ToolOutput:
    """Run a registered tool; unknown tools, bad arguments and failures come back as an
    error result (X8) so the model can react."""
    tool = REGISTRY.get(name)
    if tool is None:
        return ToolOutput(content=f"Error: there is no tool named '{name}'.", is_error=True)
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            return ToolOutput(content=f"Error: arguments are not valid JSON: {exc}", is_error=True)
    if not isinstance(arguments, dict):
        return ToolOutput(content="Error: arguments must be a JSON object.", is_error=True)
    try:
        return tool.func(**arguments)
    except TypeError as exc:
        return ToolOutput(content=f"Error: bad arguments for {name}: {exc}", is_error=True)
    except ToolError as exc:
        return ToolOutput(content=f"Error: {exc}", is_error=True)
    except Exception as exc:  # a tool bug must not end the run (X8)
        log.exception("tool %s failed", name)
        return ToolOutput(
            content=f"Error: {name} failed: {type(exc).__name__}: {exc}", is_error=True
        )


# --- Knowledge base -------------------------------------------------------------------------

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself
    yourselves please tell give find answer question know need want many much also per
    does according us use using may might shall must get got one""".split()
)
_WORD_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9'-]*")


def keywords(text: str, *, limit: int = 12) -> list[str]:
    """Content words of ``text`` in first-seen order, lowercased, without stop words."""
    seen: list[str] = []
    for raw in _WORD_RE.findall(text):
        word = raw.lower().strip("'-")
        if len(word) < 3 and not word.isdigit():
            continue
        if word in STOPWORDS or word in seen:
            continue
        seen.append(word)
        if len(seen) >= limit:
            break
    return seen


def stem(word: str) -> str:
    """A crude English stem, enough to match 'budgets' with 'budget' offline."""
    word = word.lower()
    for suffix in ("ations", "ation", "ings", "ing", "ies", "ied", "es", "ed", "ly", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def _snippet(body: str, terms: list[str], width: int = 240) -> str:
    lowered = body.lower()
    positions = [lowered.find(t) for t in terms if lowered.find(t) >= 0]
    start = max(min(positions) - 60, 0) if positions else 0
    text = " ".join(body[start : start + width].split())
    return ("…" if start else "") + text + ("…" if start + width < len(body) else "")


def _search_postgres(
    query: str, terms: list[str], limit: int
) -> list[tuple[KnowledgeDocument, float]]:
    from django.contrib.postgres.search import SearchQuery, SearchRank, SearchVector

    # OR of the key words: a natural-language question rarely has every word in one
    # document, and ranking puts the documents with most matches first.
    safe = [re.sub(r"[^a-z0-9]", "", t) for t in terms]
    raw_query = " | ".join(t for t in safe if t)
    if not raw_query:
        return []
    vector = SearchVector("title", weight="A", config="english") + SearchVector(
        "body", weight="B", config="english"
    )
    search_query = SearchQuery(raw_query, search_type="raw", config="english")
    rows = (
        KnowledgeDocument.objects.annotate(rank=SearchRank(vector, search_query))
        .filter(rank__gt=0)
        .order_by("-rank", "title")[:limit]
    )
    return [(doc, float(doc.rank)) for doc in rows]


def _search_simple(terms: list[str], limit: int) -> list[tuple[KnowledgeDocument, float]]:
    """SQLite fallback: score each document by key-word hits in title (x3) and body."""
    stems = {stem(t) for t in terms}
    scored = []
    for doc in KnowledgeDocument.objects.all():
        title_words = {stem(w) for w in _WORD_RE.findall(doc.title.lower())}
        body_words: dict[str, int] = {}
        for w in _WORD_RE.findall(doc.body.lower()):
            s = stem(w)
            if s in stems:
                body_words[s] = body_words.get(s, 0) + 1
        matched = stems & (title_words | set(body_words))
        if not matched:
            continue
        score = len(matched) + 3 * len(stems & title_words) + 0.01 * sum(body_words.values())
        scored.append((doc, score / (4 * len(stems))))
    scored.sort(key=lambda pair: (-pair[1], pair[0].title))
    return scored[:limit]


def search_knowledge(query: str, limit: int = 5) -> ToolOutput:
    query = str(query).strip()
    if not query:
        raise ToolError("query must not be empty")
    limit = max(1, min(int(limit), 10))
    terms = keywords(query) or [query.lower()]
    with db_turn():
        if connection.vendor == "postgresql":
            hits = _search_postgres(query, terms, limit)
        else:
            hits = _search_simple(terms, limit)
    if not hits:
        return ToolOutput(
            content=f"No documents match '{query}'.", payload={"query": query, "hits": []}
        )
    # Plain list without counts or scores in the text (they are in the payload): figures
    # here would read like competing facts to a grounding check.
    lines = [f"Documents matching '{query}', best first:"]
    for doc, _score in hits:
        lines.append(f"- [doc {doc.pk}] {doc.title}")
        lines.append(f"   {_snippet(doc.body, terms)}")
    lines.append("Use read_document with a document_id to read a document in full.")
    return ToolOutput(
        content="\n".join(lines),
        payload={
            "query": query,
            "hits": [{"id": d.pk, "title": d.title, "score": s} for d, s in hits],
        },
    )


def read_document(document_id: int | str) -> ToolOutput:
    try:
        pk = int(str(document_id).strip().removeprefix("doc").strip())
    except ValueError:
        raise ToolError(f"document_id must be a number, got {document_id!r}") from None
    with db_turn():
        doc = KnowledgeDocument.objects.filter(pk=pk).first()
    if doc is None:
        raise ToolError(f"there is no document with id {pk}")
    # The whole body, never cut: a fact deep in a long document must reach the evidence.
    return ToolOutput(
        content=f"Title: {doc.title}\n\n{doc.body}",
        title=doc.title,
        url=doc.source_url,
        payload={"document_id": doc.pk},
    )


# --- fetch_url ------------------------------------------------------------------------------

MAX_REDIRECTS = 5


def _address_allowed(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    # is_global is False for private, loopback, link-local (169.254.169.254, the cloud
    # metadata address), shared (100.64/10), reserved, unspecified and documentation ranges.
    return ip.is_global and not ip.is_multicast


def resolve_public_address(host: str, port: int) -> str:
    """Resolve ``host`` and return an address to connect to, refusing the request when
    any resolved address is not public (unless FETCH_URL_ALLOW_PRIVATE)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ToolError(f"cannot resolve host '{host}': {exc}") from None
    addresses = [str(info[4][0]) for info in infos]
    if not addresses:
        raise ToolError(f"cannot resolve host '{host}'")
    if not settings.FETCH_URL_ALLOW_PRIVATE:
        refused = [a for a in addresses if not _address_allowed(a)]
        if refused:
            raise ToolError(
                f"refused: '{host}' resolves to a private, loopback, link-local or otherwise "
                f"non-public address ({refused[0]})"
            )
    return addresses[0]


class _TextExtractor(HTMLParser):
    SKIP = {"script", "style", "noscript", "template", "svg", "head"}
    BLOCK = {
        "p",
        "div",
        "br",
        "li",
        "tr",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "section",
        "article",
        "pre",
    }

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self._skip = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in self.SKIP:
            self._skip += 1
        elif tag in self.BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in self.SKIP and self._skip:
            self._skip -= 1
        elif tag in self.BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self._skip:
            self.parts.append(data)

    def text(self) -> str:
        lines = [" ".join(line.split()) for line in "".join(self.parts).splitlines()]
        return "\n".join(line for line in lines if line)


def html_to_text(html: str) -> tuple[str, str]:
    """(title, text) of an HTML page, without scripts and styles."""
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    return " ".join(parser.title.split()), parser.text()


def fetch_url(url: str, *, transport: httpx.BaseTransport | None = None) -> ToolOutput:
    """GET ``url`` (http/https). Every hop, redirects included, is resolved and checked
    before connecting, and the connection goes to the checked address (no DNS rebinding)."""
    url = str(url).strip()
    deadline = time.monotonic() + settings.FETCH_URL_TIMEOUT_SECONDS
    max_bytes = settings.FETCH_URL_MAX_BYTES
    with httpx.Client(
        transport=transport, timeout=settings.FETCH_URL_TIMEOUT_SECONDS, follow_redirects=False
    ) as client:
        for _ in range(MAX_REDIRECTS + 1):
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ToolError(f"only http and https URLs can be fetched, not '{url}'")
            host = parts.hostname
            port = parts.port or (443 if parts.scheme == "https" else 80)
            address = resolve_public_address(host, port)
            pinned_host = f"[{address}]" if ":" in address else address
            netloc = f"{pinned_host}:{port}"
            pinned = urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))
            host_header = host if parts.port is None else f"{host}:{parts.port}"
            request = client.build_request(
                "GET",
                pinned,
                headers={"Host": host_header, "User-Agent": "Evidentia-fetch/1.0"},
                extensions={"sni_hostname": host},
            )
            try:
                response = client.send(request, stream=True)
            except httpx.HTTPError as exc:
                raise ToolError(f"fetching {url} failed: {type(exc).__name__}: {exc}") from None
            try:
                if response.is_redirect:
                    location = response.headers.get("location", "")
                    if not location:
                        raise ToolError(f"{url} redirected without a Location header")
                    url = urljoin(url, location)
                    continue
                body = bytearray()
                truncated = False
                for chunk in response.iter_bytes():
                    body.extend(chunk)
                    if len(body) > max_bytes:
                        del body[max_bytes:]
                        truncated = True
                        break
                    if time.monotonic() > deadline:
                        raise ToolError(f"fetching {url} took longer than the time limit")
                status = response.status_code
                content_type = response.headers.get("content-type", "")
                encoding = response.encoding or "utf-8"
            finally:
                response.close()
            text = bytes(body).decode(encoding, errors="replace")
            title = ""
            if "html" in content_type.lower() or text.lstrip()[:15].lower().startswith(
                ("<!doctype", "<html")
            ):
                title, text = html_to_text(text)
            header = f"URL: {url}\nHTTP status: {status}\n"
            if title:
                header += f"Title: {title}\n"
            if truncated:
                header += (
                    f"Note: the response was larger than {max_bytes} bytes; "
                    f"only the first {max_bytes} bytes were read.\n"
                )
            return ToolOutput(
                content=header + "\n" + text,
                title=title,
                url=url,
                is_error=status >= 400,
                payload={"status": status, "content_type": content_type, "truncated": truncated},
            )
    raise ToolError(f"too many redirects (more than {MAX_REDIRECTS})")


register_tool(
    Tool(
        name="search_knowledge",
        description=(
            "Search the company knowledge base. Returns the best matching documents with "
            "their ids, titles and a short snippet. Read a document with read_document."
        ),
        parameters={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Key words to search for."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 10, "default": 5},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        func=search_knowledge,
    )
)
register_tool(
    Tool(
        name="read_document",
        description="Read one knowledge-base document in full, by the id search_knowledge gave.",
        parameters={
            "type": "object",
            "properties": {"document_id": {"type": "integer"}},
            "required": ["document_id"],
            "additionalProperties": False,
        },
        func=read_document,
    )
)
register_tool(
    Tool(
        name="fetch_url",
        description=(
            "Fetch a public web page over HTTP(S) and return its text. Private and internal "
            "addresses are refused."
        ),
        parameters={
            "type": "object",
            "properties": {"url": {"type": "string", "description": "An http or https URL."}},
            "required": ["url"],
            "additionalProperties": False,
        },
        func=fetch_url,
    )
)
