// The exported API against the real sidecar: activation, initialize, listTools,
// executeTool (an unsaved buffer, tool errors, cancellation), progress and status.
'use strict';
const { after, before, test } = require('node:test');
const assert = require('node:assert/strict');
const { activate, initializeParams, stub, vscode, waitFor } = require('./harness');

let s;
before(async () => {
  s = await activate({
    files: { 'notes.txt': 'on disk\n' },
    settings: {
      'toolhost.trace.server': 'verbose',
      'toolhost.diagnostics.waitMs': 1234,
      // These tests are about calls, not review: commands run without asking.
      'toolhost.review.byDefault': false,
    },
  });
});
after(() => s.dispose());

test('initialize advertises exactly the requests the extension answers', () => {
  const params = initializeParams();
  assert.deepEqual(params.initializationOptions.editor, {
    permissionAsk: true,
    applyEdit: true,
    openDocument: true,
    diagnostics: true,
    lsp: true,
    question: true,
    task: true,
  });
  assert.deepEqual(params.initializationOptions.diagnostics, { waitMs: 1234 });
  assert.deepEqual(params.initializationOptions.config, {});
  assert.equal('permissionDefaults' in params.initializationOptions, false, 'review is off in this file');
  assert.equal(params.initializationOptions.trusted, true);
  assert.equal(params.rootUri, s.uri('').toString().replace(/\/$/, ''));
});

test('listTools returns the catalogue, including lsp for an editor that answers editor/lsp', async () => {
  const tools = await s.api.listTools();
  const ids = tools.map((t) => t.id);
  for (const id of ['read', 'edit', 'write', 'bash', 'grep', 'glob', 'lsp']) {
    assert.ok(ids.includes(id), `${id} missing from ${ids}`);
  }
  const read = tools.find((t) => t.id === 'read');
  assert.equal(read.kind, 'read');
  assert.equal(read.annotations.readOnlyHint, true);
  assert.equal(read.parameters.type, 'object');
  assert.ok(read.parameters.required.includes('filePath'));
});

test('the status item shows the sidecar as ready with its tool count', async () => {
  const item = stub.statusItems.find((i) => i.id === 'toolhost.status');
  await waitFor(() => /ready · \d+ tools/.test(item.detail), 'a tool count in the status item');
  assert.equal(item.text, '$(tools) toolhost');
  assert.equal(item.command.command, 'toolhost.showLog');
});

/** The newest language status item with this id (one is made again after it went). */
const statusItem = (id) => stub.statusItems.filter((i) => i.id === id).at(-1);

test('the status item says which runtime serves JS/TS custom tools (toolhost doctor)', async () => {
  await waitFor(
    () => /^JS\/TS tools: (Bun|Node\.js)/.test(statusItem('toolhost.js')?.text),
    'the JS/TS runtime in the status item',
  );
  // Its own line, short enough for the hover; the main line stays short too.
  assert.doesNotMatch(statusItem('toolhost.status').detail, /JS\/TS|bash:/);
  assert.ok(statusItem('toolhost.status').detail.length <= 40, statusItem('toolhost.status').detail);
});

test('the status item says whether bash runs in the sandbox (toolhost doctor)', async () => {
  await waitFor(
    () => /^bash: sandboxed \((landlock|bwrap)\)$/.test(statusItem('toolhost.bash')?.text),
    'the sandbox in the status item',
  );
  assert.equal(statusItem('toolhost.bash').severity, vscode.LanguageStatusSeverity.Information);
});

test('read serves the unsaved editor buffer, not the disk', async () => {
  await stub.type(s.file('notes.txt'), [
    new vscode.TextEdit(new vscode.Range(0, 0, 0, 0), 'typed, not saved\n'),
  ]);
  const result = await s.api.executeTool('read', { filePath: 'notes.txt' });
  assert.equal(result.isError, false);
  assert.match(result.output, /1: typed, not saved\n2: on disk/);
  assert.equal(s.read('notes.txt'), 'on disk\n');
});

test('a tool failure is a result with isError and a kind, not a rejection', async () => {
  const missing = await s.api.executeTool('read', { filePath: 'nope.txt' });
  assert.equal(missing.isError, true);
  assert.equal(missing.metadata.error, 'not_found');
  const invalid = await s.api.executeTool('read', { offset: 'x' });
  assert.equal(invalid.isError, true);
  assert.equal(invalid.metadata.error, 'invalid_arguments');
  const unknown = await s.api.executeTool('no_such_tool', {});
  assert.equal(unknown.metadata.error, 'unknown_tool');
});

test('executeTool rejects arguments that are not an object before sending anything', async () => {
  await assert.rejects(s.api.executeTool('read', ['a']), /args must be an object/);
  await assert.rejects(s.api.executeTool('', {}), /tool must be a tool id/);
});

test('the status bar shows the running call and its latest output line, and hides after', async () => {
  const item = stub.statusBarItems.find((i) => i.id === 'toolhost.calls');
  assert.ok(item, 'no toolhost.calls status bar item');
  const seen = [];
  const watch = setInterval(() => item.visible && seen.at(-1) !== item.text && seen.push(item.text), 10);
  const command = 'for i in 1 2 3 4; do echo "step $i"; sleep 0.4; done';
  const result = await s.api.executeTool('bash', { command, description: 'Counts to four' });
  clearInterval(watch);
  assert.equal(result.isError, false, result.output);
  assert.ok(
    seen.some((text) => /^\$\(loading~spin\) bash: step [1-4]$/.test(text)),
    `the latest output line never showed: ${JSON.stringify(seen)}`,
  );
  // Once output has arrived, the title (from $/progress) never replaces it again.
  const first = seen.findIndex((text) => /step/.test(text));
  assert.deepEqual(
    seen.slice(first).filter((text) => !/step/.test(text)),
    [],
    `the output line was replaced: ${JSON.stringify(seen)}`,
  );
  assert.equal(item.command.command, 'toolhost.stopCall');
  assert.equal(item.visible, false, 'the item should hide once the call returned');
});

test('Stop in the status bar ends a running command and everything it started', async () => {
  const item = stub.statusBarItems.find((i) => i.id === 'toolhost.calls');
  const marker = `${process.pid}${Date.now() % 1000}`;
  const command = `echo started; sleep 1${marker} & sleep 2${marker} & wait`;
  const call = s.api.executeTool('bash', { command, description: 'Sleeps in two processes' });
  await waitFor(() => /bash: started/.test(item.text), 'the call in the status bar', 15000);
  assert.equal(sleepers(marker).length, 2, 'both sleeps should be running before the stop');
  await vscode.commands.executeCommand('toolhost.stopCall');
  const result = await call;
  assert.equal(result.isError, true);
  assert.equal(result.metadata.error, 'cancelled');
  assert.equal(result.metadata.stoppedBy, 'user');
  assert.match(result.output, /The user stopped this bash call/);
  await waitFor(() => sleepers(marker).length === 0, 'no sleep to survive the stop', 5000);
  const after = await s.api.executeTool('read', { filePath: 'notes.txt' });
  assert.equal(after.isError, false, 'the sidecar should keep serving after a stop');
});

/** The `sleep` processes of one test still alive (by their unique argument). */
function sleepers(marker) {
  const ps = require('child_process').spawnSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
  return ps.stdout.split('\n').filter((line) => new RegExp(`sleep [12]${marker}$`).test(line.trim()));
}

test('cancelling the token cancels the call and rejects with CancellationError', async () => {
  const source = new vscode.CancellationTokenSource();
  const started = Date.now();
  const call = s.api.executeTool(
    'bash',
    { command: 'sleep 30', description: 'Sleeps' },
    { token: source.token },
  );
  setTimeout(() => source.cancel(), 500);
  await assert.rejects(call, (error) => error instanceof vscode.CancellationError);
  assert.ok(Date.now() - started < 10000, 'the cancelled call kept running');
  const after = await s.api.executeTool('read', { filePath: 'notes.txt' });
  assert.equal(after.isError, false, 'the sidecar should keep serving after a cancel');
});

test('sessionID and callID pass through to the sidecar', async () => {
  const result = await s.api.executeTool(
    'todowrite',
    { todos: [{ content: 'ship it', status: 'pending', priority: 'high', id: '1' }] },
    { sessionID: 'ses_api_test', callID: 'call_api_test' },
  );
  assert.equal(result.isError, false, result.output);
  const read = await s.api.executeTool('todoread', {}, { sessionID: 'ses_api_test' });
  assert.match(read.output, /ship it/);
  const other = await s.api.executeTool('todoread', {}, { sessionID: 'ses_other' });
  assert.doesNotMatch(other.output, /ship it/);
});
