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
    },
  });
});
after(() => s.dispose());
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

test("the user's unsaved typing elsewhere in the buffer survives an edit", async () => {
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
  assert.equal(doc.getText(), 'typed\none\nTWO\n');
  // The disk gets the agent's change only; the user's typing stays unsaved (#13).
  assert.equal(s.read('dirty.txt'), 'one\nTWO\n');
  assert.equal(doc.isDirty, true);
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
