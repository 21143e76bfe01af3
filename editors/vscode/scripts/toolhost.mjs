// Finds the toolhost checkout this extension lives in ($TOOLHOST_REPO overrides), and
// a Python / `toolhost` to build from: $TOOLHOST_PYTHON / $TOOLHOST, else the
// repository's .venv, else PATH.
import { existsSync } from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const EXTENSION_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
// $TOOLHOST_REPO: for a copy of editors/vscode outside the checkout (the e2e test packages one).
export const REPO_ROOT = process.env.TOOLHOST_REPO || resolve(EXTENSION_ROOT, '..', '..');

const BIN = process.platform === 'win32' ? 'Scripts' : 'bin';

function fromVenv(name) {
  const file = join(REPO_ROOT, '.venv', BIN, process.platform === 'win32' ? `${name}.exe` : name);
  return existsSync(file) ? file : undefined;
}

export function toolhostCommand() {
  return process.env.TOOLHOST || fromVenv('toolhost') || 'toolhost';
}

/** The `toolhost` to run, or undefined when there is none (a fresh clone, before any venv). */
export function findToolhost() {
  const command = toolhostCommand();
  if (command !== 'toolhost') {
    return existsSync(command) ? command : undefined;
  }
  const names = process.platform === 'win32' ? ['toolhost.exe', 'toolhost.cmd'] : ['toolhost'];
  for (const dir of (process.env.PATH || '').split(delimiter).filter(Boolean)) {
    for (const name of names) {
      if (existsSync(join(dir, name))) return join(dir, name);
    }
  }
  return undefined;
}

export function pythonCommand() {
  return (
    process.env.TOOLHOST_PYTHON || fromVenv('python') || (process.platform === 'win32' ? 'python' : 'python3')
  );
}
