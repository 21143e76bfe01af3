"""``initializationOptions``, typed, with a default for every missing or bad field.

A wrong field never fails ``initialize``: it is reported as a problem (logged by
the server) and replaced by its default.  The config is the exception to "use the
default": an invalid config falls back to ``fail_closed_config``, which is never
more permissive than what the user wrote, because the default config allows edits
and commands without asking.

The server reads ``config`` again with every config file (``tools.config.files``),
which reports it and fails closed when it is invalid, keeping what could still be
read from it (its denies, the tools it switches off: ``tools.config.salvage``), so a
typo next to a deny never lifts the deny.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from server.params import json_type, model_from_wire
from tools.config.effective import Config
from tools.config.opencode import config_from_opencode
from tools.model import ModelRef
from tools.permission.rules import Rule, Ruleset, rules_from_config

# initializationOptions.editor: the client requests a client says it answers.
EDITOR_FLAGS = (
    "permissionAsk",
    "applyEdit",
    "diagnostics",
    "openDocument",
    "lsp",
    "task",
    "question",
)

# initializationOptions.diagnostics.waitMs: how long an edit waits for the editor's
# language servers to report on the changed file.
DEFAULT_DIAGNOSTICS_WAIT_MS = 3000
MAX_DIAGNOSTICS_WAIT_MS = 60_000

# What an invalid config falls back to: anything that changes files, runs commands or
# reaches the network asks first.
FAIL_CLOSED_RULES = {"edit": "ask", "bash": "ask", "webfetch": "ask"}


@dataclass(frozen=True)
class InitOptions:
    session_id: str | None = None
    agent: str = "build"
    model: ModelRef | None = None
    config: Config = field(default_factory=Config)
    editor: frozenset[str] = frozenset()
    diagnostics_wait_ms: int = DEFAULT_DIAGNOSTICS_WAIT_MS
    config_error: str | None = None  # set when the config was invalid and fell back
    # permissionDefaults: the editor's rules, beneath every config file (review by default)
    permission_defaults: tuple[Rule, ...] = ()
    # initializationOptions.config as sent (load_config reads it with the files)
    raw_config: Any = field(default=None, hash=False)
    # The editor's word on the folder (VS Code workspace trust, Neovim vim.secure);
    # None: it said nothing, and tools.permission.trust decides.
    trusted: bool | None = None
    # The attach token (docs/protocol.md, "Attach"); checked by server.sockets before
    # this is parsed, kept so it is not reported as unknown.
    token: str | None = field(default=None, repr=False)


def parse_options(raw: Any) -> tuple[InitOptions, list[str]]:
    """The options, and one line per problem found (for the log)."""
    problems: list[str] = []
    if raw is None:
        return InitOptions(), problems
    if not isinstance(raw, Mapping):
        problems.append(f"initializationOptions must be an object, got {json_type(raw)}; ignored")
        return InitOptions(), problems

    def string(name: str) -> str | None:
        value = raw.get(name)
        if value is not None and not isinstance(value, str):
            problems.append(
                f"initializationOptions.{name} must be a string, got {json_type(value)}"
            )
            return None
        return value

    model = None
    if raw.get("model") is not None:
        try:
            model = model_from_wire(raw["model"])
        except ValueError as error:
            problems.append(f"initializationOptions.model {error}; no default model")
    config, config_error = parse_config(raw.get("config"))
    if config_error:
        problems.append(config_error)
    return (
        InitOptions(
            session_id=string("sessionID"),
            agent=string("agent") or "build",
            model=model,
            config=config,
            editor=parse_editor_flags(raw.get("editor"), problems),
            diagnostics_wait_ms=parse_diagnostics_wait(raw.get("diagnostics"), problems),
            config_error=config_error,
            raw_config=raw.get("config"),
            trusted=parse_trusted(raw.get("trusted"), problems),
            token=string("token"),
            permission_defaults=parse_permission_defaults(raw.get("permissionDefaults"), problems),
        ),
        problems,
    )


def parse_trusted(value: Any, problems: list[str]) -> bool | None:
    """``trusted``: true or false; anything else counts as not trusted (and is reported)."""
    if value is None or isinstance(value, bool):
        return value
    problems.append(
        f"initializationOptions.trusted must be true or false, got {json_type(value)}; "
        "the folder is treated as not trusted"
    )
    return False


def parse_permission_defaults(raw: Any, problems: list[str]) -> tuple[Rule, ...]:
    """``permissionDefaults``: rules in OpenCode's ``permission`` format.

    An invalid entry is reported and read as ``ask`` (never more permissive than
    what was meant), like an invalid config.
    """
    if raw is None:
        return ()
    if not isinstance(raw, str | Mapping):
        problems.append(
            "initializationOptions.permissionDefaults must be an action or an object of "
            f"permission rules, got {json_type(raw)}; every permission asks instead"
        )
        return tuple(rules_from_config({"*": "ask"}))
    try:
        return tuple(rules_from_config(raw))
    except ValueError as error:
        problems.append(
            f"initializationOptions.permissionDefaults is invalid ({error}); "
            "what cannot be read asks instead"
        )
        return tuple(_readable_rules(raw))


def parse_editor_flags(raw: Any, problems: list[str]) -> frozenset[str]:
    if raw is None:
        return frozenset()
    if not isinstance(raw, Mapping):
        problems.append(f"initializationOptions.editor must be an object, got {json_type(raw)}")
        return frozenset()
    flags = set()
    for name, value in raw.items():
        if name not in EDITOR_FLAGS:
            problems.append(f"initializationOptions.editor.{name} is not a known flag; ignored")
        elif not isinstance(value, bool):
            problems.append(
                f"initializationOptions.editor.{name} must be true or false, "
                f"got {json_type(value)}; taken as false"
            )
        elif value:
            flags.add(name)
    return frozenset(flags)


def parse_diagnostics_wait(section: Any, problems: list[str]) -> int:
    """``diagnostics.waitMs``: a number of milliseconds >= 0, capped; else the default."""
    value = section.get("waitMs") if isinstance(section, Mapping) else None
    if value is None:
        return DEFAULT_DIAGNOSTICS_WAIT_MS
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        problems.append(
            "initializationOptions.diagnostics.waitMs must be a number >= 0, "
            f"got {json_type(value)}; using {DEFAULT_DIAGNOSTICS_WAIT_MS}"
        )
        return DEFAULT_DIAGNOSTICS_WAIT_MS
    return int(min(value, MAX_DIAGNOSTICS_WAIT_MS))


def parse_config(raw: Any) -> tuple[Config, str | None]:
    """The config, or the fail-closed one and a message saying why."""
    if raw is None:
        return Config(), None
    try:
        if not isinstance(raw, Mapping):
            raise ValueError(f"it must be an object, got {json_type(raw)}")
        return config_from_opencode(raw), None
    except Exception as error:  # a wrong shape can surface as any error, not only ConfigError
        message = (
            f"initializationOptions.config is invalid ({error}); until it is fixed, edits, "
            "commands and fetches ask for permission first"
        )
        return fail_closed_config(raw), message


def fail_closed_config(raw: Any) -> Config:
    """A stand-in for an invalid config that is never more permissive than it.

    Tools it switches off stay off (any value but ``true`` counts as off), the
    permission entries that can be read are kept and an unreadable action becomes
    ``ask``; then edit, bash and webfetch ask, and the deny rules are repeated last
    so that nothing those asks add can override a deny.
    """
    data = raw if isinstance(raw, Mapping) else {}
    rules = _readable_rules(data.get("permission"))
    denies = [rule for rule in rules if rule.action == "deny"]
    return Config(
        enabled=_switched_off(data),
        rules=[*rules, *rules_from_config(FAIL_CLOSED_RULES), *denies],
    )


def _switched_off(data: Mapping[str, Any]) -> dict[str, bool]:
    tools = data.get("tools")
    if not isinstance(tools, Mapping):
        return {}
    return {str(tool_id): False for tool_id, on in tools.items() if on is not True}


def _readable_rules(permission: Any) -> Ruleset:
    if isinstance(permission, str):
        return _rules_or_ask({"*": permission})
    if not isinstance(permission, Mapping):
        return []
    rules: Ruleset = []
    for name, value in permission.items():
        if isinstance(value, Mapping):
            for pattern, action in value.items():
                rules.extend(_rules_or_ask({str(name): {str(pattern): action}}))
        else:
            rules.extend(_rules_or_ask({str(name): value}))
    return rules


def _rules_or_ask(entry: dict[str, Any]) -> Ruleset:
    try:
        return rules_from_config(entry)
    except ValueError:
        ((name, value),) = entry.items()
        pattern = next(iter(value)) if isinstance(value, Mapping) else "*"
        return rules_from_config({name: {pattern: "ask"}})
