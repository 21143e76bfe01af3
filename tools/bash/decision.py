"""What the bash rules say about an analysed line (``decide``), for the ``bash`` permission.

1. **Denied** when any rule denies any candidate of any command: its source text,
   each stage as it is spelled (``env FOO=1 rm -rf x``, ``rm -rf x``), each stage
   with its program's file name (``/bin/rm x`` -> ``rm x``), and each program's
   file name alone (``rm``).
2. **Unknown commands** could be anything: they are denied when the catch-all
   ``evaluate("bash", "*")`` is deny (the config denies what it does not name);
   they run without asking only when no bash rule can deny or ask anything (the
   last catch-all rule and every bash rule after it allow, as under the defaults);
   otherwise they are asked for, with no "always" (see ``unrestricted``).
3. A known command runs without asking when its source text and every stage as
   spelled are allowed (so an allowed ``git`` does not allow ``sudo git`` or
   ``./git``, and ``FOO=1 git`` needs its own rule, as in OpenCode). Otherwise one
   ``bash`` ask lists every command's text, and its "always" patterns are the arity
   prefixes of the source tokens and of every stage (``sudo *``, ``rm *``), so an
   "always" approval covers the whole chain next time.

Known limits (a deny rule names commands, not effects): interpreters run code
of their own (``python -c``, ``perl -e``, ``awk 'BEGIN{system(...)}'``,
``node -e``), as do programs configured to run commands (git aliases and
``-c core.pager=``, make, npm scripts, ``npx``), and a binary copied or linked
under another name in the same line (``cp /bin/rm x && ./x``) is that name.
An allow rule allows all that such a program can do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from tools.bash.commands import Analysis, Effective, unique
from tools.permission.rules import Rule, evaluate, wildcard_match


@dataclass(frozen=True)
class Denial:
    rule: Rule
    command: str  # the command's source text
    matched: str  # the candidate the rule matched; "" for an unknown command
    reason: str = ""  # why an unknown command is unknown


@dataclass
class Decision:
    denial: Denial | None = None
    patterns: list[str] = field(default_factory=list)  # what a bash ask lists
    always: list[str] = field(default_factory=list)  # what an "always" reply allows
    needs_ask: bool = False  # a rule answers ask for some pattern
    force: bool = False  # unknown commands under rules that restrict: ask regardless
    unknown: list[str] = field(default_factory=list)  # why commands are unknown


def is_catch_all(pattern: str) -> bool:
    return bool(pattern) and set(pattern) <= {"*", " "}


def unrestricted(rules: Sequence[Rule]) -> bool:
    """True when no bash rule can deny or ask anything: the last catch-all bash rule
    and every bash rule after it allow (earlier rules can never decide)."""
    last = None
    for index, rule in enumerate(rules):
        if wildcard_match("bash", rule.permission) and is_catch_all(rule.pattern):
            last = index
    if last is None:
        return False  # nothing matches some commands: they ask
    return all(r.action == "allow" for r in rules[last:] if wildcard_match("bash", r.permission))


def decide(analysis: Analysis, rules: Sequence[Rule]) -> Decision:
    """Apply the ``bash`` rules (config, agent and approvals, in order) to a line."""
    commands = [c for c in analysis.commands if not c.is_cd]

    def action(pattern: str) -> Rule:
        return evaluate("bash", pattern, rules)

    for command in commands:
        denial = _denial(command, action)
        if denial is not None and command.unknown and is_catch_all(denial.rule.pattern):
            denial = replace(denial, matched="", reason=command.unknown[0])  # say why
        if denial is not None:
            return Decision(denial=denial)
    unknown = [c for c in commands if c.unknown]
    reasons = unique(r for c in unknown for r in c.unknown)
    if unknown:
        catch_all = action("*")
        if catch_all.action == "deny":
            return Decision(denial=Denial(catch_all, unknown[0].text, "", reasons[0]))
    patterns = [c.text for c in commands]
    needs_ask = False
    for command in commands:
        verdicts = {check: action(check).action for check in command.checks()}
        if any(v != "allow" for v in verdicts.values()):
            needs_ask = True
            if verdicts[command.text] == "allow":  # make the ask show what it is about
                patterns += [check for check, v in verdicts.items() if v != "allow"]
    always = (
        []
        if analysis.parse_error
        else unique(p for c in commands if not c.unknown for p in c.always_patterns())
    )
    return Decision(
        patterns=unique(patterns),
        always=always,
        needs_ask=needs_ask,
        force=bool(unknown) and not unrestricted(rules),
        unknown=reasons,
    )


def _denial(command: Effective, action: Callable[[str], Rule]) -> Denial | None:
    """The first rule that denies the command by any of its spellings.

    Its own text and stages as spelled are denied by any rule, a catch-all too;
    the other spellings (``rm x`` for ``/bin/rm x``, ``rm``) only by rules that
    name something: under ``{"*": "deny", "git status": "allow"}`` the bare ``git``
    must not deny ``git status``.
    """
    own = set(command.checks())
    for candidate in command.deny_checks():
        rule = action(candidate)
        if rule.action == "deny" and (candidate in own or not is_catch_all(rule.pattern)):
            return Denial(rule, command.text, candidate)
    return None
