/**
 * Finding the `toolhost` console script: the selected Python environment (through
 * the ms-python extension's API, when it is installed), then PATH, then the private
 * environment this extension can create in its global storage from the wheel that
 * ships inside the .vsix.
 */
import { spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import { errorText, traceInfo, traceWarn } from './logging';

const IS_WINDOWS = process.platform === 'win32';
const SCRIPT = IS_WINDOWS ? 'toolhost.exe' : 'toolhost';
const BIN = IS_WINDOWS ? 'Scripts' : 'bin';

/** The subset of ms-python's exported API used here (`@vscode/python-extension`). */
interface PythonApi {
  environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { path: string } | undefined;
    resolveEnvironment(
      env: { path: string } | string,
    ): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
    onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
  };
}

async function pythonApi(): Promise<PythonApi | undefined> {
  const extension = vscode.extensions.getExtension<PythonApi>('ms-python.python');
  if (!extension) {
    return undefined;
  }
  try {
    return extension.isActive ? extension.exports : await extension.activate();
  } catch (error) {
    traceWarn(`The Python extension could not be activated: ${errorText(error)}`);
    return undefined;
  }
}

/** The interpreter selected in the ms-python extension for `resource`, if any. */
export async function selectedInterpreter(resource?: vscode.Uri): Promise<string | undefined> {
  const environments = (await pythonApi())?.environments;
  if (!environments) {
    return undefined;
  }
  try {
    const active = environments.getActiveEnvironmentPath(resource);
    const resolved = active && (await environments.resolveEnvironment(active));
    return resolved?.executable.uri?.fsPath;
  } catch (error) {
    traceWarn(`Could not resolve the selected Python environment: ${errorText(error)}`);
    return undefined;
  }
}

/** Fires when the user selects another interpreter in the Python extension. */
export async function onDidChangeInterpreter(listener: () => void): Promise<vscode.Disposable | undefined> {
  const environments = (await pythonApi())?.environments;
  return environments?.onDidChangeActiveEnvironmentPath(() => listener());
}

/** `toolhost` installed beside an interpreter (same venv / bin folder). */
export function scriptBeside(interpreter: string): string | undefined {
  return executable(path.join(path.dirname(interpreter), SCRIPT));
}

export function scriptOnPath(env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    const found = dir && executable(path.join(dir, SCRIPT));
    if (found) {
      return found;
    }
  }
  return undefined;
}

export function privateVenv(storage: vscode.Uri): string {
  return path.join(storage.fsPath, 'venv');
}

export function scriptInPrivateVenv(storage: vscode.Uri): string | undefined {
  return executable(path.join(privateVenv(storage), BIN, SCRIPT));
}

function executable(file: string): string | undefined {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile() ? file : undefined;
  } catch {
    return undefined;
  }
}

/** The toolhost wheel built into the .vsix at package time (`bundled/`). */
export function bundledWheel(extensionPath: string): string | undefined {
  const dir = path.join(extensionPath, 'bundled');
  const wheels = fs.existsSync(dir)
    ? fs.readdirSync(dir).filter((name) => /^toolhost_sidecar-.*\.whl$/.test(name))
    : [];
  return wheels.length ? path.join(dir, wheels.sort().at(-1)!) : undefined;
}

/** A Python 3.11+ to build the private venv with: the selected one, else PATH's. */
export async function findPython(selected: string | undefined): Promise<string | undefined> {
  const candidates = [selected, ...(IS_WINDOWS ? ['python', 'py'] : ['python3', 'python'])];
  for (const candidate of candidates) {
    if (candidate && (await isPython311(candidate))) {
      return candidate;
    }
  }
  return undefined;
}

async function isPython311(python: string): Promise<boolean> {
  const check = 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)';
  return (await run(python, ['-c', check], () => undefined)) === 0;
}

/**
 * Creates (or refreshes) the private venv and pip-installs the wheel into it.
 * pip fetches toolhost's dependencies from the package index; its output goes to
 * `output` line by line. Resolves to the venv's `toolhost`, or throws saying why.
 */
export async function installPrivate(
  python: string,
  wheel: string,
  storage: vscode.Uri,
  output: (line: string) => void,
): Promise<string> {
  const venv = privateVenv(storage);
  fs.mkdirSync(storage.fsPath, { recursive: true });
  traceInfo(`Creating ${venv} with ${python}`);
  if ((await run(python, ['-m', 'venv', venv], output)) !== 0) {
    throw new Error(`"${python} -m venv ${venv}" failed; see the toolhost log`);
  }
  const venvPython = path.join(venv, BIN, IS_WINDOWS ? 'python.exe' : 'python');
  const pip = ['-m', 'pip', 'install', '--disable-pip-version-check', '--upgrade', wheel];
  if ((await run(venvPython, pip, output)) !== 0) {
    throw new Error(`pip could not install ${path.basename(wheel)}; see the toolhost log`);
  }
  const script = scriptInPrivateVenv(storage);
  if (!script) {
    throw new Error(`pip installed ${path.basename(wheel)} but ${venv} has no ${SCRIPT}`);
  }
  return script;
}

/** Runs a program to its end; its exit code, or -1 when it could not start. */
function run(command: string, args: string[], output: (line: string) => void): Promise<number> {
  return new Promise((resolve) => {
    let child;
    try {
      child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    } catch {
      resolve(-1);
      return;
    }
    const forward = (chunk: Buffer) =>
      chunk
        .toString()
        .split(/\r?\n/)
        .filter(Boolean)
        .forEach((line) => output(line));
    child.stdout.on('data', forward);
    child.stderr.on('data', forward);
    child.on('error', () => resolve(-1));
    child.on('close', (code) => resolve(code ?? -1));
  });
}
