"""The proxy's HTTP side: ``CONNECT host:port`` tunnels, and plain ``GET http://host/…``
requests forwarded one per connection.

The request's head is read with h11 (a strict HTTP/1.1 parser). What the gate decides
on is the target the proxy will connect to, and nothing else may name another host:

- a ``Host`` header that names another host or port than the target is refused (a
  proxy that checked one and connected to the other could be steered around its list);
- a TLS ClientHello sent through a tunnel to a name must carry that name as its server
  name (SNI), or the tunnel is closed before a byte reaches the far end;
- a plain request is forwarded with ``Connection: close``, its body framed by h11, and
  nothing the client sends after it is read: a second request on the same connection
  (to another host, or the same host with another ``Host``) never leaves;
- ``https://`` targets without CONNECT are refused (the proxy does not speak TLS).
"""

from __future__ import annotations

import contextlib
import hmac
from urllib.parse import urlsplit

import h11

from tools.network.gate import Gate, Refused
from tools.network.patterns import BadHost, Destination, normal_name, parse_authority
from tools.network.relay import Conn, ConnectFailed, Inspect, connect, relay, send_back

MAX_HEAD = 64 * 1024
# Hop-by-hop headers (RFC 9110 §7.6.1) and what this proxy handles itself.
_DROPPED = frozenset(
    {
        b"connection",
        b"proxy-connection",
        b"keep-alive",
        b"proxy-authorization",
        b"proxy-authenticate",
        b"te",
        b"trailer",
        b"upgrade",
        b"expect",
    }
)
ESTABLISHED = b"HTTP/1.1 200 Connection established\r\n\r\n"


class BadRequest(Exception):
    """The client's request cannot be served as it is: why, for its output."""


async def serve(client: Conn, gate: Gate, auth: str | None = None) -> None:
    """One client connection (not a SOCKS greeting)."""
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
    try:
        request = await _request(conn, client)
        if request is None:
            return
        if auth is not None and not _authorized(request, auth):
            await respond(client, 407, "Proxy Authentication Required", "toolhost: who are you?")
            return
        if request.method == b"CONNECT":
            await _tunnel(conn, request, client, gate)
        else:
            await _forward(conn, request, client, gate)
    except (h11.RemoteProtocolError, BadRequest, BadHost) as error:
        await respond(client, 400, "Bad Request", f"toolhost's proxy: {error}")
    except Refused as refused:
        await respond(client, 403, "Forbidden", f"toolhost: {refused}")
    except ConnectFailed as failed:
        await respond(client, 502, "Bad Gateway", f"toolhost's proxy could not connect: {failed}")


async def _request(conn: h11.Connection, client: Conn) -> h11.Request | None:
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(await client.read(MAX_HEAD))  # b"": the client closed
            continue
        if isinstance(event, h11.Request):
            return event
        return None  # the client closed before a whole request


async def _tunnel(conn: h11.Connection, request: h11.Request, client: Conn, gate: Gate) -> None:
    destination = _destination(gate, _text(request.target))
    _same_host(request, destination, gate, default_port=destination.port)
    await gate.check(destination)
    upstream = await connect(await gate.addresses(destination), destination.port)
    gate.connected(destination)
    await client.write(ESTABLISHED)
    leftover, _ = conn.trailing_data
    inspect = None if destination.address is not None else server_name_check(destination)
    why = await relay(client, upstream, first=bytes(leftover), inspect=inspect)
    if why is not None:
        gate.refusal(destination.host, destination.port, why)


async def _forward(conn: h11.Connection, request: h11.Request, client: Conn, gate: Gate) -> None:
    target = _text(request.target)
    if target.lower().startswith("https://"):
        raise BadRequest("an https:// URL goes through CONNECT; this proxy does not speak TLS")
    if not target.lower().startswith("http://"):
        raise BadRequest(f"{target!r}: a proxy request names the whole http:// URL")
    parts = urlsplit(target)
    if "@" in parts.netloc:
        raise BadRequest("a URL with a user name or password is not forwarded")
    destination = _destination(gate, parts.netloc, default_port=80)
    _same_host(request, destination, gate, default_port=80)
    await gate.check(destination)
    upstream = await connect(await gate.addresses(destination), destination.port)
    gate.connected(destination)
    try:
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        outgoing = h11.Connection(h11.CLIENT)
        await upstream.write(outgoing.send(_upstream_request(request, path, parts.netloc)) or b"")
        if conn.they_are_waiting_for_100_continue:
            go_on = h11.InformationalResponse(status_code=100, headers=[])
            await client.write(conn.send(go_on) or b"")
        await _body(conn, outgoing, client, upstream)
        await send_back(upstream, client, _closing, MAX_HEAD)  # the answer, as it comes
    finally:
        upstream.close()


def _destination(gate: Gate, authority: str, default_port: int | None = None) -> Destination:
    """The target a request names; one that is not a valid host is refused (and logged)."""
    try:
        return parse_authority(authority, default_port)
    except BadHost as error:
        host, _, port = authority.rpartition(":")
        gate.refusal(host or authority, int(port) if port.isdigit() else 0, str(error))
        raise BadRequest(str(error)) from None


def _upstream_request(request: h11.Request, path: str, authority: str) -> h11.Request:
    named = {
        token.strip().lower()
        for name, value in request.headers
        if name == b"connection"
        for token in value.split(b",")
    }
    headers = [
        (name, value)
        for name, value in request.headers
        if name not in _DROPPED and name not in named
    ]
    if not any(name == b"host" for name, _ in headers):  # it was checked to name the target
        headers.insert(0, (b"host", authority.encode("ascii")))
    headers.append((b"connection", b"close"))
    return h11.Request(method=request.method, target=path.encode("ascii"), headers=headers)


async def _body(
    conn: h11.Connection, outgoing: h11.Connection, client: Conn, upstream: Conn
) -> None:
    """The request's body, as h11 frames it; nothing after it is read."""
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            data = await client.read(MAX_HEAD)
            if not data:
                raise BadRequest("the client closed before the end of its request")
            conn.receive_data(data)
        elif isinstance(event, h11.Data):
            await upstream.write(outgoing.send(h11.Data(data=event.data)) or b"")
        elif isinstance(event, h11.EndOfMessage):
            await upstream.write(outgoing.send(h11.EndOfMessage()) or b"")
            return
        else:
            raise BadRequest("an unexpected part of a request")


def _closing(head: bytes) -> bytes:
    """A response head with ``Connection: close`` (the proxy serves one request)."""
    if not head.endswith(b"\r\n\r\n"):
        return head
    lines = head[:-4].split(b"\r\n")
    kept = [
        line
        for line in lines[1:]
        if line.split(b":", 1)[0].strip().lower() not in (b"connection", b"keep-alive")
    ]
    return b"\r\n".join([lines[0], *kept, b"Connection: close"]) + b"\r\n\r\n"


def _same_host(
    request: h11.Request, destination: Destination, gate: Gate, *, default_port: int
) -> None:
    """A ``Host`` header must name the target itself."""
    hosts = [value for name, value in request.headers if name == b"host"]
    for value in hosts:
        try:
            named = parse_authority(_text(value), default_port=default_port)
        except BadHost:
            named = None
        if named is None or (named.host, named.port) != (destination.host, destination.port):
            why = (
                f"the Host header ({_text(value)}) names another host than the request's "
                f"target ({destination.shown})"
            )
            gate.refusal(destination.host, destination.port, why)
            raise BadRequest(why)


def server_name_check(destination: Destination) -> Inspect:
    def check(first: bytes) -> str | None:
        name = client_hello_name(first)
        if name is None:
            return None
        try:
            same = normal_name(name, name) == destination.host
        except BadHost:
            same = False
        if same:
            return None
        return (
            f"the TLS server name ({name}) is not the host the tunnel was opened to "
            f"({destination.host})"
        )

    return check


def client_hello_name(data: bytes) -> str | None:
    """The server name (SNI) of a TLS ClientHello at the start of ``data``, or None."""
    try:
        if data[0] != 0x16 or data[1] != 3:
            return None
        record = data[5 : 5 + int.from_bytes(data[3:5], "big")]
        if record[0] != 1:
            return None
        hello = record[4 : 4 + int.from_bytes(record[1:4], "big")]
        at = 2 + 32  # version, random
        at += 1 + hello[at]  # session id
        at += 2 + int.from_bytes(hello[at : at + 2], "big")  # cipher suites
        at += 1 + hello[at]  # compression methods
        end = at + 2 + int.from_bytes(hello[at : at + 2], "big")
        at += 2
        while at + 4 <= end:
            kind = int.from_bytes(hello[at : at + 2], "big")
            size = int.from_bytes(hello[at + 2 : at + 4], "big")
            at += 4
            if kind == 0:  # server_name: a list of (type, length, name)
                names = hello[at : at + size]
                place = 2
                while place + 3 <= len(names):
                    length = int.from_bytes(names[place + 1 : place + 3], "big")
                    if names[place] == 0:
                        return names[place + 3 : place + 3 + length].decode("ascii", "replace")
                    place += 3 + length
                return None
            at += size
    except IndexError:
        return None
    return None


def _authorized(request: h11.Request, expected: str) -> bool:
    given = [value for name, value in request.headers if name == b"proxy-authorization"]
    return len(given) == 1 and hmac.compare_digest(given[0], expected.encode())


def _text(value: bytes) -> str:
    try:
        return value.decode("ascii")
    except UnicodeDecodeError:
        raise BadRequest("a request line or Host header that is not ASCII") from None


async def respond(client: Conn, status: int, reason: str, message: str) -> None:
    """A short plain-text answer, then the connection ends."""
    body = (message + "\n").encode()
    extra = b'Proxy-Authenticate: Basic realm="toolhost"\r\n' if status == 407 else b""
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\nX-Toolhost-Refused: {status}\r\n"
    ).encode()
    with contextlib.suppress(OSError):
        await client.write(head + extra + b"\r\n" + body)
