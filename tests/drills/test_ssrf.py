"""Drill 5 (tool part): ``fetch_url`` refuses internal addresses, in every spelling,
through redirects and through DNS rebinding (X8).

A real HTTP server listens on 127.0.0.1 during the drill: it must never receive a
request. Names are resolved by a stand-in for ``socket.getaddrinfo`` (the system
resolver for everything else); the redirect hops are served by ``httpx.MockTransport``.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from django.test import Client

from project.netguard import address_allowed
from tasks_app.accounts.auth import api_token_create
from tasks_app.models import WebhookEndpoint
from tasks_app.runtime.agents.tools import ToolError, fetch_url, run_tool
from tests.drills.support import report
from tests.factories import UserFactory

pytestmark = [pytest.mark.drill]

REAL_GETADDRINFO = socket.getaddrinfo
PUBLIC = "93.184.216.34"


@pytest.fixture
def canary() -> Iterator[dict[str, Any]]:
    """A loopback server that counts the requests it gets (it must get none)."""
    state: dict[str, Any] = {"hits": 0}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802
            state["hits"] += 1
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"internal secret")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state["port"] = server.server_address[1]
    yield state
    server.shutdown()
    server.server_close()


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[list[str]]]:
    """name -> successive answers (each a list of addresses; the last one repeats)."""
    table: dict[str, list[list[str]]] = {}

    def getaddrinfo(host: str, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host in table:
            answers = table[host]
            addresses = answers.pop(0) if len(answers) > 1 else answers[0]
            return [
                (
                    socket.AF_INET6 if ":" in a else socket.AF_INET,
                    socket.SOCK_STREAM,
                    6,
                    "",
                    (a, port or 80),
                )
                for a in addresses
            ]
        return REAL_GETADDRINFO(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return table


def internal_urls(port: int) -> list[str]:
    return [
        f"http://127.0.0.1:{port}/",
        f"http://127.1:{port}/",
        f"http://2130706433:{port}/",
        f"http://0x7f000001:{port}/",
        f"http://017700000001:{port}/",
        f"http://localhost:{port}/",
        f"http://LOCALHOST.:{port}/",
        f"http://[::1]:{port}/",
        f"http://[::ffff:127.0.0.1]:{port}/",
        f"http://[0:0:0:0:0:ffff:7f00:1]:{port}/",
        f"http://0.0.0.0:{port}/",
        "http://10.0.0.1/",
        "http://172.16.5.4/",
        "http://192.168.1.1/",
        "http://100.64.0.1/",
        "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
        "http://[fe80::1]/",
        "http://[fd00::1]/",
        "http://224.0.0.1/",
        "http://255.255.255.255/",
        f"http://user:pw@127.0.0.1:{port}/",
        f"http://127.0.0.1:{port}#@example.com/",
        "http://metadata.internal.drill/computeMetadata/v1/",
        "http://mixed.drill/",
        "file:///etc/passwd",
        "gopher://127.0.0.1:6379/_INFO",
        "ftp://10.0.0.1/",
    ]


def test_fetch_url_refuses_every_internal_address(canary: dict[str, Any], dns: Any) -> None:
    """X8: loopback, private, shared, link-local (metadata), multicast, unspecified and
    broadcast targets in decimal, hex, octal, short, IPv6 and IPv4-mapped spellings,
    names resolving to them (also when only one of several answers is private), and
    non-HTTP schemes: all refused, and the loopback canary is never contacted."""
    dns["metadata.internal.drill"] = [["169.254.169.254"]]
    dns["mixed.drill"] = [[PUBLIC, "10.1.2.3"]]
    urls = internal_urls(canary["port"])
    accepted = []
    for url in urls:
        result = run_tool("fetch_url", {"url": url})
        if not result.is_error:
            accepted.append(url)
    assert not accepted, accepted
    assert canary["hits"] == 0
    FIGURES["addresses"] = len(urls)


def test_fetch_url_refuses_redirects_to_internal_addresses(
    canary: dict[str, Any], dns: Any
) -> None:
    """X8: every redirect hop is resolved and checked before connecting: absolute,
    scheme-relative and numeric-host redirects to internal targets are refused and
    never requested."""
    dns["public.drill"] = [[PUBLIC]]
    dns["inside.drill"] = [["192.168.10.10"]]
    port = canary["port"]
    targets = [
        f"http://127.0.0.1:{port}/admin",
        f"//127.0.0.1:{port}/scheme-relative",
        "http://inside.drill/admin",
        "http://[::ffff:169.254.169.254]/latest/meta-data/",
        f"http://2130706433:{port}/",
        "file:///etc/passwd",
    ]
    for target in targets:
        requested: list[str] = []

        def handler(
            request: httpx.Request, target: str = target, requested: list[str] = requested
        ) -> httpx.Response:
            requested.append(str(request.url))
            return httpx.Response(302, headers={"Location": target})

        with pytest.raises(ToolError):
            fetch_url("http://public.drill/start", transport=httpx.MockTransport(handler))
        assert requested == [f"http://{PUBLIC}/start"], (target, requested)
    # A chain of public hops that ends inside is refused at the last hop.
    hops = iter(["http://public.drill/2", "http://public.drill/3", "http://inside.drill/"])
    seen: list[str] = []

    def chain(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(301, headers={"Location": next(hops)})

    with pytest.raises(ToolError, match="refused"):
        fetch_url("http://public.drill/1", transport=httpx.MockTransport(chain))
    assert len(seen) == 3 and all(PUBLIC in url for url in seen)
    assert canary["hits"] == 0
    FIGURES["redirects"] = len(targets) + 1


# IPv6 spellings that carry an internal IPv4 address inside: IPv4-compatible (::/96),
# IPv4-translated (::ffff:0:0/96), NAT64 (64:ff9b::/96, 64:ff9b:1::/48), 6to4
# (2002::/16) and Teredo (2001::/32, the client address stored inverted).
EMBEDDED_IPV4 = [
    "::127.0.0.1",
    "::ffff:0:7f00:1",
    "64:ff9b::7f00:1",
    "64:ff9b::a9fe:a9fe",
    "64:ff9b:1::7f00:1",
    "2002:7f00:1::",
    "2002:a9fe:a9fe::1",
    "2001:0:4136:e378:8000:63bf:80ff:fffe",
]


@pytest.mark.parametrize("address", EMBEDDED_IPV4)
def test_ipv6_spellings_that_embed_an_ipv4_address_are_refused(
    address: str, canary: dict[str, Any], db: Any
) -> None:
    """X8: an IPv6 address that embeds an IPv4 address (here loopback or the metadata
    address) is refused by the guard, by fetch_url and by webhook registration."""
    assert not address_allowed(address)
    result = run_tool("fetch_url", {"url": f"http://[{address}]:{canary['port']}/"})
    assert result.is_error and "refused" in result.content, result.content
    assert canary["hits"] == 0
    token = api_token_create(user=UserFactory(username="alice"), name="ssrf")[1]
    response = Client(HTTP_AUTHORIZATION=f"Bearer {token}").post(
        "/api/v1/webhooks", {"url": f"http://[{address}]/hooks"}, content_type="application/json"
    )
    assert response.status_code == 422, response.content
    assert not WebhookEndpoint.objects.exists()


def test_public_ipv6_and_ipv4_addresses_stay_allowed() -> None:
    assert address_allowed("2606:4700:4700::1111")
    assert address_allowed(PUBLIC)
    assert address_allowed(f"::ffff:{PUBLIC}")


def test_fetch_url_is_not_fooled_by_dns_rebinding(dns: Any) -> None:
    """X8: the name is resolved once per hop and the connection goes to that checked
    address (Host header kept): a resolver that answers public first and private
    afterwards never gets the private answer used; one that answers private first is
    refused."""
    dns["rebind.drill"] = [[PUBLIC], ["127.0.0.1"], ["127.0.0.1"]]
    connected: list[tuple[str, str]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        connected.append((request.url.host, request.headers["Host"]))
        return httpx.Response(200, text="public page", headers={"Content-Type": "text/plain"})

    result = fetch_url("http://rebind.drill/page", transport=httpx.MockTransport(handler))
    assert not result.is_error and connected == [(PUBLIC, "rebind.drill")]

    dns["rebind2.drill"] = [["10.0.0.7"], [PUBLIC]]
    with pytest.raises(ToolError, match="refused"):
        fetch_url("http://rebind2.drill/", transport=httpx.MockTransport(handler))
    assert len(connected) == 1
    report(
        "ssrf",
        f"{FIGURES.get('addresses', '?')} internal addresses/schemes refused, "
        f"{FIGURES.get('redirects', '?')} internal redirects refused before the hop, "
        "DNS rebinding pinned to the checked address; 0 requests reached the loopback canary",
    )


FIGURES: dict[str, int] = {}
