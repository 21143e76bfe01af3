// Restricted Mode: an untrusted workspace gets only read-only tools, and only the
// user's own settings decide what runs.
'use strict';
const fs = require('fs');
const { after, before, test } = require('node:test');
const assert = require('node:assert/strict');
const { activate, initializeParams, stub, toolhostScript, waitFor } = require('./harness');

let s;
before(async () => {
  s = await activate({
    trusted: false,
    files: { 'a.txt': 'hello\n' },
    settings: { 'toolhost.trace.server': 'verbose' },
  });
});
after(() => s.dispose());

/** The toolhost status item's detail, as last set. */
const statusDetail = () => stub.statusItems.filter((i) => i.id === 'toolhost.status').at(-1).detail;
const stoppedInRestrictedMode = () =>
  waitFor(() => statusDetail() === 'off in Restricted Mode', 'the sidecar to stop');

test('the sidecar is told the workspace is not trusted', () => {
  assert.equal(initializeParams().initializationOptions.trusted, false);
});

test("the sidecar's notice is shown whole: with a button, so VS Code does not cut it to a line", async () => {
  const notice = await waitFor(
    () => stub.recorded.messages.find((m) => /this folder is not trusted/.test(m.message)),
    "the sidecar's Restricted Mode notice",
  );
  assert.deepEqual(notice.items, ['Show Log']);
  assert.equal(notice.severity, 'warning');
  assert.match(
    notice.message,
    /only the read-only tools are offered \(the editor switched the others off\)\.$/,
  );
});

test('the sidecar starts with every non-read-only built-in switched off', () => {
  const { config } = initializeParams().initializationOptions;
  for (const id of ['bash', 'edit', 'write', 'multiedit', 'apply_patch', 'todowrite']) {
    assert.equal(config.tools[id], false, `${id} should be off in Restricted Mode`);
  }
  for (const id of ['read', 'grep', 'glob', 'list']) {
    assert.equal(config.tools[id], undefined, `${id} should stay on`);
  }
  assert.deepEqual(config.permission, { external_directory: 'deny' });
});

test('only read-only tools are offered', async () => {
  const tools = await s.api.listTools();
  assert.ok(tools.length > 0);
  assert.ok(
    tools.every((t) => t.annotations.readOnlyHint === true),
    tools.map((t) => t.id).join(),
  );
  assert.ok(tools.some((t) => t.id === 'read'));
  const item = stub.statusItems.filter((i) => i.id === 'toolhost.restricted').at(-1);
  assert.equal(item.text, 'read-only (Restricted Mode)');
  // Copilot's static tools: the read-only ones only (their when clauses compare this key).
  assert.equal(stub.contextKeys['toolhost.staticTools'], 'readOnly');
});

test('a tool that changes things is refused with a result the model can read', async () => {
  for (const [tool, args] of [
    ['write', { filePath: 'b.txt', content: 'x' }],
    ['bash', { command: 'touch c.txt', description: 'Creates a file' }],
  ]) {
    const result = await s.api.executeTool(tool, args);
    assert.equal(result.isError, true);
    assert.equal(result.metadata.error, 'permission_denied');
    assert.match(result.output, /not trusted \(Restricted Mode\)/);
  }
  assert.ok(!fs.existsSync(s.file('b.txt')) && !fs.existsSync(s.file('c.txt')));
  const read = await s.api.executeTool('read', { filePath: 'a.txt' });
  assert.equal(read.isError, false);
});

test("a workspace's serverCommand is ignored while untrusted", async () => {
  stub.setSetting('toolhost.serverCommand', ['/nonexistent/evil'], 'workspace');
  stub.setSetting('toolhost.serverCommand', [toolhostScript(), 'serve']);
  await waitFor(
    () => stub.recorded.log.filter((l) => l.includes('Starting the sidecar')).length >= 2,
    'a restart',
  );
  const tools = await s.api.listTools();
  assert.ok(tools.some((t) => t.id === 'read'));
  assert.ok(!stub.recorded.log.some((l) => l.includes('/nonexistent/evil')));
});

test('granting trust restarts the sidecar with every tool', async () => {
  stub.setSetting('toolhost.serverCommand', undefined, 'workspace');
  stub.trust.isTrusted = true;
  stub.emitters.trust.fire();
  const tools = await waitFor(async () => {
    const list = await s.api.listTools().catch(() => []);
    return list.some((t) => t.id === 'edit') && list;
  }, 'edit to be offered after trust was granted');
  assert.ok(tools.some((t) => t.id === 'bash'));
  assert.equal(stub.contextKeys['toolhost.staticTools'], 'all');
});

test('a folder with its own tool code does not start the sidecar until trusted', async () => {
  await s.dispose();
  stub.reset();
  // A custom tool file runs when the sidecar loads it: it must not load untrusted.
  const evil = "open('RAN', 'w').write('custom tool code ran')\n";
  s = await activate({
    trusted: false,
    start: false,
    files: { '.opencode/tools/evil.py': evil, 'a.txt': 'x\n' },
  });
  await assert.rejects(
    s.api.listTools(),
    /not trusted \(Restricted Mode\) and has its own tool code \(\.opencode\/tools\/evil\.py\)/,
  );
  assert.equal(statusDetail(), 'off in Restricted Mode');
  assert.ok(!fs.existsSync(s.file('RAN')));
  assert.ok(!stub.recorded.log.some((l) => l.startsWith('Starting the sidecar')));
});

test('a tools folder moved back in (mv: one event, for the folder) stops the sidecar', async () => {
  await s.dispose();
  stub.reset();
  s = await activate({ trusted: false, files: { 'away/tools/back.py': '# moved back\n' } });
  assert.ok((await s.api.listTools()).length > 0);
  const watcher = stub.watchers.find((w) => w.pattern.pattern === '{.opencode,.opencode/**}');
  assert.ok(watcher, 'no watcher on .opencode');
  watcher.created.fire(s.uri('.opencode/notes.md')); // not a tool: nothing happens
  assert.ok((await s.api.listTools()).length > 0);
  fs.mkdirSync(s.file('.opencode'), { recursive: true });
  fs.renameSync(s.file('away/tools'), s.file('.opencode/tools'));
  watcher.created.fire(s.uri('.opencode/tools')); // what VS Code reports for the mv
  await stoppedInRestrictedMode();
  await assert.rejects(s.api.listTools(), /has its own tool code/);
});

test('a tools folder moved in, reported as the folder and its file, is warned about once', async () => {
  await s.dispose();
  stub.reset();
  s = await activate({ trusted: false, files: { 'away/tools/back.py': '# moved back\n' } });
  assert.ok((await s.api.listTools()).length > 0);
  const channel = stub.outputChannels.filter((c) => c.name === 'toolhost').at(-1);
  const from = channel.lines.length;
  const watcher = stub.watchers.find((w) => w.pattern.pattern === '{.opencode,.opencode/**}');
  fs.mkdirSync(s.file('.opencode'), { recursive: true });
  fs.renameSync(s.file('away/tools'), s.file('.opencode/tools'));
  watcher.created.fire(s.uri('.opencode/tools'));
  watcher.created.fire(s.uri('.opencode/tools/back.py'));
  await stoppedInRestrictedMode();
  await assert.rejects(s.api.listTools(), /has its own tool code/);
  await new Promise((resolve) => setTimeout(resolve, 300));
  const lines = channel.lines.slice(from).join('\n');
  const warned = lines.match(/has its own tool code/g) || [];
  assert.equal(warned.length, 1, `one warning:\n${lines}`);
});

test('a tool file that appears in an untrusted folder stops the sidecar', async () => {
  await s.dispose();
  stub.reset();
  s = await activate({ trusted: false, files: { 'a.txt': 'x\n' } });
  assert.ok((await s.api.listTools()).length > 0);
  const watcher = stub.watchers.find((w) => w.pattern.pattern === '{.opencode,.opencode/**}');
  assert.ok(watcher, 'no watcher on the custom tool folders');
  fs.mkdirSync(s.file('.opencode/tools'), { recursive: true });
  fs.writeFileSync(s.file('.opencode/tools/late.py'), '# arrived later\n');
  watcher.created.fire(s.uri('.opencode/tools/late.py'));
  await stoppedInRestrictedMode();
  await assert.rejects(s.api.listTools(), /has its own tool code/);
});
