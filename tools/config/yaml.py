"""The YAML tool registry (``tools.yaml``), the format in our users' docs.

```yaml
tools:
  - name: "bash"
    type: "builtin"          # builtin | custom
    enabled: true
    permissions:
      allowed_commands: ["npm", "git"]
      denied_commands: ["rm", "sudo"]
      allowed_dirs: ["~/projects"]
    sandbox:                 # bash only: see README, "The sandbox"
      mode: "auto"           # auto | required | off
      network: "deny"        # allow | deny | {allow: [pypi.org, "*.npmjs.org"], deny: [...]}
      writable: ["~/data"]   # more directories commands may write
```

Validation is strict (unknown keys and wrong types are errors naming the line and
the key), because a typo here would otherwise silently drop a deny.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Annotated, Any, Literal, get_args, get_origin

import yaml
from pydantic import BaseModel, ConfigDict, StringConstraints, ValidationError, field_validator
from yaml.nodes import MappingNode, Node, SequenceNode

from tools.builtin import BUILTIN_ORDER
from tools.config.effective import SANDBOX_LISTS, ConfigLayer
from tools.config.errors import ConfigError, KeyPath, show
from tools.config.jsonc import Parsed, ParseError
from tools.config.network import read_network
from tools.permission.rules import Rule, Ruleset, expand_home

# Built-in ids a registry entry may name: ours, plus OpenCode's that we may not ship
# (naming them is harmless; naming a typo is an error).
KNOWN_BUILTINS = frozenset((*BUILTIN_ORDER, "patch", "codesearch", "batch", "invalid"))

_MAX_NODES = 100_000  # alias bombs expand to far more

Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class YamlPermissions(_Strict):
    allowed_commands: list[Text] | None = None
    denied_commands: list[Text] | None = None
    allowed_dirs: list[Text] | None = None


class YamlSandbox(_Strict):
    mode: Literal["auto", "required", "off"] | None = None
    # allow | deny | {allow: [...], deny: [...]}: checked by ``_check`` (tools.config.network)
    network: Any = None
    writable: list[Text] | None = None
    caches: list[Text] | None = None
    hidden: list[Text] | None = None
    repositories: list[Text] | None = None

    @field_validator("mode", mode="before")
    @classmethod
    def _off_is_a_word(cls, value: Any) -> Any:
        # YAML 1.1 reads an unquoted `off` as false: `mode: off` means the word.
        return "off" if value is False else value


class YamlTool(_Strict):
    name: Text
    type: Literal["builtin", "custom"] = "builtin"
    enabled: bool = True
    permissions: YamlPermissions | None = None
    sandbox: YamlSandbox | None = None


class YamlRegistry(_Strict):
    tools: list[YamlTool] | None = None


# -- YAML with line numbers --------------------------------------------------------


def compose(text: str) -> Parsed:
    """The document's data and the line of every key; ``ParseError`` for bad YAML."""
    try:
        loader = yaml.SafeLoader(text)
    except yaml.reader.ReaderError as error:  # a control character somewhere
        line, column = _line_column(text, error.position)
        raise ParseError(f"{error.reason} ({hex(error.character)})", line, column) from error
    try:
        node = loader.get_single_node()
        if node is None:
            return Parsed(None)
        walker = _Walker(loader)
        return Parsed(walker.walk(node, ()), walker.lines)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        message = error.problem or error.context or "invalid YAML"
        if error.context and error.problem:
            message = f"{error.problem} ({error.context})"
        line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        raise ParseError(message, line, column) from error
    finally:
        loader.dispose()


def _line_column(text: str, position: int) -> tuple[int, int]:
    line_start = text.rfind("\n", 0, position) + 1
    return text.count("\n", 0, position) + 1, position - line_start + 1


class _Walker:
    def __init__(self, loader: yaml.SafeLoader) -> None:
        self.loader = loader
        self.lines: dict[KeyPath, int] = {}
        self.count = 0

    def walk(self, node: Node, path: KeyPath) -> Any:
        self.count += 1
        if self.count > _MAX_NODES or len(path) > 100:
            raise ParseError("the document is too large or too deeply nested", 1, 1)
        if isinstance(node, MappingNode):
            self.loader.flatten_mapping(node)  # YAML merge keys (<<)
            result: dict[str, Any] = {}
            for key_node, value_node in node.value:
                key = self.loader.construct_object(key_node, deep=True)
                key = key if isinstance(key, str) else str(key)
                line = key_node.start_mark.line + 1
                if key in result:
                    raise ParseError(
                        f"duplicate key {show(key)}", line, key_node.start_mark.column + 1
                    )
                self.lines[(*path, key)] = line
                result[key] = self.walk(value_node, (*path, key))
            return result
        if isinstance(node, SequenceNode):
            items = []
            for index, item in enumerate(node.value):
                self.lines[(*path, index)] = item.start_mark.line + 1
                items.append(self.walk(item, (*path, index)))
            return items
        return self.loader.construct_object(node, deep=True)


# -- validation --------------------------------------------------------------------


def read_registry(data: Any) -> tuple[ConfigLayer, list[ConfigError]]:
    """Validate a parsed ``tools.yaml`` and turn it into rules."""
    try:
        registry = YamlRegistry.model_validate({} if data is None else data)
    except ValidationError as error:
        return ConfigLayer(), [_explain(e) for e in error.errors()]
    errors = list(_check(registry))
    if errors:
        return ConfigLayer(), errors
    return _layer(registry), []


def _check(registry: YamlRegistry) -> Iterator[ConfigError]:
    """What the schema alone cannot say."""
    for index, tool in enumerate(registry.tools or ()):
        at: KeyPath = ("tools", index)
        if tool.type == "builtin" and tool.name not in KNOWN_BUILTINS:
            yield ConfigError(
                f"{show(tool.name)} is not a built-in tool (built-ins: "
                f"{', '.join(sorted(KNOWN_BUILTINS - {'invalid'}))}); for your own tool, "
                'write type: "custom"',
                (*at, "name"),
            )
        if tool.sandbox is not None:
            if tool.name != "bash":
                yield ConfigError("a sandbox can only be set for the bash tool", (*at, "sandbox"))
            network = tool.sandbox.network
            if network is not None and network not in ("allow", "deny"):
                found: list[ConfigError] = []
                read_network(network, (*at, "sandbox", "network"), found)
                yield from found
            for key in SANDBOX_LISTS:
                for number, path in enumerate(getattr(tool.sandbox, key) or ()):
                    if not os.path.isabs(expand_home(path)):
                        yield ConfigError(
                            f"expected an absolute path (or one starting with ~ or $HOME), "
                            f"got {show(path)}",
                            (*at, "sandbox", key, number),
                        )
        perms = tool.permissions
        if perms is None:
            continue
        for key in ("allowed_commands", "denied_commands"):
            if getattr(perms, key) and tool.name != "bash":
                yield ConfigError(
                    "commands can only be listed for the bash tool", (*at, "permissions", key)
                )
        for number, directory in enumerate(perms.allowed_dirs or ()):
            if not os.path.isabs(expand_home(directory)):
                yield ConfigError(
                    f"expected an absolute directory (or one starting with ~ or $HOME), "
                    f"got {show(directory)}",
                    (*at, "permissions", "allowed_dirs", number),
                )


def _layer(registry: YamlRegistry) -> ConfigLayer:
    """Bash: a catch-all ask, then allows, then denies (last match wins, so deny wins)."""
    layer = ConfigLayer()
    asks: Ruleset = []
    allows: Ruleset = []
    denies: Ruleset = []
    dirs: Ruleset = []
    for tool in registry.tools or ():
        if "enabled" in tool.model_fields_set:
            layer.enabled.pop(tool.name, None)
            layer.enabled[tool.name] = tool.enabled
        if tool.sandbox is not None:
            for key in tool.sandbox.model_fields_set:
                value = getattr(tool.sandbox, key)
                if key in SANDBOX_LISTS:
                    value = [os.path.normpath(expand_home(p)) for p in value or ()]
                elif key == "network" and value not in ("allow", "deny"):
                    value = read_network(value, (), [])
                layer.sandbox[key] = value
        perms = tool.permissions or YamlPermissions()
        allowed, denied = perms.allowed_commands or [], perms.denied_commands or []
        if (allowed or denied) and not asks:
            asks.append(Rule("bash", "*", "ask"))  # a command on neither list asks
        allows += [Rule("bash", command_pattern(c), "allow") for c in allowed]
        denies += [Rule("bash", command_pattern(c), "deny") for c in denied]
        layer.allowed_commands += allowed
        layer.denied_commands += denied
        for directory in perms.allowed_dirs or ():
            for form in directory_forms(directory):
                layer.allowed_dirs.append(form)
                root = form.rstrip("/")
                dirs += [
                    Rule("external_directory", form, "allow"),
                    Rule("external_directory", f"{root}/*", "allow"),
                ]
    layer.rules = [*asks, *allows, *denies, *dirs]
    return layer


def command_pattern(command: str) -> str:
    """``npm`` -> ``npm *``, which matches ``npm`` and ``npm install`` but not ``npmx``."""
    return command if command.endswith("*") else f"{command} *"


def directory_forms(directory: str) -> list[str]:
    """The directory as written (``~`` expanded, normalised) and with symlinks resolved.

    The external-directory check compares symlink-resolved paths, so both forms match.
    """
    written = os.path.normpath(expand_home(directory))
    forms = [written]
    resolved = os.path.realpath(written)
    if resolved != written:
        forms.append(resolved)
    return forms


# -- pydantic errors in a person's words ---------------------------------------------


def _explain(error: Any) -> ConfigError:
    path: KeyPath = tuple(error["loc"])
    kind = error["type"]
    value = error.get("input")
    if kind == "extra_forbidden":
        known = ", ".join(_fields_at(path[:-1]))
        return ConfigError(f"unknown key (expected one of {known})", path)
    messages = {
        "missing": "required key is missing",
        "bool_type": f"expected true or false, got {show(value)}",
        "string_type": f"expected a string, got {show(value)}",
        "string_too_short": "must not be empty",
        "list_type": f"expected a list, got {show(value)}",
        "literal_error": f"expected one of {_literal_choices(path)}, got {show(value)}",
        "model_type": f"expected a mapping of keys to values, got {show(value)}",
        "model_attributes_type": f"expected a mapping of keys to values, got {show(value)}",
    }
    return ConfigError(messages.get(kind, error["msg"]), path)


def _model_at(path: KeyPath) -> type[BaseModel] | None:
    model: type[BaseModel] | None = YamlRegistry
    for part in path:
        if model is None:
            return None
        if isinstance(part, int):
            continue
        info = model.model_fields.get(part)
        model = _model_in(info.annotation) if info else None
    return model


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model_in(arg)
        if found:
            return found
    return None


def _fields_at(path: KeyPath) -> list[str]:
    model = _model_at(path)
    return list(model.model_fields) if model else []


def _literal_choices(path: KeyPath) -> str:
    model = _model_at(path[:-1])
    info = model.model_fields.get(str(path[-1])) if model and path else None
    choices = _literal_args(info.annotation) if info else ()
    return ", ".join(str(c) for c in choices) or "the allowed values"


def _literal_args(annotation: Any) -> tuple[Any, ...]:
    """The choices of a Literal, also inside an Optional."""
    if get_origin(annotation) is Literal:
        return get_args(annotation)
    for arg in get_args(annotation):
        found = _literal_args(arg)
        if found:
            return found
    return ()
