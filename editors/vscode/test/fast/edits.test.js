// Edits of files open in the editor go through VS Code (workspace/applyEdit on the
// buffer, then editor/saveDocuments); a read prewarms the file (editor/openDocument)
// without showing it.
'use strict';
const { after, before, beforeEach, test } = require('node:test');
const assert = require('node:assert/strict');
const { activate, stub, vscode, waitFor } = require('./harness');

let s;
before(async () => {
  s = await activate({
    files: {
      'open.txt': 'first\nsecond\nthird\n',
      'dirty.txt': 'one\ntwo\n',
      'closed.txt': 'left alone\n',
      'whole.txt': 'old\n',
      'far.txt': 'a\nb\nc\nd\ne\nf\n',
      'late.txt': 'a\nb\nc\n',
    },
    // About how edits reach the buffer and the disk, not review: they land without asking.
    settings: { 'toolhost.review.byDefault': false },
  });
});
after(async () => {
  await s.dispose();
  stub.setSetting('toolhost.review.byDefault', undefined);
});
beforeEach(() => stub.reset());

test('a read opens the file for the language servers, without showing it', async () => {
  assert.equal(stub.findDocument(s.file('closed.txt')), undefined);
  const result = await s.api.executeTool('read', { filePath: 'closed.txt' });
  assert.equal(result.isError, false, result.output);
  await waitFor(() => stub.findDocument(s.file('closed.txt')), 'editor/openDocument to open closed.txt');
  assert.deepEqual(stub.recorded.shown, [], 'the prewarmed document must not be shown');
});

test('an edit of an open file is applied to the buffer by VS Code and saved', async () => {
  const doc = await vscode.workspace.openTextDocument(s.uri('open.txt'));
  await s.api.executeTool('read', { filePath: 'open.txt' });
  const version = doc.version;
  const result = await s.api.executeTool('edit', {
    filePath: 'open.txt',
    oldString: 'second',
    newString: 'SECOND',
  });
  assert.equal(result.isError, false, result.output);

  assert.equal(stub.recorded.applyEdits.length, 1, 'expected one workspace/applyEdit');
  const [[uri, edits]] = stub.recorded.applyEdits[0].entries();
  assert.equal(uri.toString(), s.uri('open.txt').toString());
  assert.ok(edits.length >= 1);
  assert.equal(doc.getText(), 'first\nSECOND\nthird\n');
  assert.ok(doc.version > version, 'the buffer should have a new version');
  assert.equal(doc.isDirty, false, 'editor/saveDocuments should have saved the buffer');
  assert.deepEqual(stub.recorded.saves, [s.uri('open.txt').toString()]);
  assert.equal(s.read('open.txt'), 'first\nSECOND\nthird\n');

  // The change is one step in the buffer's undo history.
  assert.ok(stub.undo(s.file('open.txt')));
  assert.equal(doc.getText(), 'first\nsecond\nthird\n');
  await doc.save();
});

test("the user's unsaved typing stays theirs: the disk gets only the agent's change", async () => {
  const doc = await stub.type(s.file('dirty.txt'), [
    new vscode.TextEdit(new vscode.Range(0, 0, 0, 0), 'typed\n'),
  ]);
  assert.equal(doc.isDirty, true);
  const read = await s.api.executeTool('read', { filePath: 'dirty.txt' });
  assert.match(read.output, /1: typed/);
  const result = await s.api.executeTool('edit', {
    filePath: 'dirty.txt',
    oldString: 'two',
    newString: 'TWO',
  });
  assert.equal(result.isError, false, result.output);
  assert.equal(doc.getText(), 'typed\none\nTWO\n', 'the buffer has both');
  assert.equal(s.read('dirty.txt'), 'one\nTWO\n', "the disk has the agent's change and none of the typing");
  assert.equal(doc.isDirty, true, 'the typing is still unsaved');
  assert.deepEqual(stub.recorded.saves, [], 'a buffer with unsaved changes is never saved for the agent');
  // One undo takes back the agent's part only.
  assert.ok(stub.undo(s.file('dirty.txt')));
  assert.equal(doc.getText(), 'typed\none\ntwo\n');
});

test('saving later does not fail as "the content is newer" (editor/diskWritten)', async () => {
  // Without the sidecar's note, a file written behind a dirty buffer makes the save fail.
  const other = await stub.type(s.file('closed.txt'), [
    new vscode.TextEdit(new vscode.Range(0, 0, 0, 0), 'mine '),
  ]);
  await new Promise((resolve) => setTimeout(resolve, 20));
  require('fs').writeFileSync(s.file('closed.txt'), 'written by someone else, longer\n');
  assert.equal(await other.save(), false, 'the stub should refuse like VS Code does');
  assert.deepEqual(stub.recorded.saveConflicts, [s.uri('closed.txt').toString()]);

  stub.recorded.saveConflicts.length = 0;
  const doc = await stub.type(s.file('far.txt'), [
    new vscode.TextEdit(new vscode.Range(0, 0, 0, 0), 'mine\n'),
  ]);
  await s.api.executeTool('read', { filePath: 'far.txt' });
  await new Promise((resolve) => setTimeout(resolve, 20));
  const result = await s.api.executeTool('edit', {
    filePath: 'far.txt',
    oldString: 'f',
    newString: 'f, and longer',
  });
  assert.equal(result.isError, false, result.output);
  assert.equal(doc.isDirty, true);
  assert.equal(await doc.save(), true, `the save was refused: ${stub.recorded.saveConflicts}`);
  assert.equal(s.read('far.txt'), 'mine\na\nb\nc\nd\ne\nf, and longer\n');
  assert.equal(doc.getText(), s.read('far.txt'));
});

test('write replaces an open buffer through the editor too', async () => {
  const doc = await vscode.workspace.openTextDocument(s.uri('whole.txt'));
  await s.api.executeTool('read', { filePath: 'whole.txt' });
  const result = await s.api.executeTool('write', { filePath: 'whole.txt', content: 'new\ncontent\n' });
  assert.equal(result.isError, false, result.output);
  assert.equal(stub.recorded.applyEdits.length, 1);
  assert.equal(doc.getText(), 'new\ncontent\n');
  assert.equal(s.read('whole.txt'), 'new\ncontent\n');
});

test('a file that is not open is written by the sidecar, not through the editor', async () => {
  const result = await s.api.executeTool('write', { filePath: 'brand-new.txt', content: 'x\n' });
  assert.equal(result.isError, false, result.output);
  assert.equal(stub.recorded.applyEdits.length, 0);
  assert.equal(s.read('brand-new.txt'), 'x\n');
});

test('typing done just after the edit landed is not saved for the user', async () => {
  const doc = await vscode.workspace.openTextDocument(s.uri('late.txt'));
  await s.api.executeTool('read', { filePath: 'late.txt' });
  // The user types the moment the agent's change shows in the buffer, before the save.
  let typing;
  const listener = vscode.workspace.onDidChangeTextDocument((event) => {
    if (event.document === doc && doc.getText().startsWith('a\nB\n') && !typing) {
      typing = stub.type(s.file('late.txt'), [new vscode.TextEdit(new vscode.Range(2, 0, 2, 0), 'typed\n')]);
    }
  });
  try {
    const result = await s.api.executeTool('edit', { filePath: 'late.txt', oldString: 'b', newString: 'B' });
    assert.equal(result.isError, false, result.output);
    await typing;
  } finally {
    listener.dispose();
  }
  assert.equal(doc.getText(), 'a\nB\ntyped\nc\n', 'the buffer has both');
  assert.equal(s.read('late.txt'), 'a\nB\nc\n', "the disk has the agent's change only");
  assert.equal(doc.isDirty, true, "the user's typing must stay unsaved");
});
