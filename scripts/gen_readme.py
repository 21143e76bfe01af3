"""Regenerate README.md's tool table from the catalogue (never typed by hand).

.venv/bin/python scripts/gen_readme.py          # rewrite the table
.venv/bin/python scripts/gen_readme.py --check  # exit 1 if it is stale
"""

from __future__ import annotations

import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
START, END = "<!-- TOOLS:START -->", "<!-- TOOLS:END -->"


def tool_table() -> str:
    from tools.builtin.lazy import builtin_tools, invalid_tool
    from tools.registry import Registry

    rows = ["| id | kind | read-only | what it does |", "|---|---|---|---|"]
    for tool in Registry(builtin_tools(), invalid_tool()).tools:
        first_line = tool.description.split("\n", 1)[0].strip()
        summary = first_line.split(". ", 1)[0].rstrip(".") + "."
        read_only = "yes" if tool.annotations.read_only else "no"
        rows.append(f"| `{tool.id}` | {tool.kind} | {read_only} | {summary} |")
    return "\n".join(rows)


def render(readme: str) -> str:
    head, rest = readme.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{tool_table()}\n{END}{tail}"


def main() -> int:
    text = README.read_text(encoding="utf-8")
    fresh = render(text)
    if "--check" in sys.argv:
        if fresh != text:
            print("README.md's tool table is stale: run scripts/gen_readme.py", file=sys.stderr)
            return 1
        return 0
    README.write_text(fresh, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
