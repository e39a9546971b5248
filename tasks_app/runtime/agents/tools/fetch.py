"""``fetch_url``: HTTP(S) with the SSRF guard of ``project.netguard`` checked
after DNS resolution and on every redirect, and size and time limits."""

from __future__ import annotations

import logging
import time
from urllib.parse import urljoin, urlsplit, urlunsplit

import httpx
import lxml.etree
import lxml.html
from django.conf import settings
from inscriptis import Inscriptis
from inscriptis.model.config import ParserConfig

from project.netguard import UnsafeAddress, resolve_public_address
from tasks_app.runtime.agents.tools.registry import Tool, ToolError, ToolOutput, register_tool

log = logging.getLogger(__name__)

MAX_REDIRECTS = 5


# Elements whose text is not page content (inscriptis already leaves out script/style).
_NOT_CONTENT = "//head|//script|//style|//noscript|//template|//svg"


def html_to_text(html: str) -> tuple[str, str]:
    """(title, text) of an HTML page, without scripts, styles and other non-content;
    block elements start new lines (inscriptis renders the layout)."""
    try:
        document = lxml.html.fromstring(
            html.encode("utf-8"), parser=lxml.html.HTMLParser(encoding="utf-8")
        )
    except lxml.etree.ParserError:  # an empty or whitespace-only document
        return "", ""
    title = " ".join((document.findtext(".//title") or "").split())
    for element in document.xpath(_NOT_CONTENT):
        element.drop_tree()
    rendered = Inscriptis(document, ParserConfig()).get_text()
    lines = [" ".join(line.split()) for line in rendered.splitlines()]
    return title, "\n".join(line for line in lines if line)


def _pinned_request(client: httpx.Client, url: str) -> httpx.Request:
    """A GET of ``url`` addressed to its resolved and checked address, with the original
    host as Host header and TLS server name (no DNS rebinding)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ToolError(f"only http and https URLs can be fetched, not '{url}'")
    host = parts.hostname
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        address = resolve_public_address(host, port, allow_private=settings.FETCH_URL_ALLOW_PRIVATE)
    except UnsafeAddress as exc:
        raise ToolError(str(exc)) from None
    pinned_host = f"[{address}]" if ":" in address else address
    netloc = f"{pinned_host}:{port}"
    pinned = urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))
    host_header = host if parts.port is None else f"{host}:{parts.port}"
    return client.build_request(
        "GET",
        pinned,
        headers={"Host": host_header, "User-Agent": "Evidentia-fetch/1.0"},
        extensions={"sni_hostname": host},
    )


def _send(client: httpx.Client, request: httpx.Request, url: str) -> httpx.Response:
    """Send ``request`` streamed; a transport error becomes a ``ToolError``."""
    try:
        return client.send(request, stream=True)
    except httpx.HTTPError as exc:
        raise ToolError(f"fetching {url} failed: {type(exc).__name__}: {exc}") from None


def _redirect_target(response: httpx.Response, url: str) -> str:
    """Where a redirect response points, resolved against ``url``."""
    location = response.headers.get("location", "")
    if not location:
        raise ToolError(f"{url} redirected without a Location header")
    return urljoin(url, location)


def _read_body(
    response: httpx.Response, url: str, max_bytes: int, deadline: float
) -> tuple[bytearray, bool]:
    """The response body, cut at ``max_bytes`` (and whether it was cut); a ``ToolError``
    when reading goes past ``deadline``."""
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
    return body, truncated


def _page_output(
    url: str, status: int, content_type: str, text: str, truncated: bool, max_bytes: int
) -> ToolOutput:
    """The tool output for a fetched page: a header (URL, status, title, truncation note)
    and the text, HTML turned into text."""
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
            response = _send(client, _pinned_request(client, url), url)
            try:
                if response.is_redirect:
                    url = _redirect_target(response, url)
                    continue
                body, truncated = _read_body(response, url, max_bytes, deadline)
                status = response.status_code
                content_type = response.headers.get("content-type", "")
                encoding = response.encoding or "utf-8"
            finally:
                response.close()
            text = bytes(body).decode(encoding, errors="replace")
            return _page_output(url, status, content_type, text, truncated, max_bytes)
    raise ToolError(f"too many redirects (more than {MAX_REDIRECTS})")


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
