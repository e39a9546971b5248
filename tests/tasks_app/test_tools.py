"""The tool registry: knowledge search and read, fetch_url with its SSRF guard (X8)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from tasks_app.runtime.agents.tools import (
    REGISTRY,
    fetch_url,
    html_to_text,
    run_tool,
    tool_definitions,
)
from tests.factories import KnowledgeDocumentFactory

REAL_GETADDRINFO = socket.getaddrinfo


def fake_dns(monkeypatch: pytest.MonkeyPatch, table: dict[str, str]) -> None:
    """Resolve the given host names to fixed addresses (the system resolver otherwise)."""

    def getaddrinfo(host: str, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host in table:
            family = socket.AF_INET6 if ":" in table[host] else socket.AF_INET
            return [(family, socket.SOCK_STREAM, 6, "", (table[host], port or 80))]
        return REAL_GETADDRINFO(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def test_one_registry_offers_the_three_tools() -> None:
    """X8: tools are registered in one registry with JSON-schema definitions."""
    names = [d.name for d in tool_definitions(["search_knowledge", "read_document", "fetch_url"])]
    assert names == ["search_knowledge", "read_document", "fetch_url"]
    assert set(REGISTRY) >= set(names)


@pytest.mark.django_db
def test_search_ranks_the_matching_document_first_and_read_returns_it_whole() -> None:
    """X8: search with ranking (PostgreSQL full-text, or the SQLite fallback); read returns
    the full body, nothing cut."""
    target = KnowledgeDocumentFactory(
        title="Parental Leave",
        body="Parental leave lasts up to three years. "
        + "Filler sentence. " * 5000
        + "Parents may split parental leave between them.",
    )
    KnowledgeDocumentFactory(title="Travel Policy", body="Trains are preferred over flights.")
    KnowledgeDocumentFactory(
        title="Onboarding", body="New starters get a buddy. Leave is explained."
    )

    search = run_tool("search_knowledge", {"query": "How long does parental leave last?"})
    assert not search.is_error
    assert search.payload["hits"][0]["id"] == target.pk
    assert search.content.splitlines()[1] == f"- [doc {target.pk}] Parental Leave"

    read = run_tool("read_document", {"document_id": target.pk})
    assert read.title == "Parental Leave"
    assert read.content.endswith("Parents may split parental leave between them.")
    assert len(read.content) > len(target.body)


@pytest.mark.django_db
def test_search_matches_stems_and_ranks_a_title_match_higher() -> None:
    """X8: 'budgets' finds 'budget' and the title match ranks higher (PostgreSQL's
    full-text ranking, or the stemmed word match on SQLite)."""
    KnowledgeDocumentFactory(title="Canteen", body="The canteen has no budget for dessert.")
    best = KnowledgeDocumentFactory(
        title="Training Budget", body="The training budget is 1,750 EUR."
    )
    result = run_tool("search_knowledge", {"query": "training budgets"})
    hits = result.payload["hits"]
    assert hits[0]["id"] == best.pk and len(hits) == 2
    assert hits[0]["score"] > hits[1]["score"]


@pytest.mark.django_db
def test_search_with_no_match_says_so() -> None:
    KnowledgeDocumentFactory(title="Canteen", body="Lunch is at noon.")
    result = run_tool("search_knowledge", {"query": "submarine cables"})
    assert result.content.startswith("No documents match") and not result.is_error


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]:8000/",
        "http://0.0.0.0/",
    ],
)
def test_fetch_url_refuses_loopback_link_local_and_metadata_addresses(url: str) -> None:
    """X8: private, loopback, link-local and metadata targets are refused."""
    result = run_tool("fetch_url", {"url": url})
    assert result.is_error
    assert "refused" in result.content


def test_fetch_url_refuses_a_hostname_resolving_to_a_private_address(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """X8: the guard applies after DNS resolution; the refusal, which becomes evidence the
    requester reads, does not name the internal address."""
    fake_dns(monkeypatch, {"intranet.example.com": "10.1.2.3"})
    result = run_tool("fetch_url", {"url": "http://intranet.example.com/wiki"})
    assert result.is_error and "refused" in result.content and "10.1.2.3" not in result.content


def test_fetch_url_refuses_a_redirect_to_a_private_address(monkeypatch: pytest.MonkeyPatch) -> None:
    """X8: every redirect hop is resolved and checked before connecting."""
    fake_dns(
        monkeypatch, {"public.example.com": "93.184.216.34", "sneaky.example.com": "192.168.1.5"}
    )
    requested: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requested.append(str(request.url))
        return httpx.Response(302, headers={"Location": "http://sneaky.example.com/admin"})

    with pytest.raises(Exception, match="refused"):
        fetch_url("http://public.example.com/start", transport=httpx.MockTransport(handler))
    # The first hop went to the checked address, with the original Host header; the
    # private hop was never requested.
    assert requested == ["http://93.184.216.34/start"]


def test_fetch_url_refuses_other_schemes() -> None:
    result = run_tool("fetch_url", {"url": "file:///etc/passwd"})
    assert result.is_error and "only http and https" in result.content


def test_fetch_url_pins_each_hop_and_reports_what_went_wrong(
    monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    """X8: a relative redirect is followed to its pinned address (port and IPv6 kept, Host
    header as written); an HTML page served as text/plain still gives its title; a 404
    is an error result; a redirect without Location, a loop, a transport error and a
    slow body each raise with their own message."""
    from tasks_app.runtime.agents.tools.registry import ToolError

    fake_dns(
        monkeypatch, {"public.example.com": "93.184.216.34", "six.example.com": "2606:4700::1"}
    )
    seen: list[tuple[str, str, str]] = []

    def site(request: httpx.Request) -> httpx.Response:
        seen.append((str(request.url), request.headers["Host"], request.extensions["sni_hostname"]))
        if request.url.path == "/start":
            return httpx.Response(302, headers={"Location": "http://six.example.com/next?x=1"})
        if request.url.path == "/next":
            return httpx.Response(301, headers={"Location": "/page"})
        return httpx.Response(
            404,
            content=b"<!DOCTYPE html><title>Gone</title><p>No such page.</p>",
            headers={"Content-Type": "text/plain"},
        )

    result = fetch_url("http://public.example.com:8080/start", transport=httpx.MockTransport(site))
    assert seen == [
        ("http://93.184.216.34:8080/start", "public.example.com:8080", "public.example.com"),
        ("http://[2606:4700::1]/next?x=1", "six.example.com", "six.example.com"),
        ("http://[2606:4700::1]/page", "six.example.com", "six.example.com"),
    ]
    assert result.url == "http://six.example.com/page" and result.title == "Gone"
    assert result.is_error and result.payload == {
        "status": 404,
        "content_type": "text/plain",
        "truncated": False,
    }
    assert result.content == (
        "URL: http://six.example.com/page\nHTTP status: 404\nTitle: Gone\n\nNo such page."
    )

    def no_location(request: httpx.Request) -> httpx.Response:
        return httpx.Response(302)

    with pytest.raises(ToolError, match="redirected without a Location header"):
        fetch_url("http://public.example.com/", transport=httpx.MockTransport(no_location))

    loops: list[str] = []

    def loop(request: httpx.Request) -> httpx.Response:
        loops.append(str(request.url))
        return httpx.Response(302, headers={"Location": "/again"})

    with pytest.raises(ToolError, match=r"too many redirects \(more than 5\)"):
        fetch_url("http://public.example.com/", transport=httpx.MockTransport(loop))
    assert len(loops) == 6

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused")

    with pytest.raises(
        ToolError,
        match="fetching http://public.example.com/x failed: ConnectError: connection refused",
    ):
        fetch_url("http://public.example.com/x", transport=httpx.MockTransport(refuse))

    def slow_body() -> Iterator[bytes]:
        yield b"first"
        time.sleep(0.05)
        yield b"second"

    def slow(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=slow_body())

    settings.FETCH_URL_TIMEOUT_SECONDS = 0.01
    with pytest.raises(ToolError, match="took longer than the time limit"):
        fetch_url("http://public.example.com/slow", transport=httpx.MockTransport(slow))


class _Page(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802
        if self.path == "/big":
            body = b"x" * 50_000
            content_type = "text/plain"
        else:
            body = (
                b"<html><head><title>Harbour news</title><style>p{color:red}</style></head>"
                b"<body><script>alert(1)</script><h1>Ships</h1>"
                b"<p>The ferry leaves at 9.</p></body></html>"
            )
            content_type = "text/html; charset=utf-8"
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def local_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


def test_fetch_url_extracts_text_when_private_targets_are_allowed(
    local_server: str, settings: Any
) -> None:
    """X8: with FETCH_URL_ALLOW_PRIVATE the local page is fetched; HTML becomes text."""
    settings.FETCH_URL_ALLOW_PRIVATE = True
    result = run_tool("fetch_url", {"url": local_server + "/page"})
    assert not result.is_error
    assert result.title == "Harbour news"
    assert "The ferry leaves at 9." in result.content and "Ships" in result.content
    assert "alert(1)" not in result.content and "color:red" not in result.content


def test_fetch_url_stops_reading_at_the_size_limit(local_server: str, settings: Any) -> None:
    """X8: responses over FETCH_URL_MAX_BYTES are cut at the limit, and say so."""
    settings.FETCH_URL_ALLOW_PRIVATE = True
    settings.FETCH_URL_MAX_BYTES = 4096
    result = run_tool("fetch_url", {"url": local_server + "/big"})
    assert result.payload["truncated"] is True
    assert result.content.count("x") == 4096
    assert "only the first 4096 bytes" in result.content


def test_html_to_text_drops_scripts_and_keeps_blocks() -> None:
    title, text = html_to_text("<title>T</title><p>One</p><script>bad()</script><p>Two</p>")
    assert title == "T" and text.splitlines() == ["One", "Two"]


def test_html_to_text_reads_entities_and_tables_and_skips_non_content() -> None:
    """X8, issue 11: the HTML-to-text library renders cells apart and drops noscript,
    templates and inline SVG as well as scripts and styles."""
    title, text = html_to_text(
        "<html><head><title> Fares </title></head><body>"
        "<table><tr><td>Adult</td><td>&euro;4</td></tr><tr><td>Child</td><td>&euro;2</td></tr>"
        "</table><noscript>enable js</noscript><template>tpl</template>"
        "<svg><text>logo</text></svg></body></html>"
    )
    assert title == "Fares"
    assert text.splitlines() == ["Adult €4", "Child €2"]
    assert html_to_text("   ") == ("", "")
