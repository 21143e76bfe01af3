"""What the custom-tool tests share, in tests/tools and tests/wire: the documented example
and small helpers to write tool files and read what a host made of them."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tools import ToolHost

GREET = """
    import time

    from pydantic import BaseModel, Field
    from tools import tool

    class Args(BaseModel):
        name: str = Field(description="用户名字")

    async def run(args, ctx):
        return {"title": "问候", "output": f"你好，{args.name}！", "metadata": {"timestamp": time.time()}}

    default = tool(description="返回问候语", args=Args, execute=run)
"""  # noqa: E501 - exactly as our docs show it


def write(path: Path, source: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
    return path


def problems_of(host: ToolHost) -> dict[str, str]:
    return {Path(p.file).name: p.reason for p in host.custom_problems}


def custom_ids(host: ToolHost) -> list[str]:
    return [t.id for t in host.registry.custom]
