"""The fast JSON path (orjson) reads and writes exactly what the standard library does.

Every body below is one orjson refuses or reads differently if left alone; the server
must still see the value ``json.loads`` sees (or the same error), and every answer it
writes must parse back to the value it meant.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from server.protocol import encode_body, parse_body

BODIES = [
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/execute", "params": {"tool": "read"}}',
    b'{"n": NaN, "i": Infinity, "m": -Infinity}',  # the stdlib's extension
    b'{"big": 123456789012345678901234567890}',  # past 64 bits
    b'{"s": "\\ud800 lone surrogate"}',  # valid JSON, not valid Unicode
    '{"utf16": "é"}'.encode("utf-16"),  # the stdlib detects UTF-16 and UTF-32
    b'{"dup": 1, "dup": 2}',  # the last one wins in both
    b"[" * 2000 + b"]" * 2000,  # deeper than orjson's limit
    b'{"f": 0.1, "e": 1e400}',
    b'{"u64": 18446744073709551615, "neg": -9223372036854775809}',
]


@pytest.mark.parametrize("body", BODIES, ids=range(len(BODIES)))
def test_bodies_parse_as_the_standard_library_parses_them(body: bytes) -> None:
    try:
        expected: Any = json.loads(body)
    except RecursionError:
        with pytest.raises(RecursionError):
            parse_body(body)
        return
    assert _same(parse_body(body), expected)


@pytest.mark.parametrize(
    "body", [b"{", b"", b"\xff\xfe\x00", b'{"a": 1} trailing', b"{'a': 1}"], ids=range(5)
)
def test_bodies_that_are_not_json_fail_with_the_standard_librarys_error(body: bytes) -> None:
    with pytest.raises(ValueError) as ours:
        parse_body(body)
    with pytest.raises(ValueError) as theirs:
        json.loads(body)
    assert str(ours.value) == str(theirs.value)  # the client is told the same thing


@pytest.mark.parametrize(
    "value",
    [
        {"output": "café ✓ 𝄞", "n": 3, "f": 0.5, "none": None},
        {"big": 2**70},  # orjson refuses it
        {"s": "\ud800"},  # orjson refuses a lone surrogate
        {1: "non-string key"},  # orjson refuses it
    ],
    ids=range(4),
)
def test_answers_encode_to_what_they_mean(value: Any) -> None:
    assert json.loads(encode_body(value, None)) == json.loads(json.dumps(value))


def test_values_json_cannot_hold_go_through_the_default() -> None:
    class Opaque:
        pass

    encoded = encode_body({"x": Opaque()}, lambda _: {"converted": True})
    assert json.loads(encoded) == {"x": {"converted": True}}


def _same(a: Any, b: Any) -> bool:
    """Equality that counts NaN equal to NaN; iterative, since a body may nest deeper than
    the recursion limit once something in the process has raised it."""
    pending = [(a, b)]
    while pending:
        x, y = pending.pop()
        if isinstance(x, float) and isinstance(y, float) and math.isnan(x):
            if not math.isnan(y):
                return False
        elif isinstance(x, dict) and isinstance(y, dict):
            if x.keys() != y.keys():
                return False
            pending.extend((x[k], y[k]) for k in x)
        elif isinstance(x, list) and isinstance(y, list):
            if len(x) != len(y):
                return False
            pending.extend(zip(x, y, strict=True))
        elif type(x) is not type(y) or x != y:
            return False
    return True
