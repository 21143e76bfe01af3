"""Constructs of a bash line that the analysis cannot follow, so they fail closed.

Bash is a programming language, and some of its constructs run code that no
command in the line names:

- **arithmetic**: in ``(( ))``, ``$(( ))``, ``for (( ))``, ``[[ x -eq y ]]``,
  ``${s:off:len}`` and array subscripts, a variable's *value* is evaluated as an
  expression, and ``x='a[$(cmd)]'; (( x ))`` runs ``cmd``. Only arithmetic made of
  numbers and operators is understood;
- ``[[ -v name ]]`` and ``unset name`` evaluate a subscript the same way;
- ``${x@P}`` expands a value as a prompt (running its ``$( )``), and ``${!x}``
  expands the variable whose name is in ``x`` (subscript and all);
- ``declare``/``typeset``/``local``/``readonly``/``export`` with ``-i`` (every
  later assignment is arithmetic), ``-n`` (a name reference), or a word or value
  that expands (bash reads the result as an assignment);
- assignments to variables that change which program a name runs or how it runs
  (``PATH``, ``BASH_CMDS``, ``BASH_ALIASES``, ``BASH_ENV``, ``LD_PRELOAD``, git's
  config variables...) or which directory a path means (``HOME``, ``CDPATH``,
  ``OLDPWD``, ``PWD``), in any form: ``NAME=``, ``NAME[k]=``, ``for NAME in``,
  ``read NAME``, ``printf -v NAME``, ``declare NAME``.

``find(root, source)`` returns each such construct's text with the reason; the
walker records each as a command that is only known when it runs (unknown): it is
denied where the rules deny what they do not name, and asked for otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tree_sitter import Node

# Variables whose value changes what a command name runs, or how a program runs.
RUN_VARIABLES = frozenset(
    {
        "PATH",
        "BASH_CMDS",
        "BASH_ALIASES",
        "BASH_ENV",
        "ENV",
        "BASH_LOADABLES_PATH",
        "EXECIGNORE",
        "PROMPT_COMMAND",
        "PS0",
        "PS1",
        "PS2",
        "PS3",
        "SHELLOPTS",
        "BASHOPTS",
        "LD_PRELOAD",
        "LD_AUDIT",
        "LD_LIBRARY_PATH",
        "GIT_CONFIG",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_SYSTEM",
        "GIT_EXEC_PATH",
        "GIT_TEMPLATE_DIR",
    }
)
RUN_PREFIXES = ("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_", "BASH_FUNC_")
# Variables that change which directory a path or `cd` means.
PATH_VARIABLES = frozenset({"HOME", "CDPATH", "OLDPWD", "PWD"})

ARITHMETIC_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
INTEGER_PARAMETERS = frozenset({"$?", "$#", "$$", "$!"})
_LITERAL = frozenset({"word", "number", "raw_string"})
_EXPANDING = frozenset(
    {
        "simple_expansion",
        "expansion",
        "command_substitution",
        "arithmetic_expansion",
        "process_substitution",
        "translated_string",
        "ansi_c_string",
    }
)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A word of arithmetic with no name in it: `1+2`, `0x1f*3`, `(4<<2)`.
_ARITHMETIC_WORD = re.compile(r"(?:0[xX][0-9a-fA-F]+|[0-9]+|[-+*/%()<>=!&|^~?:,\s])+")
_INTEGER = re.compile(r"[+-]?(?:0[xX][0-9a-fA-F]+|[0-9]+(?:#[0-9a-zA-Z@_]+)?)")


def special_variable(name: str) -> str | None:
    """Why assigning ``name`` is not understood, or None."""
    if name in RUN_VARIABLES or name.startswith(RUN_PREFIXES):
        return f"`{name}` changes which program a command runs, or how it runs"
    if name in PATH_VARIABLES:
        return f"`{name}` changes which directory a path or `cd` means"
    return None


def find(root: Node, source: bytes) -> list[tuple[str, str]]:
    """(text, reason) for every construct in the tree that is not understood."""
    found: list[tuple[str, str]] = []
    for node in _walk(root):
        for reason in _reasons(node, source):
            found.append((_text(node, source), reason))
    return found


def _reasons(node: Node, source: bytes) -> Iterator[str]:
    kind = node.type
    if kind == "arithmetic_expansion" and not _numbers_only(node, source):
        yield _ARITHMETIC
    elif kind == "compound_statement" and _first(node) == "((":
        if not _numbers_only(node, source):
            yield _ARITHMETIC
    elif kind == "c_style_for_statement":
        header = [c for c in node.children if c.type != "do_group"]
        if not all(_numbers_only(c, source) for c in header):
            yield _ARITHMETIC
    elif kind == "test_command":
        yield from _test(node, source, double=_first(node) == "[[")
    elif kind == "subscript":
        index = _subscript_index(node)
        if index is not None and not _plain_index(index, source):
            yield (
                f"the subscript of `{_text(node, source)}` is evaluated as arithmetic, "
                "which can run commands"
            )
    elif kind == "expansion":
        yield from _expansion(node, source)
    elif kind == "variable_assignment":
        # NAME=... itself is checked by the walker (with env's NAME=...); NAME[k]=... here
        name = node.child_by_field_name("name")
        if name is not None and name.type == "subscript":
            target = name.child_by_field_name("name")
            why = special_variable(_text(target, source)) if target is not None else None
            if why:
                yield why
    elif kind == "for_statement":
        variable = node.child_by_field_name("variable")
        why = special_variable(_text(variable, source)) if variable is not None else None
        if why:
            yield why
    elif kind == "declaration_command":
        yield from _declaration(node, source)
    elif kind == "unset_command":
        for operand in node.children[1:]:
            value = _literal(operand, source)
            if value is None or "[" in value:
                yield "`unset` of a subscript evaluates it as arithmetic, which can run commands"
                break


_ARITHMETIC = (
    "bash evaluates the values of variables in arithmetic as expressions, and "
    "`x='a[$(cmd)]'` then runs cmd: only arithmetic of plain numbers is understood"
)


def _test(node: Node, source: bytes, *, double: bool) -> Iterator[str]:
    for part in _walk(node):
        operator = _operator(part, source)
        if operator is None:
            continue
        operands = [c for c in part.children if c.type != "test_operator" and c.is_named]
        if part.type == "binary_expression" and double and operator in ARITHMETIC_TESTS:
            if not all(
                _INTEGER.fullmatch(_literal(o, source) or "") or _integer_parameter(o, source)
                for o in operands
            ):
                yield f"`[[ … {operator} … ]]` evaluates its operands as arithmetic"
        elif (
            part.type == "unary_expression"
            and operator in ("-v", "-R")
            and not all(_NAME.fullmatch(_literal(o, source) or "") for o in operands)
        ):
            yield f"`{operator}` with a subscript evaluates it as arithmetic"


def _operator(node: Node, source: bytes) -> str | None:
    if node.type not in ("binary_expression", "unary_expression"):
        return None
    for child in node.children:
        if child.type == "test_operator":
            return _text(child, source)
    return None


def _expansion(node: Node, source: bytes) -> Iterator[str]:
    kinds = [c.type for c in node.children]
    texts = [_text(c, source) for c in node.children]
    if "@" in kinds and any(t == "P" for t in texts):
        yield "`${x@P}` expands a value as a prompt, which runs the commands in it"
    if len(kinds) > 2 and kinds[1] == "!":
        names_keys = "subscript" in kinds or kinds[-2] in ("*", "@")
        if not names_keys:
            yield "`${!x}` expands the variable named by a value, which can run commands"
    if ":" in kinds:
        after = node.children[kinds.index(":") + 1 :]
        offsets = [c for c in after if c.type not in (":", "}")]
        if not all(c.type == "number" for c in offsets):
            yield "the offset of `${x:…}` is evaluated as arithmetic, which can run commands"


def _declaration(node: Node, source: bytes) -> Iterator[str]:
    keyword = _text(node.children[0], source) if node.children else "declare"
    for child in node.children[1:]:
        if child.type == "variable_assignment":
            value = child.child_by_field_name("value")
            if value is not None and _expands(value):
                yield f"`{keyword}` of a value only known when it runs"
            continue
        literal = _literal(child, source)
        if literal is None:
            yield f"`{keyword}` of a word only known when it runs: bash reads it as an assignment"
        elif literal[:1] in "-+" and set(literal[1:]) & {"i", "n"}:
            flag = "-i" if "i" in literal else "-n"
            why = "makes assignments arithmetic" if flag == "-i" else "makes a name reference"
            yield f"`{keyword} {flag}` {why}, which can run commands"
        elif child.type == "variable_name" or _NAME.fullmatch(literal):
            special = special_variable(literal)
            if special:
                yield special


def _subscript_index(node: Node) -> Node | None:
    index = node.child_by_field_name("index")
    if index is not None:
        return index
    inside = False
    for child in node.children:
        if child.type == "[":
            inside = True
        elif child.type == "]":
            break
        elif inside:
            return child
    return None


def _plain_index(index: Node, source: bytes) -> bool:
    text = _literal(index, source)
    return text is not None and (text in ("@", "*") or text.isdigit())


def _numbers_only(node: Node, source: bytes) -> bool:
    """True when an arithmetic node holds nothing but numbers and operators (and
    ``$?``, ``$#``, ``$$``, ``$!``, which bash sets to integers)."""
    for part in _walk(node):
        if part is node:
            continue
        if part.type == "simple_expansion" and _integer_parameter(part, source):
            continue
        if part.type == "special_variable_name" or (
            part.parent is not None and _integer_parameter(part.parent, source)
        ):
            continue
        if part.type in ("variable_name", "subscript", *_EXPANDING, "string", "raw_string"):
            return False
        if part.type == "word" and not _ARITHMETIC_WORD.fullmatch(_text(part, source)):
            return False
    return True


def _integer_parameter(node: Node, source: bytes) -> bool:
    return node.type == "simple_expansion" and _text(node, source) in INTEGER_PARAMETERS


def _expands(node: Node) -> bool:
    return any(part.type in _EXPANDING for part in _walk(node))


def _literal(node: Node, source: bytes) -> str | None:
    """The word's text when nothing in it is expanded (quotes removed), else None."""
    if node.type in _LITERAL:
        text = _text(node, source)
        return text[1:-1] if node.type == "raw_string" else text
    if node.type == "variable_name":
        return _text(node, source)
    if node.type == "string":
        if any(c.type not in ('"', "string_content") for c in node.children):
            return None
        return _text(node, source)[1:-1]
    if node.type == "concatenation":
        parts = [_literal(c, source) for c in node.children]
        return None if any(p is None for p in parts) else "".join(p or "" for p in parts)
    return None


def _first(node: Node) -> str | None:
    return node.children[0].type if node.children else None


def _walk(root: Node) -> Iterator[Node]:
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(node.children))


def _text(node: Node, source: bytes) -> str:
    return source[node.start_byte : node.end_byte].decode("utf-8", "replace")
