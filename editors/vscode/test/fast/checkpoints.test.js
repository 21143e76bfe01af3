// Undo of an agent's turn: `Toolhost: Undo Last Agent Turn` (its dry run in the modal,
// then the files back), the Checkpoints view (turns, files, the diff from before the
// turn) and an undo of the undo.
'use strict';
const fs = require('fs');
const { after, before, test } = require('node:test');
const assert = require('node:assert/strict');
const { activate, stub, vscode } = require('./harness');

let s;
before(async () => {
  s = await activate({
    files: { 'a.txt': 'alpha\n', 'b.txt': 'beta\n' },
    settings: { 'toolhost.review.byDefault': false },
  });
});
after(() => s.dispose());

test('Undo Last Agent Turn shows the dry run, then puts the turn back', async () => {
  const view = stub.treeViews.get('toolhost.checkpoints');
  const refreshed = new Promise((resolve) => view.provider.onDidChangeTreeData(resolve));
  const ran = await s.api.executeTool(
    'bash',
    { command: 'echo agent > a.txt && rm b.txt && mkdir -p n && echo new > n/c.txt' },
    { turnID: 'turn_vscode' },
  );
  assert.equal(ran.isError, false, ran.output);
  // The sidecar's checkpoints/changed: the view lists the new turn.
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error('the Checkpoints view was not refreshed')), 15000);
  });
  await Promise.race([refreshed, late]).finally(() => clearTimeout(timer));
  stub.answers.message = (message, items) => (items.includes('Undo') ? 'Undo' : undefined);
  const result = await vscode.commands.executeCommand('toolhost.undoLastTurn');
  assert.deepEqual([...result.restored].sort(), ['a.txt', 'b.txt', 'n', 'n/c.txt']);
  assert.equal(fs.readFileSync(s.file('a.txt'), 'utf8'), 'alpha\n');
  assert.equal(fs.readFileSync(s.file('b.txt'), 'utf8'), 'beta\n');
  assert.equal(fs.existsSync(s.file('n')), false);
  const modal = stub.recorded.messages.find((m) => m.items.includes('Undo'));
  assert.equal(modal.options.modal, true);
  for (const path of ['a.txt', 'b.txt', 'n/c.txt']) {
    assert.ok(modal.options.detail.includes(`put back: ${path}`), modal.options.detail);
  }
  console.log(`# the undo prompt: ${modal.message}\n# ${modal.options.detail.replace(/\n/g, '\n# ')}`);
  // What it did, whole: with a button (VS Code cuts a notification without one to a line).
  const done = stub.recorded.messages.find((m) => /^toolhost: undid/.test(m.message));
  assert.deepEqual(done.items, ['Show Log']);
});

test('the Checkpoints view lists the turns with their files and opens a diff', async () => {
  const view = stub.treeViews.get('toolhost.checkpoints');
  const turns = await view.provider.getChildren();
  const labels = turns.map((t) => view.provider.getTreeItem(t).label);
  assert.match(labels[0], /^Undo: /);
  assert.equal(turns[1].checkpoint.turnID, 'turn_vscode');
  const files = await view.provider.getChildren(turns[1]);
  const a = files.find((f) => f.file.path === 'a.txt');
  const item = view.provider.getTreeItem(a);
  assert.equal(item.description, 'modified · bash');
  await vscode.commands.executeCommand(item.command.command, ...item.command.arguments);
  const diff = stub.recorded.commands.find((c) => c.id === 'vscode.diff');
  assert.ok(diff, 'a diff was opened');
  const beforeDoc = await vscode.workspace.openTextDocument(diff.args[0]);
  assert.equal(beforeDoc.getText(), 'alpha\n');
});

test('undoing the undo brings the agent turn back', async () => {
  const view = stub.treeViews.get('toolhost.checkpoints');
  const [newest] = await view.provider.getChildren();
  stub.answers.message = () => 'Undo';
  const result = await vscode.commands.executeCommand('toolhost.checkpoints.undo', newest);
  assert.ok(result.restored.includes('a.txt'));
  assert.equal(fs.readFileSync(s.file('a.txt'), 'utf8'), 'agent\n');
  assert.equal(fs.existsSync(s.file('b.txt')), false);
});
