"""``fetch_url`` (X8): HTTP(S) with the SSRF guard of ``project.netguard`` checked
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
from tasks_app.agents.tools.registry import Tool, ToolError, ToolOutput, register_tool

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
            try:
                address = resolve_public_address(
                    host, port, allow_private=settings.FETCH_URL_ALLOW_PRIVATE
                )
            except UnsafeAddress as exc:
                raise ToolError(str(exc)) from None
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
