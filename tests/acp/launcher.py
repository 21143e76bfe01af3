"""``python -m tests.acp.launcher COMMAND...``: an agent launcher as npm ships them.

codex-acp's Node script starts the native ``codex-acp`` and Gemini CLI starts itself
again with a larger heap: the process that speaks ACP is the launcher's child, on the
same stdio. A signal ends the launcher alone; its child stays.
"""

from __future__ import annotations

import subprocess
import sys

if __name__ == "__main__":
    sys.exit(subprocess.call(sys.argv[1:]))
