"""Connecting to a checked address, and copying bytes both ways until both sides are done.

The proxy connects to the addresses the gate returned, never to a name: nothing is
resolved a second time between the check and the connection (DNS rebinding).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence

from tools.network.patterns import IPAddress

CONNECT_SECONDS = 15.0
CHUNK = 256 * 1024

Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]
# Looks at the first bytes a client sends through a tunnel: why to end it, or None.
Inspect = Callable[[bytes], str | None]


class ConnectFailed(OSError):
    """No address could be connected to: what each one said."""


async def connect(addresses: Sequence[IPAddress], port: int) -> Streams:
    """A connection to the first of ``addresses`` that answers."""
    failures: list[str] = []
    for address in addresses:
        try:
            async with asyncio.timeout(CONNECT_SECONDS):
                return await asyncio.open_connection(str(address), port, limit=CHUNK)
        except TimeoutError:
            failures.append(f"{address}: no answer within {CONNECT_SECONDS:g} s")
        except OSError as error:
            failures.append(f"{address}: {error.strerror or error}")
    raise ConnectFailed("; ".join(failures) or "no address")


async def relay(
    client: Streams, upstream: Streams, *, first: bytes = b"", inspect: Inspect | None = None
) -> str | None:
    """Copy client → upstream (``first`` before the rest) and upstream → client until both
    directions end; then close both. Why ``inspect`` ended it, or None."""
    stopped: list[str] = []
    outbound = asyncio.ensure_future(_copy(client[0], upstream[1], first, inspect, stopped))
    inbound = asyncio.ensure_future(_copy(upstream[0], client[1], b"", None, stopped))
    try:
        pending = {outbound, inbound}
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            if inbound in done or stopped or any(t.exception() is not None for t in done):
                break  # the far end is done (or reset, or refused): nothing more comes
    finally:
        for task in (outbound, inbound):
            task.cancel()
        await asyncio.gather(outbound, inbound, return_exceptions=True)
        close(client[1])
        close(upstream[1])
    return stopped[0] if stopped else None


async def _copy(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    first: bytes,
    inspect: Inspect | None,
    stopped: list[str],
) -> None:
    pending = first
    while True:
        data = pending or await reader.read(CHUNK)
        pending = b""
        if not data:
            break
        if inspect is not None:
            why = inspect(data)
            inspect = None
            if why is not None:
                stopped.append(why)
                return
        writer.write(data)
        await writer.drain()
    if writer.can_write_eof():
        with contextlib.suppress(OSError):
            writer.write_eof()  # a half-close: the other way may still be talking


def close(writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError, RuntimeError):
        writer.close()
