// permission/ask: the proposed edit in the diff editor, then a notification whose
// buttons decide; Reject leaves the file alone; feedback reaches the model.
'use strict';
const { after, before, beforeEach, test } = require('node:test');
const assert = require('node:assert/strict');
const { activate, answerPrompts, stub, vscode, waitFor } = require('./harness');

const INDENTED = [
  'class Box:',
  '    def values(self):',
  ...Array.from({ length: 10 }, (_, i) => `        v${i} = ${i}`),
  '        return v0',
  '',
].join('\n');

let s;
let session = 0;
before(async () => {
  s = await activate({
    files: {
      'a.txt': 'alpha\nbeta\ngamma\n',
      'box.py': INDENTED,
      'keep.txt': 'keep me\n',
      'other.txt': 'one\n',
      'last.txt': 'one\n',
    },
    settings: { 'toolhost.config': { permission: { edit: 'ask', bash: 'ask' } } },
  });
});
after(() => s.dispose());
beforeEach(() => stub.reset());

/** A fresh session per test, so "Always allow" in one cannot answer another. */
async function readThenRun(tool, args, file) {
  const sessionID = `ses_perm_${++session}`;
  if (file) {
    const read = await s.api.executeTool('read', { filePath: file }, { sessionID });
    assert.equal(read.isError, false, read.output);
  }
  return s.api.executeTool(tool, args, { sessionID });
}

function diffCommand() {
  return stub.recorded.commands.find((c) => c.id === 'vscode.diff');
}

test('Allow once: the diff opens first without focus, then the edit lands', async () => {
  let seenDiff;
  answerPrompts((items) => {
    seenDiff = diffCommand();
    seenDiff.proposed = stub.findDocument(seenDiff.args[1])?.getText();
    seenDiff.tabs = stub.tabGroup.tabs.length;
    assert.deepEqual(items, ['Allow once', 'Always allow (a.txt)', 'Reject', 'Reject with feedback…']);
    return 'Allow once';
  });
  const result = await readThenRun(
    'edit',
    { filePath: 'a.txt', oldString: 'beta', newString: 'BETA' },
    'a.txt',
  );
  assert.equal(result.isError, false, result.output);
  assert.equal(s.read('a.txt'), 'alpha\nBETA\ngamma\n');

  assert.ok(seenDiff, 'no diff editor was opened before the prompt');
  const [left, right, title, options] = seenDiff.args;
  assert.equal(left.toString(), s.uri('a.txt').toString());
  assert.equal(right.scheme, 'toolhost-proposed');
  assert.equal(right.path, s.uri('a.txt').path, 'the proposed document keeps the file name (and language)');
  assert.equal(seenDiff.proposed, 'alpha\nBETA\ngamma\n');
  assert.match(title, /a\.txt ↔ proposed by edit/);
  assert.deepEqual(options, { preview: false, preserveFocus: true });
  assert.equal(seenDiff.tabs, 1);

  const prompt = stub.recorded.messages[0];
  assert.equal(prompt.severity, 'information');
  assert.deepEqual(prompt.options, { modal: false });
  assert.match(prompt.message, /toolhost: Edit a\.txt/);
  assert.equal(stub.tabGroup.tabs.length, 0, 'the diff tab should close once answered');
});

test('Reject leaves the file untouched and the model is told', async () => {
  answerPrompts(() => 'Reject');
  const result = await readThenRun(
    'edit',
    { filePath: 'keep.txt', oldString: 'keep', newString: 'lose' },
    'keep.txt',
  );
  assert.equal(result.isError, true);
  assert.equal(result.metadata.error, 'permission_rejected');
  assert.equal(s.read('keep.txt'), 'keep me\n');
  assert.equal(stub.tabGroup.tabs.length, 0);
});

test('a dismissed notification is a rejection', async () => {
  answerPrompts(() => undefined);
  const result = await readThenRun(
    'edit',
    { filePath: 'keep.txt', oldString: 'keep', newString: 'lose' },
    'keep.txt',
  );
  assert.equal(result.metadata.error, 'permission_rejected');
  assert.equal(s.read('keep.txt'), 'keep me\n');
});

test('Reject with feedback: the words typed reach the tool output', async () => {
  answerPrompts(() => 'Reject with feedback…');
  stub.answers.inputBox = () => 'use a tab, not spaces';
  const result = await readThenRun(
    'edit',
    { filePath: 'keep.txt', oldString: 'keep', newString: 'lose' },
    'keep.txt',
  );
  assert.equal(result.metadata.error, 'permission_rejected');
  assert.match(result.output, /use a tab, not spaces/);
  assert.equal(stub.recorded.inputBoxes.length, 1);
  assert.equal(s.read('keep.txt'), 'keep me\n');
});

test('a diff with its indentation trimmed still previews the whole new file', async () => {
  answerPrompts(() => {
    const diff = diffCommand();
    diffCommand().proposed = stub.findDocument(diff.args[1]).getText();
    return 'Allow once';
  });
  const result = await readThenRun(
    'edit',
    { filePath: 'box.py', oldString: 'v5 = 5', newString: 'v5 = 55' },
    'box.py',
  );
  assert.equal(result.isError, false, result.output);
  const expected = INDENTED.replace('v5 = 5', 'v5 = 55');
  assert.equal(diffCommand().proposed, expected);
  assert.equal(s.read('box.py'), expected);
});

test('a new file is compared against an empty document', async () => {
  answerPrompts(() => {
    const diff = diffCommand();
    diff.before = stub.findDocument(diff.args[0])?.getText();
    diff.after = stub.findDocument(diff.args[1])?.getText();
    return 'Allow once';
  });
  const result = await readThenRun('write', { filePath: 'fresh.txt', content: 'brand new\n' });
  assert.equal(result.isError, false, result.output);
  const [left] = diffCommand().args;
  assert.equal(left.scheme, 'toolhost-proposed');
  assert.equal(diffCommand().before, '');
  assert.equal(diffCommand().after, 'brand new\n');
});

test('a command asks with a warning that shows it, and opens no diff', async () => {
  answerPrompts(() => 'Reject');
  const result = await readThenRun('bash', { command: 'echo hi > made.txt', description: 'Writes a file' });
  assert.equal(result.metadata.error, 'permission_rejected');
  const prompt = stub.recorded.messages[0];
  assert.equal(prompt.severity, 'warning');
  assert.match(prompt.message, /echo hi > made\.txt/);
  assert.ok(
    prompt.items.some((i) => /^Always allow \(echo hi > made\.txt\)|^Always allow \(echo \*\)/.test(i)),
    prompt.items.join(),
  );
  assert.equal(diffCommand(), undefined);
});

test('toolhost.prompts "notification" asks without a diff; "modal" asks in a dialog', async () => {
  try {
    stub.setSetting('toolhost.prompts', 'notification');
    answerPrompts(() => 'Reject');
    await readThenRun('edit', { filePath: 'keep.txt', oldString: 'keep', newString: 'lose' }, 'keep.txt');
    assert.equal(diffCommand(), undefined);
    assert.equal(stub.recorded.messages.length, 1);

    stub.reset();
    stub.setSetting('toolhost.prompts', 'modal');
    answerPrompts(() => 'Reject');
    await readThenRun('edit', { filePath: 'keep.txt', oldString: 'keep', newString: 'lose' }, 'keep.txt');
    assert.ok(diffCommand());
    const prompt = stub.recorded.messages[0];
    assert.equal(prompt.options.modal, true);
    assert.match(prompt.options.detail, /the proposed change is open in the diff editor \(edit\)/);
  } finally {
    stub.setSetting('toolhost.prompts', undefined);
  }
});

test('several files at once open in the multi-file diff editor', async () => {
  answerPrompts(async () => {
    const changes = stub.recorded.commands.find((c) => c.id === 'vscode.changes');
    assert.ok(changes, 'vscode.changes was not run');
    changes.files = [];
    for (const [file, , right] of changes.args[1]) {
      const proposed = await vscode.workspace.openTextDocument(right);
      changes.files.push([file.path.split('/').pop(), proposed.getText()]);
    }
    return 'Allow once';
  });
  await s.api.executeTool('read', { filePath: 'other.txt' }, { sessionID: 'ses_patch' });
  const patch = [
    '*** Begin Patch',
    '*** Add File: added.txt',
    '+added',
    '*** Update File: other.txt',
    '@@',
    '-one',
    '+four',
    '*** End Patch',
  ].join('\n');
  const result = await s.api.executeTool('apply_patch', { patchText: patch }, { sessionID: 'ses_patch' });
  assert.equal(result.isError, false, result.output);
  const changes = stub.recorded.commands.find((c) => c.id === 'vscode.changes');
  assert.deepEqual(Object.fromEntries(changes.files), { 'added.txt': 'added\n', 'other.txt': 'four\n' });
  await waitFor(() => stub.tabGroup.tabs.length === 0, 'the multi-file diff to close');
});

// Last: an "always" approval is kept by the sidecar for every later call.
test('Always allow: later edits in the session are not asked again', async () => {
  answerPrompts((items) => items.find((i) => i.startsWith('Always allow')));
  const sessionID = `ses_perm_always`;
  await s.api.executeTool('read', { filePath: 'last.txt' }, { sessionID });
  const first = await s.api.executeTool(
    'edit',
    { filePath: 'last.txt', oldString: 'one', newString: 'two' },
    { sessionID },
  );
  assert.equal(first.isError, false, first.output);
  const second = await s.api.executeTool(
    'edit',
    { filePath: 'last.txt', oldString: 'two', newString: 'three' },
    { sessionID },
  );
  assert.equal(second.isError, false, second.output);
  assert.equal(stub.recorded.messages.length, 1);
  assert.equal(s.read('last.txt'), 'three\n');
});
