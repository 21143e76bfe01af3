// The end-to-end scenario, run inside code-server's extension host. Each step
// writes JSON lines to $TOOLHOST_E2E_MARKER; a step that needs the user (a click,
// a key) writes {event: 'expect', ...} and waits until the browser driver has done
// it (the driver appends {done: id} to $TOOLHOST_E2E_CONTROL).
const fs = require('fs');
const path = require('path');
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

/** Asks the browser driver to do something a user does, and waits until it has. */
async function expectUser(id, details) {
  log({ event: 'expect', id, ...details });
  return waitFor(() => driverDid(id), `the driver to do ${id}`, 60000);
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

async function activate() {
  if (!MARKER) return;
  log({ event: 'helper-activated', vscode: vscode.version });
  if (process.env.TOOLHOST_E2E_SCENARIO === 'restricted') {
    return require('./restricted').run({ step, log, sleep, waitFor });
  }
  const folder = vscode.workspace.workspaceFolders[0].uri;
  const file = (name) => vscode.Uri.joinPath(folder, name);
  const disk = (name) => fs.readFileSync(path.join(folder.fsPath, name), 'utf8');
  const toolhost = vscode.extensions.getExtension('toolhost.toolhost');
  let api;

  await step('activate', async () => {
    api = toolhost.isActive ? toolhost.exports : await toolhost.activate();
    const tools = await api.listTools();
    return { tools: tools.map((t) => t.id), exports: Object.keys(api) };
  });

  await step('language-model-tools', async () => {
    const names = vscode.lm.tools.filter((t) => t.name.startsWith('toolhost_')).map((t) => t.name);
    const result = await vscode.lm.invokeTool('toolhost_read', {
      input: { filePath: 'keep.txt' },
      toolInvocationToken: undefined,
    });
    const text = result.content
      .map((part) => (part instanceof vscode.LanguageModelTextPart ? part.value : ''))
      .join('');
    // What this VS Code offers for toolhost's MCP server (mcpServer.ts feature-detects it).
    const mcpApi = typeof vscode.lm.registerMcpServerDefinitionProvider;
    const when = Object.fromEntries(
      toolhost.packageJSON.contributes.languageModelTools.map((t) => [t.name, t.when]),
    );
    return { names, text, mcpApi, version: vscode.version, when };
  });

  await step('read-unsaved', async () => {
    const doc = await vscode.workspace.openTextDocument(file('notes.txt'));
    const editor = await vscode.window.showTextDocument(doc);
    await editor.edit((b) => b.insert(new vscode.Position(0, 0), 'typed but not saved\n'));
    const result = await api.executeTool('read', { filePath: 'notes.txt' });
    return {
      output: result.output,
      isError: result.isError,
      dirty: doc.isDirty,
      disk: disk('notes.txt'),
    };
  });

  await step('edit-allow', async () => {
    const doc = await vscode.workspace.openTextDocument(file('app.txt'));
    await vscode.window.showTextDocument(doc);
    await api.executeTool('read', { filePath: 'app.txt' });
    const before = doc.getText();
    const call = api.executeTool('edit', {
      filePath: 'app.txt',
      oldString: 'hello',
      newString: 'hello world',
    });
    await expectUser('allow-edit', {
      click: 'Allow once',
      title: 'Edit app.txt',
      diff: 'app.txt ↔ proposed by edit',
    });
    const result = await call;
    const after = {
      text: doc.getText(),
      dirty: doc.isDirty,
      disk: disk('app.txt'),
    };
    // Undo, as the user would: Ctrl+Z in the editor.
    await vscode.window.showTextDocument(doc, { preserveFocus: false });
    await expectUser('undo', { key: 'Control+z', file: 'app.txt' });
    await waitFor(() => doc.getText() === before, 'the undo to bring back the old text', 15000);
    const undone = { text: doc.getText(), dirty: doc.isDirty };
    await vscode.commands.executeCommand('workbench.action.files.save');
    return {
      output: result.output,
      isError: result.isError,
      before,
      after,
      undone,
    };
  });

  await step('edit-reject', async () => {
    await api.executeTool('read', { filePath: 'keep.txt' });
    const call = api.executeTool('edit', {
      filePath: 'keep.txt',
      oldString: 'keep',
      newString: 'lose',
    });
    await expectUser('reject-edit', {
      click: 'Reject',
      title: 'Edit keep.txt',
      diff: 'keep.txt ↔ proposed by edit',
    });
    const result = await call;
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.fsPath === file('keep.txt').fsPath);
    return {
      output: result.output,
      isError: result.isError,
      kind: result.metadata.error,
      disk: disk('keep.txt'),
      buffer: doc && doc.getText(),
    };
  });

  await step('diagnostics', async () => {
    const uri = file('config.json');
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc);
    // The JSON language server reports on the open file once it has started.
    const reported = new Promise((resolve) => {
      const sub = vscode.languages.onDidChangeDiagnostics((e) => {
        if (e.uris.some((u) => u.toString() === uri.toString())) {
          sub.dispose();
          resolve(true);
        }
      });
      setTimeout(() => resolve(false), 20000);
    });
    await api.executeTool('read', { filePath: 'config.json' });
    const languageServerReady = await reported;
    const call = api.executeTool('edit', {
      filePath: 'config.json',
      oldString: '"ok"',
      newString: '"ok",,',
    });
    await expectUser('allow-json-edit', {
      click: 'Allow once',
      title: 'Edit config.json',
      diff: 'config.json ↔ proposed by edit',
    });
    const result = await call;
    return {
      languageServerReady,
      output: result.output,
      isError: result.isError,
      metadataDiagnostics: result.metadata.diagnostics,
      vscodeDiagnostics: vscode.languages.getDiagnostics(uri).map((d) => `${d.source}: ${d.message}`),
      disk: disk('config.json'),
    };
  });

  await step('palette', async () => {
    await expectUser('palette-run', {
      palette: 'Toolhost: Run Tool',
      tool: 'read',
      args: '{"filePath": "notes.txt"}',
    });
    const result = await waitFor(
      () => vscode.workspace.textDocuments.find((d) => d.uri.scheme === 'toolhost-result'),
      'the result document of Toolhost: Run Tool…',
    );
    return { uri: result.uri.toString(), text: result.getText() };
  });

  log({ event: 'done' });
}

module.exports = { activate, deactivate() {} };
