"""The syntax of ``sandbox.network``'s lists and of ``network`` permission rules, and the
destinations they are matched against.

A pattern is one of:

- ``pypi.org``: that host name, any port;
- ``*.npmjs.org``: every name below ``npmjs.org`` (``registry.npmjs.org``, ``a.b.npmjs.org``),
  not ``npmjs.org`` itself;
- ``github.com:443``: that name on port 443 only (``*.x:443`` likewise);
- ``*``: every destination;
- an address written literally, ``10.0.0.5``, ``10.0.0.5:5432``, ``::1``, ``[::1]:8080``, or
  ``localhost``: the only way to reach a private, link-local or loopback address
  (``tools.network.addresses``).

Names are compared lower-case, without a trailing dot, in their ASCII (IDNA) form. A
destination whose host is neither a valid name nor an address in its usual spelling is
refused before anything else: ``127.1``, ``2130706433`` or ``0x7f.0.0.1`` would otherwise be
read by a resolver as 127.0.0.1 while matching no address rule.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

MAX_NAME = 253
_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")


class BadHost(ValueError):
    """A host or pattern that cannot be read; the message says why, for a person."""


@dataclass(frozen=True)
class Destination:
    """Where a client asked to connect: a normalised name or an address, and a port."""

    host: str  # a lower-case ASCII name, or the address's text
    port: int
    address: IPAddress | None = None  # when the client named an address

    @property
    def shown(self) -> str:
        """``pypi.org:443``, ``[::1]:80``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


@dataclass(frozen=True)
class Pattern:
    written: str
    host: str  # "" for "*"
    subdomains: bool = False  # "*.x"
    port: int | None = None
    address: IPAddress | None = None

    @property
    def everything(self) -> bool:
        return not self.host and self.address is None

    def matches(self, destination: Destination) -> bool:
        if self.port is not None and self.port != destination.port:
            return False
        if self.everything:
            return True
        if self.address is not None:
            return destination.address is not None and same_address(
                self.address, destination.address
            )
        if destination.address is not None:
            return False
        if self.subdomains:
            return destination.host.endswith("." + self.host)
        return destination.host == self.host

    def names_literally(self, address: IPAddress, port: int) -> bool:
        """This pattern lists ``address`` (or, as ``localhost``, a loopback address)
        itself, not through a wildcard: what lets a private address be reached."""
        if self.port is not None and self.port != port:
            return False
        if self.address is not None:
            return same_address(self.address, address)
        return self.host == "localhost" and not self.subdomains and unmapped(address).is_loopback


def parse_pattern(text: str) -> Pattern:
    """A pattern as written in a config file or a rule; raises ``BadHost``."""
    written = text
    text = text.strip()
    if text == "*":
        return Pattern(written, "")
    host, port = _split_port(text, what="pattern")
    subdomains = host.startswith("*.")
    if subdomains:
        host = host[2:]
    if "*" in host:
        raise BadHost(
            f"{written!r}: a wildcard may only start a pattern, as `*.example.com`, or be `*`"
        )
    address = _address(host)
    if address is not None:
        if subdomains:
            raise BadHost(f"{written!r}: an address cannot have a wildcard")
        return Pattern(written, str(unmapped(address)), port=port, address=unmapped(address))
    return Pattern(written, normal_name(host, written), subdomains, port)


def parse_destination(host: str, port: int) -> Destination:
    """What a client named (CONNECT's authority, a URL's host, SOCKS5's address)."""
    if not 0 < port < 65536:
        raise BadHost(f"port {port} is not a port")
    host = host.strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    address = _address(host)
    if address is not None:
        return Destination(str(unmapped(address)), port, unmapped(address))
    return Destination(normal_name(host, host), port)


def parse_authority(authority: str, default_port: int | None = None) -> Destination:
    """``host:port`` (CONNECT's target, a Host header); ``default_port`` where it may be
    left out."""
    host, port = _split_port(authority.strip(), what="address")
    if port is None:
        if default_port is None:
            raise BadHost(f"{authority!r} has no port")
        port = default_port
    return parse_destination(host, port)


def normal_name(host: str, written: str) -> str:
    """A host name in the form rules compare: lower-case ASCII, no trailing dot."""
    name = host.rstrip(".") if host.endswith(".") and not host.endswith("..") else host
    try:
        ascii_name = name.encode("idna").decode("ascii") if not name.isascii() else name
    except UnicodeError as error:
        raise BadHost(f"{written!r} is not a valid host name ({error})") from None
    ascii_name = ascii_name.lower()
    labels = ascii_name.split(".")
    if not ascii_name or len(ascii_name) > MAX_NAME or not all(_LABEL.match(x) for x in labels):
        raise BadHost(f"{written!r} is not a valid host name")
    if labels[-1].isdigit() or re.fullmatch(r"0x[0-9a-f]*", labels[-1]):
        # "127.1", "2130706433", "0x7f": a resolver reads these as addresses.
        raise BadHost(f"{written!r} is not a valid host name (an address in an unusual spelling?)")
    return ascii_name


def unmapped(address: IPAddress) -> IPAddress:
    """``::ffff:10.0.0.1`` is ``10.0.0.1``: the same host, reached the same way."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def same_address(a: IPAddress, b: IPAddress) -> bool:
    return unmapped(a) == unmapped(b)


def _address(host: str) -> IPAddress | None:
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if "%" in host:  # a zone (fe80::1%eth0) names an interface of this machine
        raise BadHost(f"{host!r}: an address with a zone cannot be reached through the proxy")
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _split_port(text: str, *, what: str) -> tuple[str, int | None]:
    """``host:port`` → (host, port); IPv6 with a port must be bracketed (``[::1]:80``)."""
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise BadHost(f"{text!r}: an unclosed [")
        host, rest = text[: end + 1], text[end + 1 :]
        if not rest:
            return host, None
        if not rest.startswith(":"):
            raise BadHost(f"{text!r}: expected :port after ]")
        return host, _port(rest[1:], text)
    if text.count(":") == 1:
        host, _, port = text.partition(":")
        return host, _port(port, text)
    return text, None  # a name, or an IPv6 address without a port


def _port(text: str, written: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise BadHost(f"{written!r}: {text!r} is not a port (1-65535)")
    return int(text)
