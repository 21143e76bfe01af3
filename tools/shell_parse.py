"""What a bash command line would run, read with tree-sitter-bash (reference §3.5).

``analyse(text)`` lists every simple command in the line: the parts of pipelines
and lists (``&&``, ``||``, ``;``, ``&``), subshells, ``{ }`` groups, loops and
conditionals, function bodies, and the commands inside ``$( )``, backticks and
``<( )``/``>( )`` wherever they appear (arguments, double-quoted strings,
assignments, ``[[ ]]`` tests, the bodies of unquoted here-documents, where bash
expands them). Here-document text itself is data, never a command.

Each command carries:

- ``tokens``: the source text of its name and arguments (children of kind
  command_name, word, number, string, raw_string and concatenation), so variable
  assignments and redirections are left out; quotes are kept (``"rm"`` stays
  ``"rm"``), as OpenCode keeps them;
- ``words``: each token's value after quote removal, or None when the value is
  only known at run time (it contains ``$x``, ``$( )``, ``$(( ))``, ...);
- ``text``: its source text, or that of its ``redirected_statement`` when it is
  redirected (``echo hi > out.txt``): the ``bash`` permission pattern;
- ``always``: its arity prefix plus `` *`` (``git checkout *``): what an
  "always" approval stores.

``parse_error`` is true when the tree holds ERROR or MISSING nodes: tree-sitter
then recovered what it could, and the commands listed may be incomplete.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

from tools.arity import prefix

# Children of a `command` node that are its name or arguments (OpenCode's list,
# plus `number`: tree-sitter-bash reads a bare integer as one, and dropping it
# would shift the arguments of `timeout 5 rm x` or `kill -9 1234`).
TOKEN_KINDS = frozenset({"command_name", "word", "number", "string", "raw_string", "concatenation"})

# Inside double quotes a backslash only escapes these (bash manual, "Double Quotes").
_DOUBLE_QUOTE_ESCAPES = frozenset('$`"\\\n')


@dataclass(frozen=True)
class ParsedCommand:
    tokens: tuple[str, ...]
    words: tuple[str | None, ...]
    text: str
    always: str  # "" for a command without tokens

    @property
    def name(self) -> str | None:
        """The command name after quote removal (None when it is computed at run time)."""
        return self.words[0] if self.words else None


@dataclass(frozen=True)
class CommandLine:
    text: str
    commands: list[ParsedCommand]
    parse_error: bool


@lru_cache(maxsize=1)
def _parser() -> Parser:
    return Parser(Language(tree_sitter_bash.language()))


def analyse(command: str) -> CommandLine:
    """Every command ``command`` contains, in source order (outer before inner)."""
    source = command.encode("utf-8")
    root = _parser().parse(source).root_node
    commands = [_parsed(node, source) for node in _walk(root) if node.type == "command"]
    return CommandLine(text=command, commands=commands, parse_error=_has_error(root))


def _walk(root: Node):
    """Pre-order over the whole tree: no construct can hide a command from the scan."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(node.children))


def _has_error(root: Node) -> bool:
    # has_error covers ERROR and MISSING nodes; the explicit walk is a guard in
    # case a binding version reports only one of them.
    return root.has_error or any(n.is_error or n.is_missing for n in _walk(root))


def _parsed(node: Node, source: bytes) -> ParsedCommand:
    parts = [child for child in node.children if child.type in TOKEN_KINDS]
    tokens = tuple(_text(child, source) for child in parts)
    words = tuple(_word(child, source) for child in parts)
    parent = node.parent
    owner = parent if parent is not None and parent.type == "redirected_statement" else node
    always = " ".join(prefix(tokens)) + " *" if tokens else ""
    return ParsedCommand(tokens=tokens, words=words, text=_text(owner, source), always=always)


def _text(node: Node, source: bytes) -> str:
    return source[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _word(node: Node, source: bytes) -> str | None:
    """The value bash gives a token before expansions, or None if it has any."""
    kind = node.type
    if node.has_error:  # recovered from a syntax error: its extent is a guess
        return None
    if kind in ("word", "number"):
        return _unescape(_text(node, source), always=True)
    if kind == "raw_string":
        return _text(node, source)[1:-1]
    if kind == "string":
        if any(child.type not in ('"', "string_content") for child in node.children):
            return None
        return _unescape(_text(node, source)[1:-1], always=False)
    if kind in ("command_name", "concatenation"):
        values = [_word(child, source) for child in node.children]
        if not values or any(v is None for v in values):
            return None
        return "".join(v for v in values if v is not None)
    return None


def _unescape(text: str, *, always: bool) -> str:
    """Remove backslash quoting: any character outside quotes, a few inside ``"..."``."""
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and (always or text[i + 1] in _DOUBLE_QUOTE_ESCAPES):
            escaped = text[i + 1]
            if escaped != "\n":  # backslash-newline joins lines and disappears
                out.append(escaped)
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)
