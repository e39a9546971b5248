"""The SSRF guard shared by everything that makes outgoing HTTP requests to addresses
people or models chose (``fetch_url``, webhook deliveries).

A host is resolved first and every address it resolves to must be public: private,
loopback, link-local (169.254.169.254, the cloud metadata address), shared, reserved,
unspecified, documentation and multicast ranges are refused, in every spelling
(IPv4-mapped IPv6 included). Callers connect to the address returned here, so a DNS
answer that changes between check and connect (rebinding) cannot slip through.
"""

from __future__ import annotations

import ipaddress
import socket


class UnsafeAddress(Exception):
    """The host cannot be resolved or resolves to a non-public address."""


def address_allowed(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
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
            raise UnsafeAddress(
                f"refused: '{host}' resolves to a private, loopback, link-local or otherwise "
                f"non-public address ({refused[0]})"
            )
    return addresses[0]
