// The sub-agent and question scenario, run inside code-server's extension host. A
// scripted chat model is registered through VS Code 1.100's proposed
// registerChatModelProvider; toolhost's task tool then runs its sub-agent on it (the
// model asks for a read, gets the file back, answers). Steps are written as JSON lines
// to $TOOLHOST_E2E_MARKER; a step that needs the user writes {event: 'expect'} and
// waits for the browser driver ({done: id} in $TOOLHOST_E2E_CONTROL).
const fs = require('fs');
const vscode = require('vscode');

const MARKER = process.env.TOOLHOST_E2E_MARKER;
const CONTROL = process.env.TOOLHOST_E2E_CONTROL;
const log = (event) => fs.appendFileSync(MARKER, `${JSON.stringify({ t: Date.now(), ...event })}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(predicate, what, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await predicate();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

function driverDid(id) {
  const lines = fs.existsSync(CONTROL) ? fs.readFileSync(CONTROL, 'utf8').split('\n').filter(Boolean) : [];
  return lines.map((l) => JSON.parse(l)).find((e) => e.done === id);
}

async function expectUser(id, details) {
  log({ event: 'expect', id, ...details });
  return waitFor(() => driverDid(id), `the driver to do ${id}`, 90000);
}

async function step(name, fn) {
  const started = Date.now();
  try {
    const result = await fn();
    log({ event: 'step', name, ok: true, ms: Date.now() - started, ...result });
  } catch (error) {
    log({
      event: 'step',
      name,
      ok: false,
      ms: Date.now() - started,
      error: String((error && error.stack) || error),
    });
  }
}

/** What the scripted model saw, for the test to check. */
const seen = { requests: [] };

// Parts are told apart by shape: the messages a provider gets are built by VS Code
// (1.100 hands tool results over as its own LanguageModelToolResultPart2 class).
const isToolResult = (part) => !!part && typeof part.callId === 'string' && Array.isArray(part.content);

function partText(part) {
  if (isToolResult(part))
    return part.content.map((p) => (p && typeof p.value === 'string' ? p.value : '')).join('');
  if (part && typeof part.value === 'string') return part.value;
  return '';
}

const provider = {
  async provideLanguageModelResponse(messages, options, extensionId, progress, token) {
    const texts = messages.map((m) =>
      Array.isArray(m.content) ? m.content.map(partText).join('') : String(m.content),
    );
    const tools = (options && options.tools ? options.tools : []).map((t) => t.name);
    seen.requests.push({ extensionId, tools, texts });
    const hasResult = messages.some((m) => Array.isArray(m.content) && m.content.some(isToolResult));
    if (!hasResult) {
      progress.report({ index: 0, part: new vscode.LanguageModelTextPart('Let me read it.') });
      // Every part at index 0: VS Code 1.100 shows only the first index's parts in
      // the response's stream.
      progress.report({
        index: 0,
        part: new vscode.LanguageModelToolCallPart('call_e2e_1', 'read', { filePath: 'notes.txt' }),
      });
      return;
    }
    // Hold the answer until the person has seen the sub-agent's progress.
    await waitFor(
      () => driverDid('watch-task') || token.isCancellationRequested,
      'the progress to be seen',
      60000,
    );
    const result = texts[texts.length - 1];
    const line = (result.split('\n').find((l) => /^\d+: /.test(l)) || '').replace(/^\d+: /, '');
    progress.report({
      index: 0,
      part: new vscode.LanguageModelTextPart(`The first line of notes.txt is "${line}".`),
    });
  },
  async provideTokenCount(text) {
    return typeof text === 'string' ? Math.ceil(text.length / 4) : 10;
  },
};

function activate(context) {
  if (!MARKER) return;
  // Not inside activate: selecting chat models activates every extension that
  // declares a model vendor (this one), and would wait for this activation to end.
  setTimeout(() => void scenario(context), 0);
}

async function scenario(context) {
  log({ event: 'helper-activated', vscode: vscode.version });
  const toolhost = vscode.extensions.getExtension('toolhost.toolhost');
  let api;

  await step('chat-model', async () => {
    context.subscriptions.push(
      vscode.lm.registerChatModelProvider('toolhost-e2e-model', provider, {
        vendor: 'toolhost-tests',
        name: 'Scripted model',
        family: 'scripted',
        version: '1',
        maxInputTokens: 100000,
        maxOutputTokens: 4000,
        isUserSelectable: true,
        capabilities: { toolCalling: true },
      }),
    );
    const models = await waitFor(async () => {
      const found = await vscode.lm.selectChatModels({ vendor: 'toolhost-tests' });
      return found.length ? found : undefined;
    }, 'the scripted model to be selectable');
    api = toolhost.isActive ? toolhost.exports : await toolhost.activate();
    const tools = (await api.listTools()).map((t) => t.id);
    return { models: models.map((m) => `${m.vendor}/${m.id}`), tools };
  });

  await step('task', async () => {
    const running = api.executeTool('task', {
      description: 'Read the notes',
      prompt: 'What is the first line of notes.txt?',
      subagent_type: 'explore',
    });
    // The model holds its answer until this is seen: the read has finished by then.
    await expectUser('watch-task', { status: '1/1 calls done' });
    const result = await running;
    return { output: result.output, isError: result.isError, metadata: result.metadata, seen };
  });

  await step('question-single', async () => {
    const running = api.executeTool('question', {
      questions: [
        {
          header: 'Database',
          question: 'Which database should the service use?',
          options: [
            { label: 'Postgres', description: 'What the other services use' },
            { label: 'SQLite', description: 'One file, no server' },
          ],
        },
      ],
    });
    await expectUser('pick-single', { title: 'Which database should the service use?', picks: ['SQLite'] });
    const result = await running;
    return { output: result.output, isError: result.isError, answers: result.metadata.answers };
  });

  await step('question-multiple', async () => {
    const running = api.executeTool('question', {
      questions: [
        {
          header: 'Extras',
          question: 'Which extras should be set up?',
          options: [
            { label: 'Migrations', description: 'Alembic' },
            { label: 'Seed data', description: 'A few rows' },
            { label: 'Backups', description: 'Nightly dumps' },
          ],
          multiple: true,
        },
        {
          header: 'Name',
          question: 'What should the database be called?',
          options: [{ label: 'app', description: 'The default' }],
        },
      ],
    });
    await expectUser('pick-multiple', {
      title: 'Which extras should be set up?',
      picks: ['Migrations', 'Backups'],
      multiple: true,
    });
    await expectUser('type-own', {
      title: 'What should the database be called?',
      picks: ['Type your own answer…'],
      type: 'orders',
    });
    const result = await running;
    return { output: result.output, isError: result.isError, answers: result.metadata.answers };
  });

  log({ event: 'done' });
}

module.exports = { activate, deactivate() {} };
