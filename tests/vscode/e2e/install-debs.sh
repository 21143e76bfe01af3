#!/usr/bin/env bash
# The Debian packages the real-VS-Code tier (tests/vscode/test_extension_e2e.py) needs:
# chromium, the browser playwright-core drives, and what code-server's native modules
# build with (install-code-server.sh). Installs the missing ones with apt-get when run
# as root; otherwise prints their names and exits 3, so the caller can say what to run.
# Both .ci/run and the e2e test call it, so the README's test command installs what CI
# installs.
#
# usage: install-debs.sh
set -euo pipefail
DEBS="chromium build-essential python3 pkg-config libkrb5-dev libxkbfile-dev libsecret-1-dev libx11-dev ripgrep"
missing=$(for p in $DEBS; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done | xargs)
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get update -qq
  # shellcheck disable=SC2086 # one word per package
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
  exit 0
fi
echo "$missing"
exit 3
