// The palette commands and the Language Model Tools.
'use strict';
const fs = require('fs');
const path = require('path');
const { after, before, beforeEach, test } = require('node:test');
const assert = require('node:assert/strict');
const { activate, stub, vscode, waitFor } = require('./harness');

const packageJson = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8'));
let s;
before(async () => {
  s = await activate({ files: { 'a.txt': 'hello\n' } });
});
after(() => s.dispose());
beforeEach(() => stub.reset());

test('every command in package.json is registered', () => {
  for (const { command } of packageJson.contributes.commands) {
    assert.ok(stub.registeredCommands.has(command), `${command} is not registered`);
  }
});

test('Run Tool…: pick a tool, fill in the JSON template, see the result', async () => {
  stub.answers.quickPick = (items) => items.find((i) => i.label === 'read');
  stub.answers.inputBox = (options) => options.value.replace('""', '"a.txt"');
  const result = await vscode.commands.executeCommand('toolhost.runTool');
  assert.equal(result.isError, false);
  const [pick] = stub.recorded.quickPicks;
  const read = pick.items.find((i) => i.label === 'read');
  assert.equal(read.description, 'read · read-only');
  assert.match(read.detail, /^Reads a file/);
  const [box] = stub.recorded.inputBoxes;
  assert.equal(box.value, '{"filePath":""}');
  assert.equal(await box.validateInput('[1, 2]'), 'Enter a JSON object, e.g. {"filePath": "README.md"}');
  assert.equal(await box.validateInput('{"filePath": "x"}'), undefined);
  const shown = stub.recorded.shown.at(-1);
  assert.match(shown.uri, /^toolhost-result:/);
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.parse(shown.uri));
  assert.match(doc.getText(), /^a\.txt\n\n[\s\S]*1: hello/);
  const running = stub.recorded.progress.find((p) => p.options.title === 'toolhost: running read');
  assert.equal(running.options.location, vscode.ProgressLocation.Notification);
  assert.equal(running.options.cancellable, true);
});

test('a tool that fails from the palette says so in a warning', async () => {
  const result = await vscode.commands.executeCommand('toolhost.runTool', 'read', {
    filePath: 'missing.txt',
  });
  assert.equal(result.isError, true);
  assert.match(stub.recorded.messages.at(-1).message, /toolhost: read failed: File not found/);
});

test('List Tools shows the catalogue; picking one runs it', async () => {
  stub.answers.quickPick = (items) => items.find((i) => i.label === 'list');
  stub.answers.inputBox = () => '{}';
  await vscode.commands.executeCommand('toolhost.listTools');
  const labels = stub.recorded.quickPicks[0].items.map((i) => i.label);
  assert.ok(labels.includes('read') && labels.includes('bash'));
  assert.match(stub.recorded.shown.at(-1).uri, /^toolhost-result:/);
});

test('Show Log opens the toolhost log', async () => {
  await vscode.commands.executeCommand('toolhost.showLog');
  assert.deepEqual(stub.recorded.commands.at(-1), { id: 'stub.showLog', args: ['toolhost'] });
});

test('every contributed Language Model Tool is registered', () => {
  const names = packageJson.contributes.languageModelTools.map((t) => t.name);
  assert.ok(names.includes('toolhost_read') && names.includes('toolhost_bash'));
  assert.deepEqual([...stub.lmTools.keys()].sort(), [...names].sort());
});

test("prepareInvocation: no second prompt where toolhost's review follows; otherwise the change in words", async () => {
  const edit = stub.lmTools.get('toolhost_edit');
  const input = { filePath: 'a.txt', oldString: 'hello', newString: 'hello\nworld' };
  const reviewed = await edit.prepareInvocation({ input });
  assert.equal(reviewed.invocationMessage, 'Editing a.txt');
  assert.equal(
    reviewed.confirmationMessages,
    undefined,
    "toolhost's review (with the diff) is the one prompt",
  );
  const bashReviewed = await stub.lmTools
    .get('toolhost_bash')
    .prepareInvocation({ input: { command: 'ls' } });
  assert.equal(bashReviewed.confirmationMessages, undefined);
  // Nor VS Code's for a fetch (toolhost asks in its review, at invoke) or the task list.
  for (const [name, input] of [
    ['toolhost_webfetch', { url: 'https://example.com', format: 'text' }],
    ['toolhost_todowrite', { todos: [] }],
  ]) {
    const prepared = await stub.lmTools.get(name).prepareInvocation({ input });
    assert.equal(prepared.confirmationMessages, undefined, name);
  }
  stub.setSetting('toolhost.review.byDefault', false);
  try {
    const confirmed = await edit.prepareInvocation({ input });
    assert.equal(confirmed.confirmationMessages.title, 'Allow toolhost to run edit?');
    assert.equal(confirmed.confirmationMessages.message.value, 'Edit a.txt: replace 1 line with 2 lines.');
    const write = await stub.lmTools.get('toolhost_write').prepareInvocation({
      input: { filePath: 'b.txt', content: 'one\ntwo\n' },
    });
    assert.match(write.confirmationMessages.message.value, /^Write b\.txt \(2 lines\)/);
  } finally {
    stub.setSetting('toolhost.review.byDefault', undefined);
  }
});

test('prepareInvocation: a progress message, and a confirmation for tools that change things', async () => {
  stub.setSetting('toolhost.review.byDefault', false);
  const read = stub.lmTools.get('toolhost_read');
  const readPrep = await read.prepareInvocation({ input: { filePath: 'a.txt' } });
  assert.equal(readPrep.invocationMessage, 'Reading a.txt');
  assert.equal(readPrep.confirmationMessages, undefined);

  const bash = stub.lmTools.get('toolhost_bash');
  const bashPrep = await bash.prepareInvocation({
    input: { command: 'rm -rf build', description: 'Removes the build' },
  });
  assert.equal(bashPrep.invocationMessage, 'Running: Removes the build');
  assert.equal(bashPrep.confirmationMessages.title, 'Allow toolhost to run bash?');
  assert.match(bashPrep.confirmationMessages.message.value, /```sh\nrm -rf build\n```/);

  const fetch = stub.lmTools.get('toolhost_webfetch');
  const fetchPrep = await fetch.prepareInvocation({ input: { url: 'https://example.com', format: 'text' } });
  assert.ok(fetchPrep.confirmationMessages, 'a read-only tool that reaches the network is confirmed too');
  stub.setSetting('toolhost.review.byDefault', undefined);
});

test('invoke runs tools/execute and hands the output to the model', async () => {
  const read = stub.lmTools.get('toolhost_read');
  const result = await read.invoke(
    { input: { filePath: 'a.txt' } },
    new vscode.CancellationTokenSource().token,
  );
  assert.ok(result instanceof vscode.LanguageModelToolResult);
  assert.match(result.content[0].value, /1: hello/);
  const missing = await read.invoke(
    { input: { filePath: 'nope.txt' } },
    new vscode.CancellationTokenSource().token,
  );
  assert.match(missing.content[0].value, /File not found/);
});

test("a fetch through Copilot's tools asks in toolhost's review, which takes no focus", async () => {
  // VS Code's confirmation of a call made outside a chat is a modal dialog whose focused
  // "Yes" a Space typed into the editor presses (seen in code-server): toolhost asks.
  await vscode.commands.executeCommand('toolhost.restart'); // the settings changed above: now, not midway
  const fetch = stub.lmTools.get('toolhost_webfetch');
  const input = { url: 'http://127.0.0.1:9/page', format: 'text' };
  const token = new vscode.CancellationTokenSource().token;
  const refused = fetch.invoke({ input }, token);
  const review = await waitFor(() => s.api.pendingReviews()[0], "toolhost's review of the fetch");
  assert.equal(review.tool, 'webfetch');
  assert.match(review.title, /Fetching http:\/\/127\.0\.0\.1:9\/page/);
  assert.ok(
    stub.recorded.messages.every((m) => !(m.options && m.options.modal)),
    'no modal dialog',
  );
  s.api.answerReview(review.id, { reply: 'reject', message: 'not that site' });
  assert.match((await refused).content[0].value, /rejected permission .*feedback: not that site/);

  const allowed = fetch.invoke({ input }, token);
  const again = await waitFor(() => s.api.pendingReviews()[0], 'the review of the second fetch');
  s.api.answerReview(again.id, { reply: 'always' });
  assert.match((await allowed).content[0].value, /Request to http:\/\/127\.0\.0\.1:9\/page failed/);
  // "Always": the same URL is not asked about again (until VS Code restarts).
  const third = await fetch.invoke({ input }, token);
  assert.match(third.content[0].value, /failed/);
  assert.equal(s.api.pendingReviews().length, 0);
});
