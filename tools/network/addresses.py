"""Which addresses are private, and how the proxy resolves a name.

Private here is everything that is not a public internet address: loopback, the private
ranges (10/8, 172.16/12, 192.168/16, fc00::/7), link-local (169.254/16, fe80::/10: cloud
metadata services live there), shared (100.64/10), multicast, reserved and unspecified
ones, and the IPv6 forms that carry one of those IPv4 addresses inside (``::ffff:a.b.c.d``,
NAT64's ``64:ff9b::/96``, 6to4's ``2002::/16``, Teredo). A name that resolves to one of
them is refused even when the name is allowed (a name's owner can point it anywhere:
DNS rebinding); only a pattern naming the address itself opens it (``patterns``).

The documentation ranges (192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32) are
not: no network puts a service of its own there, so a name pointed at one reaches
nothing of anyone's, and some networks do answer for public names from them (a
registry mirror behind a closed network, this project's CI among them).

Names are resolved by the sidecar, never inside the sandbox, and only once a name is
allowed: a lookup of a refused name would itself carry data out (``<secret>.evil.com``).

``TOOLHOST_NETWORK_HOSTS`` (``name=address,name=address``) answers for names under
``.test`` (a top-level domain reserved for testing, so it can never stand for a real host)
from the sidecar's environment, for the tests that have no DNS; a command cannot set it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket

from tools.network.patterns import IPAddress, unmapped

HOSTS_VAR = "TOOLHOST_NETWORK_HOSTS"
TEST_DOMAIN = ".test"

_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_SHARED = ipaddress.ip_network("100.64.0.0/10")
_DOCUMENTATION = tuple(
    ipaddress.ip_network(n)
    for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32")
)


def is_private(address: IPAddress) -> bool:
    """Not a public internet address (see the module doc)."""
    address = unmapped(address)
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None and is_private(embedded):
            return True
    if any(address in network for network in _DOCUMENTATION):
        return False
    return (
        not address.is_global
        or address.is_multicast
        or address.is_reserved
        or address.is_link_local
        or address.is_loopback
        or address.is_unspecified
        or (isinstance(address, ipaddress.IPv4Address) and address in _SHARED)
    )


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    return None


class ResolveError(OSError):
    """A name that could not be resolved, in words."""


async def resolve(name: str, port: int) -> list[IPAddress]:
    """Every address of ``name`` (IPv4 and IPv6, the resolver's order, each once)."""
    if name.endswith(TEST_DOMAIN):
        return _test_addresses(name)
    loop = asyncio.get_running_loop()
    try:
        found = await loop.getaddrinfo(name, port, type=socket.SOCK_STREAM)
    except socket.gaierror as error:
        raise ResolveError(f"{name} could not be resolved ({error.strerror})") from None
    addresses: list[IPAddress] = []
    for _family, _type, _proto, _name, sockaddr in found:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%")[0])
        if address not in addresses:
            addresses.append(address)
    return addresses


def _test_addresses(name: str) -> list[IPAddress]:
    found: list[IPAddress] = []
    for entry in os.environ.get(HOSTS_VAR, "").split(","):
        key, _, value = entry.strip().partition("=")
        if key.strip().lower() == name:
            try:
                found.append(ipaddress.ip_address(value.strip()))
            except ValueError:
                continue
    if not found:
        raise ResolveError(f"{name} could not be resolved (a .test name {HOSTS_VAR} does not list)")
    return found
