"""One call's network decisions: may it reach this destination, at which addresses, and
what it reached and was refused (``metadata.sandbox.network``).

For a destination (a host and a port), in this order, before any name is looked up:

1. a ``sandbox.network.deny`` pattern, or a ``network`` permission rule whose last match
   is ``deny``, refuses it (deny wins);
2. a ``sandbox.network.allow`` pattern, or a ``network`` rule whose last match is
   ``allow`` (a person's "always" answers are such rules), allows it;
3. loopback (``localhost``, 127/8, ::1) is reached only when listed literally, and never
   asked about: through the proxy it is this machine's, not the command's own (a person
   saying yes to "localhost" would open a port of this machine);
4. anything else asks a person: "Allow network access to files.pythonhosted.org for this
   command?". ``once`` allows that host for the rest of the call, ``always`` also keeps a
   ``network`` rule for it (in the session, the project's or the user's config, as every
   "always"), ``reject`` refuses it for the rest of the call. No answer within
   ``ASK_SECONDS``, or a client that cannot ask, refuses it. Asks for one host are
   asked once, however many connections wait on them; past ``MAX_ASKS`` hosts in one
   call, the rest are refused without asking (a command cannot flood the editor).

Then the addresses (``addresses``): the proxy resolves an allowed name itself and keeps
the addresses no address pattern denies and that are public, or that an allow pattern
(or a person's answer) names literally. None left refuses the destination.

A sub-agent's session decides by each of its rule sets: any deny refuses, every one
must allow, else a person is asked.
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tools.errors import PermissionDeniedError, PermissionRejectedError
from tools.network.addresses import ResolveError, is_private, resolve
from tools.network.patterns import (
    BadHost,
    Destination,
    IPAddress,
    Pattern,
    parse_pattern,
    unmapped,
)
from tools.permission.asks import AlwaysOption

if TYPE_CHECKING:
    from tools.context import ToolContext
    from tools.permission.rules import Rule

PERMISSION = "network"
ASK_SECONDS = 120.0  # a person's answer; the connection waits meanwhile
MAX_ASKS = 20  # hosts one call may ask a person about: more are refused unasked
MAX_LOGGED = 200


class Refused(Exception):
    """The destination may not be reached: why, in words for the model and a person."""


@dataclass
class Refusal:
    host: str
    port: int
    reason: str
    by_person: bool = False  # a person said no (or could not be asked), not a rule

    def to_wire(self) -> dict[str, Any]:
        return {"host": self.host, "port": self.port, "reason": self.reason}


@dataclass
class Lists:
    allow: tuple[Pattern, ...] = ()
    deny: tuple[Pattern, ...] = ()
    written: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def parse(cls, allow: Sequence[str], deny: Sequence[str]) -> Lists:
        return cls(
            tuple(_patterns(allow)),
            tuple(_patterns(deny)),
            {"allow": list(allow), "deny": list(deny)},
        )


class Gate:
    """Decides for one call (a bash command, a webfetch), asking its person when needed."""

    def __init__(self, ctx: ToolContext, lists: Lists, *, command: str | None = None) -> None:
        self.ctx = ctx
        self.lists = lists
        self.command = command
        self.what = "command" if command is not None else f"{ctx.tool} call"
        self.answers: dict[str, bool] = {}  # host -> a person's answer for this call
        self.asking: dict[str, asyncio.Future[bool]] = {}
        self.why_not: dict[str, str] = {}  # host -> why the person's answer was no
        self.reached: list[str] = []
        self.refused: list[Refusal] = []

    # ---------------------------------------------------------------- deciding

    async def check(self, destination: Destination) -> None:
        """Return when ``destination`` may be connected to; raise ``Refused``."""
        verdict, why = self.verdict(destination)
        if verdict == "deny":
            raise self.refuse(destination, why)
        if _loopback(destination):
            candidates = [destination.address] if destination.address else LOOPBACK
            if not any(self._listed(a, destination) for a in candidates):
                raise self.refuse(destination, LOOPBACK_WHY.format(port=destination.port))
            return  # listed literally: that is the decision, nobody is asked
        if verdict == "ask" and not await self._answer(destination):
            why = self.why_not.get(destination.host, "not allowed")
            raise self.refuse(destination, why, by_person=True)

    def verdict(self, destination: Destination) -> tuple[str, str]:
        """("allow" | "deny" | "ask", why) from the lists and the rules, asking nobody."""
        denied = next((p for p in self.lists.deny if p.matches(destination)), None)
        if denied is not None:
            return "deny", f"sandbox.network.deny lists {denied.written!r}"
        sides = [self._verdict_by_rules(destination, rules) for rules in self._rule_sides()]
        for action, rule in sides:
            if action == "deny":
                return "deny", f"the rule network {rule!r} denies it"
        if any(p.matches(destination) for p in self.lists.allow):
            return "allow", "sandbox.network.allow"
        if sides and all(action == "allow" for action, _ in sides):
            return "allow", "a network rule"
        return "ask", ""

    def _verdict_by_rules(self, destination: Destination, rules: list[Rule]) -> tuple[str, str]:
        found = ("", "")
        for rule in rules:
            pattern = _pattern(rule.pattern)
            if pattern is not None and pattern.matches(destination):
                found = (rule.action, rule.pattern)
        return found

    def _rule_sides(self) -> list[list[Rule]]:
        return [[r for r in side if r.permission == PERMISSION] for side in self.ctx.rule_sides()]

    async def _answer(self, destination: Destination) -> bool:
        host = destination.host
        if host in self.answers:
            return self.answers[host]
        waiting = self.asking.get(host)
        if waiting is None:
            if len(self.answers) + len(self.asking) >= MAX_ASKS:
                self.why_not[host] = (
                    f"this {self.what} already asked about {MAX_ASKS} hosts; no more are asked"
                )
                return False
            waiting = asyncio.ensure_future(self._ask(destination))
            self.asking[host] = waiting
        try:
            return await asyncio.shield(waiting)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if waiting.cancelled() and (task is None or not task.cancelling()):
                return False  # the ask was withdrawn (the call ended), not this wait
            raise

    async def _ask(self, destination: Destination) -> bool:
        host = destination.host
        options = _always_options(host, destination.address is not None)
        port = "" if destination.port in (80, 443) else f" (port {destination.port})"
        metadata: dict[str, Any] = {
            "host": host,
            "port": destination.port,
            "network": "domain",
        }
        if self.command is not None:
            metadata["command"] = self.command
        title = f"Allow network access to {host}{port} for this {self.what}?"
        try:
            async with asyncio.timeout(ASK_SECONDS):
                await self.ctx.ask(
                    PERMISSION,
                    [host],
                    list(options[0].patterns),
                    metadata,
                    title=title,
                    force=True,
                    always_options=options,
                )
            allowed = True
        except TimeoutError:
            self.why_not[host] = f"nobody answered the ask within {ASK_SECONDS:g} s"
            allowed = False
        except PermissionRejectedError as error:
            self.why_not[host] = _rejected(error)
            allowed = False
        except PermissionDeniedError:
            self.why_not[host] = "a rule denies it"
            allowed = False
        except asyncio.CancelledError:
            self.why_not[host] = f"the {self.what} ended before anyone answered"
            self.asking.pop(host, None)
            raise
        self.answers[host] = allowed
        self.asking.pop(host, None)
        return allowed

    # ---------------------------------------------------------------- addresses

    async def addresses(self, destination: Destination) -> list[IPAddress]:
        """Where to connect for an allowed destination (resolved here, checked after
        resolution); raise ``Refused`` when no address may be reached."""
        if destination.address is not None:
            found = [destination.address]
        else:
            try:
                found = await resolve(destination.host, destination.port)
            except ResolveError as error:
                raise self.refuse(destination, str(error)) from None
        usable: list[IPAddress] = []
        private: list[IPAddress] = []
        for address in found:
            if any(p.names_literally(address, destination.port) for p in self.lists.deny):
                continue
            if is_private(address) and not self._listed(address, destination):
                private.append(address)
                continue
            usable.append(address)
        if usable:
            return usable
        if private:
            shown = ", ".join(str(unmapped(a)) for a in private)
            named = "is" if destination.address is not None else "resolves to"
            raise self.refuse(
                destination,
                f"{destination.host} {named} a private, loopback or link-local address "
                f"({shown}); only an address listed literally in sandbox.network.allow "
                "can be reached there",
            )
        raise self.refuse(destination, "every address it has is denied")

    def _listed(self, address: IPAddress, destination: Destination) -> bool:
        if any(p.names_literally(address, destination.port) for p in self.lists.allow):
            return True
        for side in self._rule_sides():
            for rule in side:
                pattern = _pattern(rule.pattern)
                if (
                    rule.action == "allow"
                    and pattern is not None
                    and pattern.names_literally(address, destination.port)
                ):
                    return True
        # A person asked about this very address said yes.
        return destination.address is not None and self.answers.get(destination.host) is True

    # ---------------------------------------------------------------- the log

    def refuse(self, destination: Destination, reason: str, *, by_person: bool = False) -> Refused:
        self.refusal(destination.host, destination.port, reason, by_person=by_person)
        return Refused(f"network access to {destination.shown} was refused: {reason}")

    def refusal(self, host: str, port: int, reason: str, *, by_person: bool = False) -> None:
        known = any((r.host, r.port, r.reason) == (host, port, reason) for r in self.refused)
        if not known and len(self.refused) < MAX_LOGGED:
            self.refused.append(Refusal(host, port, reason, by_person))

    def connected(self, destination: Destination) -> None:
        if destination.shown not in self.reached and len(self.reached) < MAX_LOGGED:
            self.reached.append(destination.shown)

    def report(self) -> dict[str, Any]:
        """``metadata.sandbox.network``: the lists, what was reached and what refused."""
        return {
            **self.lists.written,
            "reached": list(self.reached),
            "refused": [r.to_wire() for r in self.refused],
        }

    def withdraw(self) -> None:
        """The command is over: asks still open are withdrawn (and count as refused)."""
        for waiting in list(self.asking.values()):
            waiting.cancel()


LOOPBACK = (ipaddress.IPv4Address("127.0.0.1"), ipaddress.IPv6Address("::1"))
LOOPBACK_WHY = (
    "that is the loopback of the machine outside the sandbox, not the command's own; a "
    "server the command started itself is reached without the proxy (curl --noproxy '*', "
    "or NO_PROXY=localhost,127.0.0.1), and one outside is reached only when "
    "sandbox.network.allow lists its address and port (127.0.0.1:{port})"
)


def _loopback(destination: Destination) -> bool:
    """``localhost`` (and names below it), 127.0.0.0/8, ::1: never asked about. A person
    allowing "localhost" would open a port of this machine, not the command's own."""
    if destination.address is not None:
        return unmapped(destination.address).is_loopback
    return destination.host == "localhost" or destination.host.endswith(".localhost")


def _patterns(written: Sequence[str]) -> list[Pattern]:
    return [p for p in (_pattern(w) for w in written) if p is not None]


def _pattern(written: str) -> Pattern | None:
    try:
        return parse_pattern(written)
    except BadHost:
        return None  # the config reader refuses these; a rule's stray pattern matches nothing


def _always_options(host: str, is_address: bool) -> list[AlwaysOption]:
    """What "always" may keep: the host, and for a name of three labels or more, every
    name below its parent (``files.pythonhosted.org`` → ``*.pythonhosted.org``)."""
    options = [AlwaysOption("host", (host,), f"network access to {host}")]
    labels = host.split(".")
    if not is_address and len(labels) >= 3:
        parent = ".".join(labels[1:])
        options.append(
            AlwaysOption(
                "subdomains", (f"*.{parent}",), f"network access to every name below {parent}"
            )
        )
    return options


def _rejected(error: PermissionRejectedError) -> str:
    feedback = error.metadata.get("feedback")
    if feedback:
        return f"the user refused it ({feedback})"
    if "no one could be asked" in error.message:
        return "it is not in sandbox.network.allow, and no one could be asked"
    return "the user refused it"
