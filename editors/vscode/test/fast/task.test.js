// agent/task: the sidecar's task tool runs its sub-agent on a VS Code chat model
// (vscode.lm): tool calls go to the sidecar in the child session, their output goes
// back to the model, the last text is the result; cancel reaches the model request.
'use strict';
const { after, before, beforeEach, test } = require('node:test');
const assert = require('node:assert/strict');
const { activate, initializeParams, stub, vscode, waitFor } = require('./harness');

/** A chat model whose answers are scripted: each turn is a function of the messages. */
function fakeModel(id, turns) {
  const model = {
    id,
    vendor: 'test',
    family: id,
    name: id,
    version: '1',
    maxInputTokens: 100000,
    requests: [],
    async sendRequest(messages, options, token) {
      model.requests.push({ messages: [...messages], options, token });
      const turn = turns.shift();
      if (!turn) throw new Error('the fake model has no more turns');
      const parts = await turn(messages, token);
      return {
        stream: (async function* () {
          for (const part of parts) yield part;
        })(),
        text: (async function* () {})(),
      };
    },
  };
  return model;
}

const text = (value) => new vscode.LanguageModelTextPart(value);
const call = (id, name, input) => new vscode.LanguageModelToolCallPart(id, name, input);
const task = (prompt, extra = {}) => ({
  description: 'Look around',
  prompt,
  subagent_type: 'general',
  ...extra,
});

let s;
let init;
before(async () => {
  s = await activate({
    files: { 'notes.txt': 'alpha\nbeta\ngamma\n' },
    settings: { 'toolhost.trace.server': 'verbose' },
  });
  init = initializeParams();
});
after(() => s.dispose());
beforeEach(() => {
  stub.reset();
  stub.chatModels.length = 0;
  delete stub.settings['toolhost.task.model'];
});

test('the extension advertises task and the sidecar offers it', async () => {
  assert.equal(init.initializationOptions.editor.task, true);
  const task = (await s.api.listTools()).find((t) => t.id === 'task');
  assert.ok(task, 'task is offered');
  assert.match(task.description, /- explore: Fast agent specialized/);
});

test('the child reads through the sidecar and the model gets the output', async () => {
  const model = fakeModel('scripted', [
    async () => [text('Reading.'), call('c1', 'read', { filePath: 'notes.txt' })],
    async () => [text('notes.txt holds alpha, beta and gamma.')],
  ]);
  stub.chatModels.push(model);
  const result = await s.api.executeTool('task', task('What is in notes.txt?'), { sessionID: 'ses_vs1' });
  assert.equal(result.isError, false, result.output);
  assert.match(
    result.output,
    /^<task id="ses_[^"]+" state="completed">\n<task_result>\nnotes.txt holds alpha/,
  );
  const [first, second] = model.requests;
  const names = first.options.tools.map((t) => t.name);
  assert.ok(names.includes('read') && names.includes('grep'));
  assert.ok(!names.includes('task') && !names.includes('todowrite'), names.join(','));
  assert.equal(first.messages.at(-1).content[0].value, 'What is in notes.txt?');
  const results = second.messages.at(-1).content;
  assert.ok(results[0] instanceof vscode.LanguageModelToolResultPart);
  assert.equal(results[0].callId, 'c1');
  assert.match(results[0].content[0].value, /2: beta/);
  assert.deepEqual(
    result.metadata.calls.map((c) => [c.tool, c.status]),
    [['read', 'completed']],
  );

  // task_id resumes: the model sees the earlier conversation.
  model.requests.length = 0;
  const child = result.metadata.sessionId;
  const again = fakeModel('scripted', [async () => [text('Still three lines.')]]);
  stub.chatModels.length = 0;
  stub.chatModels.push(again);
  const resumed = await s.api.executeTool('task', task('How many?', { task_id: child }), {
    sessionID: 'ses_vs1',
  });
  assert.match(resumed.output, new RegExp(`<task id="${child}"`));
  const seen = again.requests[0].messages.map((m) => m.content.map((p) => p.value ?? p.callId).join(''));
  assert.ok(seen.includes('What is in notes.txt?') && seen.at(-1) === 'How many?', seen.join(' | '));
});

test('toolhost.task.model picks the model; none matching fails the task', async () => {
  const a = fakeModel('model-a', [async () => [text('from a')]]);
  const b = fakeModel('model-b', [async () => [text('from b')]]);
  stub.chatModels.push(a, b);
  stub.settings['toolhost.task.model'] = 'model-b';
  const result = await s.api.executeTool('task', task('hi'), { sessionID: 'ses_vs2' });
  assert.match(result.output, /from b/);
  assert.equal(a.requests.length, 0);
  stub.settings['toolhost.task.model'] = 'nope';
  const failed = await s.api.executeTool('task', task('hi'), { sessionID: 'ses_vs2' });
  assert.equal(failed.isError, true);
  assert.match(
    failed.output,
    /^Subagent failed \(task_id: ses_[^)]+\): no chat model matches toolhost\.task\.model "nope"/,
  );
});

test('a denied call stops the sub-agent, as in OpenCode', async () => {
  const model = fakeModel('scripted', [
    async () => [call('c1', 'todowrite', { todos: [] })],
    async () => [text('never asked')],
  ]);
  stub.chatModels.push(model);
  const result = await s.api.executeTool('task', task('Plan it'), { sessionID: 'ses_vs3' });
  assert.equal(result.isError, true);
  assert.match(result.output, /^Subagent failed \(task_id: ses_[^)]+\): The todowrite tool is not available/);
  assert.equal(model.requests.length, 1);
});

test('cancelling the task cancels the model request', async () => {
  let seenToken;
  const model = fakeModel('scripted', [
    (messages, token) =>
      new Promise((resolve) => {
        seenToken = token;
        token.onCancellationRequested(() => resolve([text('cancelled')]));
      }),
  ]);
  stub.chatModels.push(model);
  const source = new vscode.CancellationTokenSource();
  const running = s.api.executeTool('task', task('Wait'), { sessionID: 'ses_vs4', token: source.token });
  await waitFor(() => seenToken, 'the model request');
  source.cancel();
  await assert.rejects(running, (error) => error instanceof vscode.CancellationError);
  await waitFor(() => seenToken.isCancellationRequested, 'the model request to be cancelled');
});
