"""Regenerate tools/builtin/catalog.json from the built-in tool modules (never by hand).

.venv/bin/python scripts/gen_catalog.py          # rewrite it
.venv/bin/python scripts/gen_catalog.py --check  # exit 1 if it is stale

The catalogue lets the sidecar list and run a built-in without importing the others.
"""

from __future__ import annotations

import json
import sys


def render() -> str:
    from tools.builtin import BUILTIN_ORDER, catalog_entry, loaded_builtin

    entries = {name: catalog_entry(loaded_builtin(name)) for name in BUILTIN_ORDER}
    return json.dumps(entries, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    from tools.builtin import CATALOG

    text = render()
    if "--check" in argv:
        if CATALOG.read_text(encoding="utf-8") != text:
            print(f"{CATALOG} is stale: run scripts/gen_catalog.py", file=sys.stderr)
            return 1
        return 0
    CATALOG.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
