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
from tools.network.relay import Conn, ConnectFailed, connect, relay

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


async def serve(client: Conn, gate: Gate) -> None:
    """One client connection whose first byte was 5."""
    try:
        _, count = await client.read_exactly(2)
        methods = await client.read_exactly(count)
        if NO_AUTH not in methods:
            await client.write(bytes([VERSION, 0xFF]))
            return
        await client.write(bytes([VERSION, NO_AUTH]))
        version, command, _, kind = await client.read_exactly(4)
        if version != VERSION:
            return
        if kind == 1:
            host = str(ipaddress.IPv4Address(await client.read_exactly(4)))
        elif kind == 4:
            host = str(ipaddress.IPv6Address(await client.read_exactly(16)))
        elif kind == 3:
            (length,) = await client.read_exactly(1)
            host = (await client.read_exactly(length)).decode("ascii", "replace")
        else:
            await client.write(_reply(ADDRESS_NOT_SUPPORTED))
            return
        port = int.from_bytes(await client.read_exactly(2), "big")
    except asyncio.IncompleteReadError:
        return
    if command != CONNECT:
        gate.refusal(host, port, "SOCKS5 offers CONNECT only (not BIND or UDP ASSOCIATE)")
        await client.write(_reply(COMMAND_NOT_SUPPORTED))
        return
    try:
        destination = parse_destination(host, port)
    except BadHost as error:
        gate.refusal(host, port, str(error))
        await client.write(_reply(NOT_ALLOWED))
        return
    try:
        await gate.check(destination)
        upstream = await connect(await gate.addresses(destination), destination.port)
    except Refused:
        await client.write(_reply(NOT_ALLOWED))
        return
    except ConnectFailed:
        await client.write(_reply(HOST_UNREACHABLE))
        return
    gate.connected(destination)
    await client.write(_reply(SUCCEEDED))
    inspect = None if destination.address is not None else server_name_check(destination)
    why = await relay(client, upstream, inspect=inspect)
    if why is not None:
        gate.refusal(destination.host, destination.port, why)


def _reply(code: int) -> bytes:
    """A reply with the bound address left as 0.0.0.0:0 (clients do not use it here)."""
    return bytes([VERSION, code, 0, 1]) + bytes(6)
