// Finding and starting the sidecar: toolhost.serverCommand, the selected Python
// environment, PATH, and the private environment installed from the bundled wheel;
// a command that fails; restarts.
'use strict';
const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');
const { afterEach, test } = require('node:test');
const assert = require('node:assert/strict');
const { activate, sidecarPids, stub, vscode, waitFor, VENV_BIN } = require('./harness');

const EXTENSION_ROOT = path.resolve(__dirname, '..', '..');
const ORIGINAL_PATH = process.env.PATH;
let s;

/** PATH without any folder that holds a `toolhost`. */
function pathWithoutToolhost() {
  return ORIGINAL_PATH.split(path.delimiter)
    .filter((dir) => dir && !fs.existsSync(path.join(dir, 'toolhost')))
    .join(path.delimiter);
}

function started() {
  return stub.recorded.log.filter((line) => line.startsWith('Starting the sidecar'));
}

afterEach(async () => {
  process.env.PATH = ORIGINAL_PATH;
  delete process.env.PIP_NO_COMPILE;
  stub.extensionsById.delete('ms-python.python');
  if (s) await s.dispose();
  s = undefined;
  stub.reset();
});

test('toolhost on PATH is found when no serverCommand is set', async () => {
  process.env.PATH = `${VENV_BIN}${path.delimiter}${pathWithoutToolhost()}`;
  s = await activate({ settings: { 'toolhost.serverCommand': undefined } });
  assert.match(started()[0], /\(PATH\): .*\.venv\/bin\/toolhost serve --stdio$/);
});

test("the toolhost beside the Python extension's selected interpreter comes first", async () => {
  process.env.PATH = pathWithoutToolhost();
  const python = path.join(VENV_BIN, 'python');
  stub.extensionsById.set('ms-python.python', {
    id: 'ms-python.python',
    isActive: true,
    exports: {
      environments: {
        getActiveEnvironmentPath: () => ({ path: python }),
        resolveEnvironment: async () => ({ executable: { uri: vscode.Uri.file(python) } }),
        onDidChangeActiveEnvironmentPath: new vscode.EventEmitter().event,
      },
    },
  });
  s = await activate({ settings: { 'toolhost.serverCommand': undefined } });
  assert.match(started()[0], /\(interpreter\): .*\.venv\/bin\/toolhost serve/);
});

test('a command that cannot start is reported, and calls say why', async () => {
  s = await activate({
    settings: { 'toolhost.serverCommand': ['/nonexistent/toolhost', 'serve'] },
    start: false,
  });
  await assert.rejects(s.api.listTools(), /\/nonexistent\/toolhost serve\) did not start/);
  const item = stub.statusItems.filter((i) => i.id === 'toolhost.status').at(-1);
  assert.equal(item.detail, 'failed to start');
  assert.equal(item.severity, vscode.LanguageStatusSeverity.Error);
});

test('Toolhost: Restart starts a new sidecar; a changed setting restarts it too', async () => {
  s = await activate();
  assert.equal(started().length, 1);
  await vscode.commands.executeCommand('toolhost.restart');
  assert.equal(started().length, 2);
  assert.ok((await s.api.listTools()).length > 0);
  stub.setSetting('toolhost.diagnostics.waitMs', 500);
  await waitFor(() => started().length === 3, 'a restart after toolhost.diagnostics.waitMs changed');
  stub.setSetting('toolhost.diagnostics.waitMs', undefined);
  await waitFor(() => started().length === 4, 'a restart after the setting was reset');
  assert.ok((await s.api.listTools()).length > 0);
});

test('the log shows each sidecar line once, and a clean stop is no error', async () => {
  s = await activate();
  const channel = stub.outputChannels.filter((c) => c.name === 'toolhost').at(-1);
  const from = channel.lines.length;
  await vscode.commands.executeCommand('toolhost.restart');
  assert.ok((await s.api.listTools()).length > 0);
  await waitFor(
    () => channel.lines.slice(from).some((l) => l.includes('toolhost.server: serving')),
    'the new sidecar saying what it serves',
  );
  const lines = channel.lines.slice(from).join('\n');
  const serving = lines.match(/toolhost\.server: serving [^\n]*/g) || [];
  assert.equal(serving.length, 1, `one line for one record:\n${lines}`);
  assert.doesNotMatch(lines, /\[error\] Server process exited with code 0/);
  assert.match(lines, /\[info\] The sidecar stopped \(exit code 0\)\./);
});

test('a restart while a review waits logs each sidecar line once', async () => {
  s = await activate();
  const channel = stub.outputChannels.filter((c) => c.name === 'toolhost').at(-1);
  const call = s.api.executeTool('bash', { command: 'echo waits', description: 'Waits' }).catch((e) => e);
  await waitFor(() => s.api.pendingReviews().length === 1, 'the review');
  const from = channel.lines.length;
  await vscode.commands.executeCommand('toolhost.restart');
  await call;
  await waitFor(
    () => channel.lines.slice(from).some((l) => l.includes('toolhost.server: serving')),
    'the new sidecar serving',
  );
  // A record's words, whether it came as window/logMessage or on stderr.
  const words = (line) =>
    line
      .replace(/^\[\w+\] /, '') // the stub's own mark of the channel method
      .replace(/^.*?\b(DEBUG|INFO|WARNING|ERROR) (?=\S+: )/, '')
      .replace(/^\[\w+\s*- [^\]]*\] /, '')
      .trim();
  const shown = channel.lines.slice(from);
  const sidecar = shown.map(words).filter((l) => /^(pygls|toolhost)\.[\w.]+: /.test(l));
  const twice = sidecar.filter((line, i) => sidecar.indexOf(line) !== i);
  assert.deepEqual(twice, [], shown.join('\n'));
});

test('a sidecar that exits is started again, and the next call works', async () => {
  s = await activate({ settings: { 'toolhost.review.byDefault': false } });
  // Ended from outside: a sandboxed command cannot signal the sidecar (Landlock's
  // signal scope, tools/bash/sandbox/zygote.py), and this test is not about the sandbox.
  // vscode-languageclient starts the new one itself: a new pid, no new log line of ours.
  const [first, ...more] = sidecarPids();
  assert.ok(first && more.length === 0, `one sidecar runs: ${[first, ...more]}`);
  const running = s.file('running');
  const call = s.api.executeTool('bash', { command: `touch '${running}'; sleep 30`, description: 'Waits' });
  const failed = assert.rejects(call); // the call in flight fails, rather than wait forever
  await waitFor(() => fs.existsSync(running), 'the command to run');
  process.kill(first, 'SIGKILL');
  await failed;
  const tools = await waitFor(
    () => s.api.listTools().catch(() => undefined),
    'a working sidecar again',
    30000,
  );
  assert.ok(tools.some((t) => t.id === 'read'));
  const [second, ...others] = sidecarPids();
  assert.ok(second && second !== first && others.length === 0, `a new sidecar: ${[second, ...others]}`);
  const read = await s.api.executeTool('read', { filePath: '.' });
  assert.equal(read.isError, false, read.output);
  stub.setSetting('toolhost.review.byDefault', undefined);
});

test('no toolhost anywhere: a missed install offer is found again, and installs the bundled wheel', async () => {
  const bundled = path.join(EXTENSION_ROOT, 'bundled');
  // A clean checkout has no wheel yet: it is built at package time.
  if (!fs.existsSync(bundled) || !fs.readdirSync(bundled).some((name) => name.endsWith('.whl'))) {
    const built = spawnSync(process.execPath, [path.join(EXTENSION_ROOT, 'scripts', 'build-wheel.mjs')], {
      encoding: 'utf8',
    });
    assert.equal(built.status, 0, built.stderr);
  }
  process.env.PATH = pathWithoutToolhost();
  // What is tested is the install's steps, not pip compiling bytecode (a third of its time).
  process.env.PIP_NO_COMPILE = '1';
  const answered = [];
  let clickLater;
  const later = new Promise((resolve) => (clickLater = resolve));
  stub.answers.message = (message, items) => {
    answered.push({ message, items });
    return later; // the toast went by unseen; its button is clicked after the install (below)
  };
  s = await activate({ settings: { 'toolhost.serverCommand': undefined }, start: false });
  const storage = s.context.globalStorageUri.fsPath;
  await waitFor(() => answered.length === 1, 'the install offer');
  const item = () => stub.statusItems.filter((i) => i.id === 'toolhost.status').at(-1);
  await waitFor(() => item().detail === 'not installed', 'the status item');
  assert.equal(item().command.command, 'toolhost.install', 'Install on the status item');
  // List Tools says it is not installed, with the button.
  stub.answers.message = (message, items) => {
    answered.push({ message, items });
    return items.includes('Install toolhost') ? 'Install toolhost' : undefined;
  };
  void vscode.commands.executeCommand('toolhost.listTools');
  await waitFor(
    () => started().some((l) => l.includes('(private environment)')),
    'the installed sidecar to start',
    240000,
  );
  assert.match(answered[0].message, /no `toolhost` command was found/);
  assert.deepEqual(answered[0].items, ['Install toolhost', 'Open Settings']);
  assert.match(answered[1].message, /toolhost is not installed/);
  assert.deepEqual(answered[1].items, ['Install toolhost']);
  await waitFor(
    () => stub.recorded.messages.some((m) => /toolhost: installed into/.test(m.message)),
    'the notice that the install finished',
  );
  assert.ok(stub.recorded.progress.some((p) => p.options.title === 'toolhost: installing'));
  assert.ok(fs.existsSync(path.join(storage, 'venv', 'bin', 'toolhost')));
  assert.ok((await s.api.listTools()).some((t) => t.id === 'read'));
  // The first offer, found in the notification list and clicked now: nothing to install
  // (not a second install over the venv the running sidecar uses).
  clickLater('Install toolhost');
  await waitFor(
    () => stub.recorded.messages.some((m) => /toolhost is installed and running/.test(m.message)),
    'the notice that there is nothing to install',
  );
  const installs = stub.recorded.progress.filter((p) => p.options.title === 'toolhost: installing');
  assert.equal(installs.length, 1, 'one install');
  assert.ok(
    (await s.api.listTools()).some((t) => t.id === 'read'),
    'still running',
  );

  // Next time the private environment is found without asking.
  await s.extension.deactivate();
  for (const d of s.context.subscriptions.splice(0)) d.dispose();
  stub.reset();
  const again = await activate({ settings: { 'toolhost.serverCommand': undefined }, storage });
  try {
    assert.match(started()[0], /\(private environment\)/);
    assert.equal(stub.recorded.messages.length, 0);
  } finally {
    await again.dispose();
  }
});
