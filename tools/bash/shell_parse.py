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

Beyond OpenCode's view, each command also carries ``argv``: every word bash
passes to the program (``Arg``: raw text, value after quote removal, and whether
unquoted glob or brace characters may turn it into other words), including
arguments that OpenCode's token list drops (``$x``, ``$'...'``), with words that a
backslash-newline splits for tree-sitter joined again (bash reads ``r\\<newline>m``
as ``rm``). The line carries the targets of its file redirections and every
variable assignment in it. tools.bash.walker builds on these.

``parse_error`` is true when the tree holds ERROR or MISSING nodes: tree-sitter
then recovered what it could, and the commands listed may be incomplete.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

from tools.bash import constructs
from tools.bash.arity import prefix

# Children of a `command` node that are its name or arguments (OpenCode's list,
# plus `number`: tree-sitter-bash reads a bare integer as one, and dropping it
# would shift the arguments of `timeout 5 rm x` or `kill -9 1234`).
TOKEN_KINDS = frozenset({"command_name", "word", "number", "string", "raw_string", "concatenation"})

# Inside double quotes a backslash only escapes these (bash manual, "Double Quotes").
_DOUBLE_QUOTE_ESCAPES = frozenset('$`"\\\n')


# Backslash-newline pairs (and nothing else) between two nodes: bash joins them.
_CONTINUATIONS = re.compile(r"(?:\\\r?\n)+")

# Redirection operators whose destination is a file descriptor, not a file.
_FD_OPERATORS = frozenset({">&", "<&"})


@dataclass(frozen=True)
class Arg:
    """One word as bash hands it to a program."""

    raw: str  # source text
    value: str | None  # after quote removal; None when only known at run time
    expands: bool = False  # unquoted glob or brace characters: may become other words

    @property
    def known(self) -> str | None:
        """The value when it is exactly this one word, else None."""
        return None if self.expands else self.value


@dataclass(frozen=True)
class ParsedCommand:
    tokens: tuple[str, ...]
    words: tuple[str | None, ...]
    text: str
    always: str  # "" for a command without tokens
    argv: tuple[Arg, ...] = ()  # the program and its arguments, as bash passes them

    @property
    def name(self) -> str | None:
        """The command name after quote removal (None when it is computed at run time)."""
        return self.words[0] if self.words else None


@dataclass(frozen=True)
class CommandLine:
    text: str
    commands: list[ParsedCommand]
    parse_error: bool
    redirects: tuple[Arg, ...] = ()  # files that redirections read or write
    written: tuple[Arg, ...] = ()  # those of them opened for writing (>, >>, <>, &>...)
    assignments: tuple[tuple[str, Arg], ...] = ()  # NAME=value anywhere in the line
    # Constructs the analysis cannot follow (tools.bash.constructs): (text, why)
    constructs: tuple[tuple[str, str], ...] = ()


@lru_cache(maxsize=1)
def _parser() -> Parser:
    return Parser(Language(tree_sitter_bash.language()))


def analyse(command: str) -> CommandLine:
    """Every command ``command`` contains, in source order (outer before inner)."""
    source = command.encode("utf-8")
    root = _parser().parse(source).root_node
    nodes = list(_walk(root))
    return CommandLine(
        text=command,
        commands=[_parsed(node, source) for node in nodes if node.type == "command"],
        parse_error=_has_error(root),
        redirects=tuple(
            arg for node in nodes if node.type == "file_redirect" for arg in _target(node, source)
        ),
        written=tuple(
            arg
            for node in nodes
            if node.type == "file_redirect" and _writes(node)
            for arg in _target(node, source)
        ),
        assignments=tuple(
            pair
            for node in nodes
            if node.type == "variable_assignment"
            for pair in _assignment(node, source)
        ),
        constructs=tuple(constructs.find(root, source)),
    )


def _walk(root: Node) -> Iterator[Node]:
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
    return ParsedCommand(
        tokens=tokens,
        words=words,
        text=_text(owner, source),
        always=always,
        argv=_argv(node, source),
    )


def _argv(node: Node, source: bytes) -> tuple[Arg, ...]:
    """The name and arguments, joined where only backslash-newlines separate them.

    tree-sitter treats a line continuation as whitespace, so ``r\\<newline>m x``
    comes out as the words ``r``, ``m``, ``x``; bash removes the pair before it
    splits words and runs ``rm x``.
    """
    parts = [
        child
        for index, child in enumerate(node.children)
        if node.field_name_for_child(index) in ("name", "argument")
    ]
    args: list[Arg] = []
    previous: Node | None = None
    for part in parts:
        arg = Arg(_text(part, source), _word(part, source), _expands(part, source))
        gap = source[previous.end_byte : part.start_byte] if previous is not None else b""
        if previous is not None and _CONTINUATIONS.fullmatch(gap.decode("utf-8", "replace")):
            last = args.pop()
            joined = None if last.value is None or arg.value is None else last.value + arg.value
            raw = last.raw + gap.decode("utf-8", "replace") + arg.raw
            arg = Arg(raw, joined, last.expands or arg.expands)
        args.append(arg)
        previous = part
    return tuple(args)


def _target(node: Node, source: bytes) -> list[Arg]:
    """The file a redirection opens (none for ``2>&1``, ``<&3``, ``>&-``)."""
    destination = node.child_by_field_name("destination")
    if destination is None:
        return []
    operators = {child.type for child in node.children if not child.is_named}
    value = _word(destination, source)
    if operators & _FD_OPERATORS and (value == "-" or (value or "").isdigit()):
        return []
    return [Arg(_text(destination, source), value, _expands(destination, source))]


def _writes(node: Node) -> bool:
    """A redirection that opens its file for writing (every operator but ``<``)."""
    operators = {child.type for child in node.children if not child.is_named}
    return bool(operators - {"<", "<&"})


def _assignment(node: Node, source: bytes) -> list[tuple[str, Arg]]:
    name = node.child_by_field_name("name")
    if name is None or name.type != "variable_name":
        return []  # x[1]=... sets an array element
    value = node.child_by_field_name("value")
    arg = (
        Arg("", "")
        if value is None
        else Arg(_text(value, source), _word(value, source), _expands(value, source))
    )
    return [(_text(name, source), arg)]


def _expands(node: Node, source: bytes) -> bool:
    """True when bash's pathname or brace expansion may rewrite the word.

    Only unquoted characters count: ``"*"`` and ``\\*`` are literal.
    """
    shape = _shape(node, source)
    return bool(_GLOB.search(shape) or _BRACES.search(shape))


# In a shape (see _shape) every escaped character is "\\x", so these only see
# unescaped ones: *, ?, a [...] bracket, and {a,b} or {a..b}.
_GLOB = re.compile(r"(?<!\\)(?:\\\\)*[*?]|(?<!\\)(?:\\\\)*\[[^\]]*\]")
_BRACES = re.compile(r"(?<!\\)(?:\\\\)*\{[^{}]*(?:,|\.\.)[^{}]*\}")


def _shape(node: Node, source: bytes) -> str:
    """The word with quoted and expanded parts blanked out (``_``), the rest raw."""
    if node.type in ("word", "number"):
        return _text(node, source)
    if node.type in ("command_name", "concatenation"):
        return "".join(_shape(child, source) for child in node.children)
    if node.type == "brace_expression":
        return "{_,_}"
    return "_"


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
