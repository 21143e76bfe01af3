"""Regenerate the built-ins' catalogue and stored argument schemas (never by hand).

.venv/bin/python scripts/gen_catalog.py          # rewrite them
.venv/bin/python scripts/gen_catalog.py --check  # exit 1 if either is stale

``tools/builtin/catalog.json`` lets the sidecar list and run a built-in without importing
the others; ``tools/builtin/arguments.json`` lets it check a call's arguments without
importing pydantic (``tools.arguments.model``). Both are made by pydantic, here, from the modules.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _dumps(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def render() -> dict[Path, str]:
    from tools.arguments.model import STORE, describe, key_of
    from tools.builtin import BUILTIN_ORDER
    from tools.builtin.lazy import CATALOG, catalog_entry, invalid_tool, loaded_builtin
    from tools.tool import NoArgs

    tools = {name: loaded_builtin(name) for name in BUILTIN_ORDER}
    classes = [NoArgs, invalid_tool().parameters, *(tool.parameters for tool in tools.values())]
    described = {key_of(cls): describe(cls) for cls in classes}
    catalog = {
        name: catalog_entry(tool, described[key_of(tool.parameters)]["schema"])
        for name, tool in tools.items()
    }
    stored = {key: {"schema": d["schema"], "core": d["core"]} for key, d in described.items()}
    return {CATALOG: _dumps(catalog), STORE: _dumps(stored)}


def main(argv: list[str]) -> int:
    rendered = render()
    if "--check" in argv:
        stale = [path for path, text in rendered.items() if path.read_text("utf-8") != text]
        for path in stale:
            print(f"{path} is stale: run scripts/gen_catalog.py", file=sys.stderr)
        return 1 if stale else 0
    for path, text in rendered.items():
        path.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
