"""The proxy's SOCKS5 side (RFC 1928): ``CONNECT`` only, without authentication.

A TLS ClientHello through a tunnel to a name must carry that name (``http``).
The client names a host (``socks5h://``: the proxy resolves it, under the gate's checks)
or an address (``socks5://``: the client resolved it, which inside the sandbox it cannot,
or it wrote an address): an address is decided as an address, never as the name it may
have come from. ``BIND`` and ``UDP ASSOCIATE`` are refused, and so is SOCKS4.
"""

from __future__ import annotations

import asyncio
import ipaddress

from tools.network.gate import Gate, Refused
from tools.network.http import server_name_check
from tools.network.patterns import BadHost, parse_destination
from tools.network.relay import ConnectFailed, Streams, connect, relay

VERSION = 5
NO_AUTH = 0
CONNECT = 1
# Replies
SUCCEEDED = 0
NOT_ALLOWED = 2
HOST_UNREACHABLE = 4
COMMAND_NOT_SUPPORTED = 7
ADDRESS_NOT_SUPPORTED = 8
SOCKS4_REJECTED = b"\x00\x5b" + bytes(6)


class _Input:
    """The bytes a client sent, read further as the handshake needs them."""

    def __init__(self, initial: bytes, reader: asyncio.StreamReader) -> None:
        self.buffer = bytearray(initial)
        self.reader = reader

    async def take(self, count: int) -> bytes:
        while len(self.buffer) < count:
            data = await self.reader.read(4096)
            if not data:
                raise asyncio.IncompleteReadError(bytes(self.buffer), count)
            self.buffer += data
        taken = bytes(self.buffer[:count])
        del self.buffer[:count]
        return taken


async def serve(initial: bytes, client: Streams, gate: Gate) -> None:
    """One client connection whose first byte was 5."""
    reader, writer = client
    given = _Input(initial, reader)
    try:
        _, count = await given.take(2)
        methods = await given.take(count)
        if NO_AUTH not in methods:
            writer.write(bytes([VERSION, 0xFF]))
            return
        writer.write(bytes([VERSION, NO_AUTH]))
        version, command, _, kind = await given.take(4)
        if version != VERSION:
            return
        if kind == 1:
            host = str(ipaddress.IPv4Address(await given.take(4)))
        elif kind == 4:
            host = str(ipaddress.IPv6Address(await given.take(16)))
        elif kind == 3:
            (length,) = await given.take(1)
            host = (await given.take(length)).decode("ascii", "replace")
        else:
            writer.write(_reply(ADDRESS_NOT_SUPPORTED))
            return
        port = int.from_bytes(await given.take(2), "big")
    except asyncio.IncompleteReadError:
        return
    if command != CONNECT:
        gate.refusal(host, port, "SOCKS5 offers CONNECT only (not BIND or UDP ASSOCIATE)")
        writer.write(_reply(COMMAND_NOT_SUPPORTED))
        return
    try:
        destination = parse_destination(host, port)
    except BadHost as error:
        gate.refusal(host, port, str(error))
        writer.write(_reply(NOT_ALLOWED))
        return
    try:
        await gate.check(destination)
        upstream = await connect(await gate.addresses(destination), destination.port)
    except Refused:
        writer.write(_reply(NOT_ALLOWED))
        return
    except ConnectFailed:
        writer.write(_reply(HOST_UNREACHABLE))
        return
    gate.connected(destination)
    writer.write(_reply(SUCCEEDED))
    inspect = None if destination.address is not None else server_name_check(destination)
    why = await relay(client, upstream, first=bytes(given.buffer), inspect=inspect)
    if why is not None:
        gate.refusal(destination.host, destination.port, why)


def _reply(code: int) -> bytes:
    """A reply with the bound address left as 0.0.0.0:0 (clients do not use it here)."""
    return bytes([VERSION, code, 0, 1]) + bytes(6)
