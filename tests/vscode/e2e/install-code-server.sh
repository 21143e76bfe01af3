#!/usr/bin/env bash
# Installs code-server (the real VS Code workbench, served to a browser) and
# playwright-core into DIR, from the npm registry only, once: DIR/.complete marks a
# finished install and makes later runs return at once.
#
# code-server 4.100.3 (VS Code 1.100.3) is the newest whose engines accept Node 20.
# Its npm postinstall refuses to run as root, downloads ripgrep from GitHub and
# stops at node-gyp's prompt, so the install runs with --ignore-scripts and the
# postinstall is replayed here by hand: @vscode/ripgrep points at Debian's rg and
# node-gyp builds against the local Node headers. Needs: build-essential python3
# pkg-config libkrb5-dev libxkbfile-dev libsecret-1-dev libx11-dev ripgrep
# (.ci/run installs them).
#
# usage: install-code-server.sh DIR
set -euo pipefail
DIR="$1"
CS_VERSION="${CS_VERSION:-4.100.3}"
PW_VERSION="${PW_VERSION:-1.65.1}"
[ -f "$DIR/.complete" ] && exit 0
rm -rf "$DIR" && mkdir -p "$DIR" && cd "$DIR"
export npm_config_nodedir=/usr npm_config_yes=true npm_config_audit=false npm_config_fund=false
export npm_config_update_notifier=false npm_config_loglevel=error
npm init -y >/dev/null
npm install --ignore-scripts "code-server@$CS_VERSION" >/dev/null
npm rebuild argon2 >/dev/null
cd node_modules/code-server/lib/vscode
npm install --omit=dev --ignore-scripts >/dev/null
mkdir -p node_modules/@vscode/ripgrep/bin
ln -sf "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg
npm rebuild >/dev/null
ln -sfn node_modules node_modules.asar
(cd bin/remote-cli && ln -sfn code-linux.sh code-server)
(cd bin/helpers && ln -sfn browser-linux.sh browser.sh)
(cd extensions && npm install --omit=dev >/dev/null)
cd "$DIR"
mkdir -p pw && (cd pw && npm init -y >/dev/null && npm install "playwright-core@$PW_VERSION" >/dev/null)
XDG_CONFIG_HOME="$DIR/xdg" XDG_DATA_HOME="$DIR/xdg" XDG_CACHE_HOME="$DIR/xdg" "$DIR/node_modules/.bin/code-server" --version >/dev/null
touch "$DIR/.complete"
