// Starts the bundled extension (dist/extension.js) under the stand-in `vscode`
// module, in a fresh temporary workspace, against the real sidecar.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const vscode = require('vscode');

const stub = vscode.__stub;
const EXTENSION_ROOT = path.resolve(__dirname, '..', '..');
const REPO_ROOT = path.resolve(EXTENSION_ROOT, '..', '..');
const VENV_BIN = path.join(REPO_ROOT, '.venv', 'bin');

/** The `toolhost` console script under test: $TOOLHOST, else the repository's venv. */
function toolhostScript() {
  const script = process.env.TOOLHOST || path.join(VENV_BIN, 'toolhost');
  if (!fs.existsSync(script)) {
    throw new Error(`no toolhost at ${script}: create the repository's .venv or set TOOLHOST`);
  }
  return script;
}

function writeFiles(root, files) {
  for (const [name, text] of Object.entries(files)) {
    const file = path.join(root, name);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, text);
  }
}

function memento() {
  const values = new Map();
  return {
    get: (key, fallback) => (values.has(key) ? values.get(key) : fallback),
    update: async (key, value) => void values.set(key, value),
    keys: () => [...values.keys()],
  };
}

/**
 * Activates the extension. options: files (workspace files), settings (toolhost.*
 * user settings; serverCommand defaults to the repository's toolhost), trusted,
 * start (default true: wait until the sidecar runs).
 */
async function activate(options = {}) {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'toolhost-vscode-')));
  const ws = path.join(tmp, 'ws');
  fs.mkdirSync(ws);
  writeFiles(ws, options.files || {});
  // Keep the sidecar's global config and saved outputs inside the test folder.
  process.env.OPENCODE_CONFIG_DIR = path.join(tmp, 'config');
  process.env.TOOLHOST_DATA_DIR = path.join(tmp, 'data');
  stub.setWorkspaceFolder(ws);
  stub.trust.isTrusted = options.trusted !== false;
  const settings = { 'toolhost.serverCommand': [toolhostScript(), 'serve'], ...(options.settings || {}) };
  for (const [key, value] of Object.entries(settings)) {
    if (value === undefined) delete stub.settings[key];
    else stub.settings[key] = value;
  }
  const extension = require(path.join(EXTENSION_ROOT, 'dist', 'extension.js'));
  const context = {
    subscriptions: [],
    extensionPath: EXTENSION_ROOT,
    extensionUri: vscode.Uri.file(EXTENSION_ROOT),
    globalStorageUri: vscode.Uri.file(options.storage || path.join(tmp, 'storage')),
    extension: { id: 'toolhost.toolhost', packageJSON: require(path.join(EXTENSION_ROOT, 'package.json')) },
    globalState: memento(),
    workspaceState: memento(),
  };
  const api = extension.activate(context);
  const session = {
    api,
    extension,
    context,
    tmp,
    ws,
    stub,
    vscode,
    file: (name) => path.join(ws, name),
    uri: (name) => vscode.Uri.file(path.join(ws, name)),
    read: (name) => fs.readFileSync(path.join(ws, name), 'utf8'),
    async dispose() {
      await extension.deactivate();
      for (const d of context.subscriptions.splice(0)) d.dispose();
      fs.rmSync(tmp, { recursive: true, force: true });
    },
  };
  if (options.start !== false) {
    await api.listTools();
  }
  return session;
}

async function waitFor(predicate, what, timeoutMs = 10000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await predicate();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * The pids of the running sidecars this process started (`toolhost serve`, a child of
 * the extension host stand-in), read from /proc: what a test ends from outside the
 * sidecar, where a sandboxed command cannot reach it.
 */
function sidecarPids() {
  const pids = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid …: the name may hold spaces and parentheses.
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(ppid) !== process.pid || state === 'Z') continue;
      const argv = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (argv.some((arg) => path.basename(arg) === 'toolhost') && argv.includes('serve')) {
        pids.push(Number(entry));
      }
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** The JSON params of the `initialize` request, from the verbose trace in the log. */
function initializeParams() {
  const log = stub.recorded.log.join('\n');
  const match = /Sending request 'initialize[^\n]*\nParams: (\{[\s\S]*?\n\})/.exec(log);
  if (!match) throw new Error('no initialize request in the trace (set toolhost.trace.server to verbose)');
  return JSON.parse(match[1]);
}

/** Answers the next permission prompt(s) by clicking the button `pick(items)` names. */
function answerPrompts(pick) {
  stub.answers.message = (message, items) => pick(items, message);
}

module.exports = {
  activate,
  waitFor,
  initializeParams,
  sidecarPids,
  answerPrompts,
  stub,
  vscode,
  REPO_ROOT,
  VENV_BIN,
  toolhostScript,
  writeFiles,
};
