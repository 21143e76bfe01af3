"""The escape corpus (issue 27): attacks on a command sandbox, as data, runnable against
any sandbox.

Each case (``cases/*.toml``) is a small shell script that runs inside the sandbox under
test, what the world holds before it (files, a repository, a listening socket, a
running editor), and what proves the escape (a marker file, a byte a listener heard,
a secret in the output, a process still alive after the sandbox ended).  Every case is
first run with no sandbox, where the escape must happen, then under the sandbox.

- ``corpus``: the cases, loaded and checked.
- ``world``: one case's folders, services and proofs.
- ``sandboxes``: the sandboxes a case can run under (none, toolhost's in-process bash
  tool, Claude Code's sandbox-runtime ``srt``, ``codex sandbox``).
- ``runner``: one case against one sandbox, start to verdict.
- ``test_corpus``: toolhost's column, in the test suite; ``bench/escapes.py`` prints
  all three.
"""
