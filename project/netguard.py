"""The SSRF guard shared by everything that makes outgoing HTTP requests to addresses
people or models chose (``fetch_url``, webhook deliveries).

A host is resolved first and every address it resolves to must be public: private,
loopback, link-local (169.254.169.254, the cloud metadata address), shared, reserved,
unspecified, documentation and multicast ranges are refused, in every spelling
(IPv4-mapped IPv6 included). IPv6 ranges that carry an IPv4 address inside (IPv4-
compatible ``::/96``, IPv4-translated ``::ffff:0:0:0/96``, NAT64 ``64:ff9b::/96`` and
``64:ff9b:1::/48``, 6to4 ``2002::/16``, Teredo ``2001::/32``) are refused whatever the
address they carry: a gateway may deliver them to it. Callers connect to the address
returned here, so a DNS answer that changes between check and connect (rebinding)
cannot slip through. A refusal does not name the address (it reaches the requester, who
could map internal DNS with it); a WARNING log line does, for operators.
"""

from __future__ import annotations

import ipaddress
import logging
import socket

log = logging.getLogger(__name__)


class UnsafeAddress(Exception):
    """The host cannot be resolved or resolves to a non-public address."""


# IPv6 prefixes whose addresses embed an IPv4 address (RFC 4291, 2765, 6052, 8215, 3056,
# 4380). ``::ffff:0:0/96`` (IPv4-mapped) is not here: it is unwrapped and judged as IPv4.
EMBEDDING_IPV4 = tuple(
    ipaddress.IPv6Network(prefix)
    for prefix in (
        "::/96",
        "::ffff:0:0:0/96",
        "64:ff9b::/96",
        "64:ff9b:1::/48",
        "2002::/16",
        "2001::/32",
    )
)


def address_allowed(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        elif any(ip in network for network in EMBEDDING_IPV4):
            return False
    # is_global is False for private, loopback, link-local, shared (100.64/10), reserved,
    # unspecified and documentation ranges.
    return ip.is_global and not ip.is_multicast


def resolve_public_address(host: str, port: int, *, allow_private: bool = False) -> str:
    """Resolve ``host`` and return an address to connect to; raise ``UnsafeAddress`` when
    it does not resolve or any resolved address is not public (unless ``allow_private``)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise UnsafeAddress(f"cannot resolve host '{host}': {exc}") from None
    addresses = [str(info[4][0]) for info in infos]
    if not addresses:
        raise UnsafeAddress(f"cannot resolve host '{host}'")
    if not allow_private:
        refused = [a for a in addresses if not address_allowed(a)]
        if refused:
            # The address stays out of the message, which reaches the requester: naming
            # it would let anyone map internal DNS. Operators find it in the log.
            log.warning("refused %r: it resolves to non-public address %s", host, refused[0])
            raise UnsafeAddress(
                f"refused: the URL's host '{host}' is not allowed (it does not resolve to "
                "public addresses only)"
            )
    return addresses[0]
