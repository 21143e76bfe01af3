// The end-to-end scenario, run inside code-server's extension host. Each step
// writes JSON lines to $TOOLHOST_E2E_MARKER; a step that needs the user (a click,
// a key, typing) writes {event: 'expect', act, ...} and waits until the browser
// driver has done it (the driver appends {done: id} to $TOOLHOST_E2E_CONTROL).
//
// The workbench runs with default toolhost settings: every edit and command is
// reviewed (permissionDefaults), so each agent call below waits for the driver.
const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');
const vscode = require('vscode');

const MARKER = process.env.TOOLHOST_E2E_MARKER;
const CONTROL = process.env.TOOLHOST_E2E_CONTROL;
const log = (event) => fs.appendFileSync(MARKER, `${JSON.stringify({ t: Date.now(), ...event })}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
// A review left unanswered this long must still be answerable.
const LONG_WAIT_MS = 60000;

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

let api;

/** toolhost's tools in vscode.lm.tools, once `settled` holds for their names. */
async function offeredTools(settled) {
  const names = () => vscode.lm.tools.filter((t) => t.name.startsWith('toolhost_')).map((t) => t.name);
  try {
    return await waitFor(() => settled(names()) && names(), 'the Language Model Tools to change', 20000);
  } catch (error) {
    throw new Error(`${error.message}; vscode.lm.tools has ${JSON.stringify(names())}`);
  }
}

/** Asks the browser driver to do something a user does, and waits until it has. */
async function expectUser(id, details) {
  log({ event: 'expect', id, ...details });
  const did = await waitFor(() => driverDid(id), `the driver to do ${id}`, 90000);
  if (did.error) {
    // The rest of the step would wait for an answer nobody gives: reject what waits.
    for (const review of api ? api.pendingReviews() : []) {
      if (!review.files.some((f) => f.relativePath === 'later.txt')) {
        api.answerReview(review.id, { reply: 'reject', message: 'the e2e driver failed' });
      }
    }
    throw new Error(`the driver failed at ${id}: ${did.error}`);
  }
  return did;
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

/** The `sleep` processes started with this unique argument, still alive. */
function sleepers(marker) {
  const ps = spawnSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
  return ps.stdout.split('\n').filter((line) => new RegExp(`sleep [12]${marker}$`).test(line.trim()));
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
  /** The newest review of a file, once it is pending. */
  const reviewOf = (name) =>
    waitFor(
      () => api.pendingReviews().find((r) => r.files.some((f) => f.relativePath === name)),
      `a review of ${name}`,
    );
  const pendingIds = () => api.pendingReviews().map((r) => r.id);

  await step('activate', async () => {
    api = toolhost.isActive ? toolhost.exports : await toolhost.activate();
    const tools = await api.listTools();
    return { tools: tools.map((t) => t.id), exports: Object.keys(api) };
  });

  // Asked first and answered last: a review nobody answers for a minute or more. Its
  // notification is dismissed and its diff closed; neither answers it.
  let later;
  await step('later-asked', async () => {
    await api.executeTool('read', { filePath: 'later.txt' }, { sessionID: 'ses_later' });
    const call = api.executeTool(
      'edit',
      { filePath: 'later.txt', oldString: 'waiting', newString: 'answered after a minute' },
      { sessionID: 'ses_later' },
    );
    const review = await reviewOf('later.txt');
    later = { call, id: review.id, askedAt: Date.now() };
    await expectUser('dismiss-later', {
      act: 'dismiss',
      title: 'later.txt',
      diff: 'later.txt ↔ proposed by edit',
    });
    await sleep(500);
    return { pending: pendingIds().includes(review.id), disk: disk('later.txt') };
  });

  await step('language-model-tools', async () => {
    // The workbench sends the tool list after toolhost has set toolhost.staticTools
    // (once its when clauses are evaluated, 750 ms later at the soonest).
    const names = await offeredTools((n) => n.includes('toolhost_edit') && n.includes('toolhost_read'));
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

  // The states toolhost sets where 1.100 cannot reach them itself (Restricted Mode has
  // its own scenario): VS Code evaluates the when clauses and updates vscode.lm.tools.
  await step('static-tools-hidden', async () => {
    const shown = {};
    try {
      await vscode.commands.executeCommand('setContext', 'toolhost.staticTools', 'readOnly');
      shown.readOnly = await offeredTools((n) => n.includes('toolhost_read') && !n.includes('toolhost_edit'));
      await vscode.commands.executeCommand('setContext', 'toolhost.staticTools', 'none');
      shown.none = await offeredTools((n) => n.length === 0);
    } finally {
      // What toolhost set in this trusted window without an MCP server API.
      await vscode.commands.executeCommand('setContext', 'toolhost.staticTools', 'all');
    }
    shown.all = await offeredTools((n) => n.includes('toolhost_edit'));
    return shown;
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
    await reviewOf('app.txt');
    await sleep(300); // the diff opens beside
    const focus = vscode.window.activeTextEditor && vscode.window.activeTextEditor.document.uri.fsPath;
    const groups = vscode.window.tabGroups.all.length;
    await expectUser('allow-edit', {
      act: 'toast',
      click: 'Accept',
      title: 'app.txt',
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
    await expectUser('undo', { act: 'key', key: 'Control+z', file: 'app.txt', shows: 'hello' });
    await waitFor(() => doc.getText() === before, 'the undo to bring back the old text', 15000);
    const undone = { text: doc.getText(), dirty: doc.isDirty };
    await vscode.commands.executeCommand('workbench.action.files.save');
    return {
      output: result.output,
      isError: result.isError,
      focusKeptOn: focus,
      groups,
      before,
      after,
      undone,
    };
  });

  await step('unsaved-merge', async () => {
    const doc = await vscode.workspace.openTextDocument(file('draft.txt'));
    await vscode.window.showTextDocument(doc);
    await expectUser('type-unsaved', {
      act: 'type',
      file: 'draft.txt',
      shows: 'alpha',
      text: 'my unsaved line',
    });
    await waitFor(() => doc.getText().startsWith('my unsaved line\n'), 'the typing to reach the buffer');
    const typed = { text: doc.getText(), dirty: doc.isDirty, disk: disk('draft.txt') };
    await api.executeTool('read', { filePath: 'draft.txt' });
    // A change of length: VS Code's save checks the file's size and mtime against what it loaded.
    const call = api.executeTool('edit', {
      filePath: 'draft.txt',
      oldString: 'gamma',
      newString: 'GAMMA, longer',
    });
    await expectUser('accept-merge', {
      act: 'toast',
      click: 'Accept',
      title: 'draft.txt',
      diff: 'draft.txt ↔ proposed by edit',
    });
    const result = await call;
    const after = { text: doc.getText(), dirty: doc.isDirty, disk: disk('draft.txt') };
    await vscode.window.showTextDocument(doc, { preserveFocus: false });
    await expectUser('undo-agent-part', { act: 'key', key: 'Control+z', file: 'draft.txt', shows: 'alpha' });
    await waitFor(() => doc.getText() !== after.text, 'the undo', 15000);
    const undone = { text: doc.getText(), dirty: doc.isDirty, disk: disk('draft.txt') };
    // The person saves their own work afterwards.
    await expectUser('save-mine', {
      act: 'key',
      key: 'Control+s',
      file: 'draft.txt',
      shows: 'alpha',
      shot: 'save-mine',
    });
    // A conflict ("the file is newer") keeps it dirty: the test then says what it saw.
    await waitFor(() => !doc.isDirty, 'the save', 15000).catch(() => undefined);
    const saved = { text: doc.getText(), dirty: doc.isDirty, disk: disk('draft.txt') };
    return { output: result.output, isError: result.isError, typed, after, undone, saved };
  });

  await step('overlap', async () => {
    const doc = await vscode.workspace.openTextDocument(file('overlap.txt'));
    const editor = await vscode.window.showTextDocument(doc);
    await editor.edit((b) => b.replace(new vscode.Range(1, 0, 1, 6), 'middle, typed by me'));
    await api.executeTool('read', { filePath: 'overlap.txt' });
    const call = api.executeTool('edit', {
      filePath: 'overlap.txt',
      oldString: 'middle, typed by me',
      newString: 'middle, typed by me and the agent',
    });
    await expectUser('overlap-choice', {
      act: 'toast',
      click: 'Apply in editor only',
      title: 'overlap.txt',
      diff: 'overlap.txt ↔ proposed by edit',
      shot: 'review-overlap',
    });
    const result = await call;
    return {
      output: result.output,
      isError: result.isError,
      buffer: doc.getText(),
      dirty: doc.isDirty,
      disk: disk('overlap.txt'),
    };
  });

  await step('per-hunk', async () => {
    const doc = await vscode.workspace.openTextDocument(file('long.txt'));
    await vscode.window.showTextDocument(doc);
    await api.executeTool('read', { filePath: 'long.txt' });
    const call = api.executeTool('multiedit', {
      filePath: 'long.txt',
      edits: [
        { oldString: 'line 4\n', newString: 'line four, by the agent\n' },
        { oldString: 'line 26\n', newString: 'line twenty-six, by the agent\n' },
      ],
    });
    const review = await reviewOf('long.txt');
    await vscode.commands.executeCommand('toolhost.reviews.focus');
    await expectUser('hunks', {
      act: 'hunks',
      title: 'long.txt',
      diff: 'long.txt ↔ proposed by multiedit',
      rejectLine: 'line twenty-six, by the agent',
      acceptRow: 'Change 1 of 2',
    });
    const result = await call;
    return {
      hunks: review.hunks.map((h) => h.id),
      output: result.output,
      isError: result.isError,
      disk: disk('long.txt'),
      buffer: doc.getText(),
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
      act: 'toast',
      click: 'Reject',
      title: 'keep.txt',
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

  await step('bash-waits', async () => {
    const made = path.join(folder.fsPath, 'made.txt');
    const call = api.executeTool('bash', { command: 'echo made > made.txt', description: 'Makes a file' });
    await waitFor(() => api.pendingReviews().some((r) => r.tool === 'bash'), 'the command to be asked about');
    await sleep(2000);
    const waitedWithoutAnswer = !fs.existsSync(made);
    await expectUser('allow-bash', {
      act: 'toast',
      click: 'Allow',
      title: 'echo made',
      shot: 'review-bash',
    });
    const result = await call;
    return { waitedWithoutAnswer, output: result.output, isError: result.isError, made: fs.existsSync(made) };
  });

  await step('correct-proposal', async () => {
    await api.executeTool('read', { filePath: 'fix.txt' });
    const call = api.executeTool('edit', { filePath: 'fix.txt', oldString: 'colour', newString: 'color' });
    await reviewOf('fix.txt');
    await expectUser('correct', {
      act: 'correct',
      diff: 'fix.txt ↔ proposed by edit',
      line: 'color',
      text: ' (by hand)',
      action: 'Accept Proposed Change',
    });
    const result = await call;
    return { output: result.output, isError: result.isError, disk: disk('fix.txt') };
  });

  await step('per-file', async () => {
    const sessionID = 'ses_files';
    await api.executeTool('read', { filePath: 'p1.txt' }, { sessionID });
    await api.executeTool('read', { filePath: 'p2.txt' }, { sessionID });
    const patchText = [
      '*** Begin Patch',
      '*** Update File: p1.txt',
      '@@',
      '-first file',
      '+first file, changed',
      '*** Update File: p2.txt',
      '@@',
      '-second file',
      '+second file, changed',
      '*** End Patch',
    ].join('\n');
    const call = api.executeTool('apply_patch', { patchText }, { sessionID });
    await reviewOf('p2.txt');
    await vscode.commands.executeCommand('toolhost.reviews.focus');
    await expectUser('files', { act: 'files', reject: 'p2.txt', accept: 'p1.txt' });
    const result = await call;
    return { output: result.output, isError: result.isError, p1: disk('p1.txt'), p2: disk('p2.txt') };
  });

  await step('always-project', async () => {
    const call = api.executeTool('bash', { command: 'printf hello', description: 'Prints hello' });
    await expectUser('always', {
      act: 'more',
      title: 'printf hello',
      picks: ['Always allow commands starting “printf”', 'For this project'],
      shot: 'always-scope',
    });
    const first = await call;
    const config = JSON.parse(disk('opencode.json'));
    const again = api.executeTool('bash', { command: 'printf again', description: 'Prints again' });
    await sleep(1500);
    const askedAgain = api.pendingReviews().some((r) => r.tool === 'bash');
    const second = await again;
    await expectUser('rules', {
      act: 'rules',
      palette: 'Toolhost: Show Allowed Rules',
      row: 'commands starting “printf”',
    });
    await sleep(500);
    // toolhost created opencode.json for this rule: revoking it removes the file.
    const fileLeft = fs.existsSync(file('opencode.json').fsPath);
    const after = fileLeft ? JSON.parse(disk('opencode.json')) : {};
    return {
      first: first.output,
      saved: config.permission,
      askedAgain,
      second: second.output,
      afterRevoke: after.permission || {},
      fileLeft,
    };
  });

  await step('reject-reason', async () => {
    const call = api.executeTool('bash', { command: 'touch nope.txt', description: 'Creates nope.txt' });
    await expectUser('reason', {
      act: 'more',
      title: 'touch nope.txt',
      picks: ['Reject with a reason'],
      input: 'not here, use the build folder',
    });
    const result = await call;
    return {
      output: result.output,
      error: result.metadata.error,
      made: fs.existsSync(path.join(folder.fsPath, 'nope.txt')),
    };
  });

  await step('stop-sleep', async () => {
    const marker = `${process.pid}${Date.now() % 1000}`;
    const call = api.executeTool('bash', {
      command: `echo started; sleep 1${marker} & sleep 2${marker} & wait`,
      description: 'Sleeps in two processes',
    });
    await expectUser('allow-sleep', { act: 'toast', click: 'Allow', title: 'sleep 1' });
    await waitFor(() => sleepers(marker).length === 2, 'both sleeps to run', 15000);
    const before = sleepers(marker).length;
    // Two calls run (the review of later.txt waits too), so the click asks which to stop.
    await expectUser('stop-call', {
      act: 'status',
      text: 'bash: started',
      pick: 'Sleeps in two processes',
      shot: 'running-call',
    });
    const result = await call;
    await waitFor(() => sleepers(marker).length === 0, 'no sleep to survive', 10000).catch(() => undefined);
    return {
      before,
      survivors: sleepers(marker),
      isError: result.isError,
      error: result.metadata.error,
      stoppedBy: result.metadata.stoppedBy,
      output: result.output,
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
      act: 'toast',
      click: 'Accept',
      title: 'config.json',
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

  // A JSON file no editor shows: the agent's edit still gets the language server's errors.
  await step('diagnostics-background', async () => {
    await api.executeTool('read', { filePath: 'closed.json' });
    const call = api.executeTool('edit', { filePath: 'closed.json', oldString: '"b"', newString: '"b",,' });
    await expectUser('allow-closed-json', { act: 'toast', click: 'Accept', title: 'closed.json' });
    const result = await call;
    return { output: result.output, isError: result.isError, disk: disk('closed.json') };
  });

  await step('palette', async () => {
    await expectUser('palette-run', {
      act: 'palette',
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

  // Undo as a person does it: the agent's turn ran a command; the palette's
  // "Toolhost: Undo Last Agent Turn" shows the dry run in a modal, "Undo" puts it back.
  await step('undo', async () => {
    const turnID = 'turn_e2e_undo';
    const call = api.executeTool(
      'bash',
      { command: 'echo agent > undo-me.txt && rm undo-gone.txt', description: 'Changes two files' },
      { turnID },
    );
    await expectUser('allow-undo-bash', { act: 'toast', click: 'Allow', title: 'echo agent' });
    const ran = await call;
    const changed = {
      me: disk('undo-me.txt'),
      gone: !fs.existsSync(path.join(folder.fsPath, 'undo-gone.txt')),
    };
    await expectUser('undo-palette', {
      act: 'confirm',
      palette: 'Toolhost: Undo Last Agent Turn',
      button: 'Undo',
      shot: 'undo-dry-run',
    });
    await waitFor(() => disk('undo-me.txt') === 'before\n', 'undo-me.txt back as it was', 15000);
    return {
      ran: ran.output,
      changed,
      me: disk('undo-me.txt'),
      gone: disk('undo-gone.txt'),
    };
  });

  await step('modal-space', async () => {
    // toolhost.prompts "modal": a Space typed while the dialog opens must answer nothing,
    // and the diff is open once.
    const settings = vscode.workspace.getConfiguration('toolhost');
    await settings.update('prompts', 'modal', vscode.ConfigurationTarget.Global);
    try {
      await vscode.window.showTextDocument(file('notes.txt'), { preview: false });
      await api.executeTool('read', { filePath: 'modal.txt' });
      const before = disk('modal.txt');
      const call = api.executeTool('edit', { filePath: 'modal.txt', oldString: 'modal', newString: 'MODAL' });
      const review = await waitFor(
        () => api.pendingReviews().find((r) => r.files.some((f) => f.relativePath === 'modal.txt')),
        'the review of modal.txt',
      );
      await sleep(1500); // the dialog is up
      // A Space, and the typing that goes on: none of it may land in the proposal.
      await expectUser('modal-space', { act: 'press', key: 'Space', then: 'xyz', shot: 'modal-space' });
      await sleep(1500);
      const pending = pendingIds().includes(review.id);
      const tabs = vscode.window.tabGroups.all
        .flatMap((g) => g.tabs)
        .filter(
          (t) => t.input instanceof vscode.TabInputTextDiff && t.input.modified.query.startsWith(review.id),
        );
      const proposedUri = tabs[0] && tabs[0].input.modified.toString();
      const proposedDoc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === proposedUri);
      const proposal = proposedDoc ? proposedDoc.getText() : null;
      const unchanged = disk('modal.txt') === before;
      if (pending) api.answerReview(review.id, { reply: 'reject' }); // else the Space answered it
      await call;
      return { pending, diffTabs: tabs.length, unchanged, proposal };
    } finally {
      await settings.update('prompts', undefined, vscode.ConfigurationTarget.Global);
    }
  });

  await step('two-groups', async () => {
    // The person has split the editor and types in the right-hand group: the review must
    // not open in a third, narrow column where the changed line and its note are cut off.
    // (Joined, not closed: closing would ask about the unsaved editors.)
    await vscode.commands.executeCommand('workbench.action.joinAllGroups');
    const doc = await vscode.workspace.openTextDocument(file('split.txt'));
    await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.Two, preview: false });
    const groupsBefore = vscode.window.tabGroups.all.length;
    await api.executeTool('read', { filePath: 'split.txt' });
    const call = api.executeTool('edit', {
      filePath: 'split.txt',
      oldString: 'line 2',
      newString: 'LINE 2 changed by the agent',
    });
    const review = await reviewOf('split.txt');
    await expectUser('two-groups', {
      act: 'shown',
      diff: 'split.txt ↔ proposed by edit',
      line: 'LINE 2 changed by the agent',
      shot: 'review-two-groups',
    });
    const groupsDuring = vscode.window.tabGroups.all.length;
    api.answerReview(review.id, { reply: 'reject' });
    await call;
    await vscode.commands.executeCommand('workbench.action.joinAllGroups');
    return { groupsBefore, groupsDuring };
  });

  await step('lm-fetch-asks-once', async () => {
    // vscode.lm.invokeTool outside a chat: VS Code's own confirmation would be a modal
    // dialog whose focused "Yes" a Space presses. toolhost asks in its review instead.
    const call = vscode.lm.invokeTool('toolhost_webfetch', {
      input: { url: 'http://127.0.0.1:9/lm', format: 'text' },
      toolInvocationToken: undefined,
    });
    await waitFor(
      () => api.pendingReviews().find((r) => r.tool === 'webfetch'),
      "toolhost's review of the fetch",
    );
    await sleep(1000); // as long as a dialog would take to come up
    await expectUser('lm-fetch-space', { act: 'press', key: 'Space', shot: 'lm-fetch-space' });
    const pendingAfterSpace = api.pendingReviews().some((r) => r.tool === 'webfetch');
    await expectUser('lm-fetch-reject', {
      act: 'toast',
      title: 'webfetch wants to fetch',
      click: 'Reject',
      shot: 'lm-fetch-review',
    });
    const result = await call;
    const text = result.content
      .map((part) => (part instanceof vscode.LanguageModelTextPart ? part.value : ''))
      .join('');
    return { pendingAfterSpace, text };
  });

  await step('later-answered', async () => {
    const waited = Date.now() - later.askedAt;
    // Only pads when the steps above took less than a minute.
    if (waited < LONG_WAIT_MS) await sleep(LONG_WAIT_MS - waited);
    const stillPending = pendingIds().includes(later.id);
    await expectUser('answer-later', {
      act: 'reopen',
      status: '1 change to review',
      diff: 'later.txt ↔ proposed by edit',
      action: 'Accept Proposed Change',
      shot: 'review-later',
    });
    const result = await later.call;
    return {
      stillPending,
      waitedMs: Date.now() - later.askedAt,
      output: result.output,
      isError: result.isError,
      disk: disk('later.txt'),
    };
  });

  await step('network-ask', async () => {
    // Network by domain (issue 27), last: the new config restarts the sidecar. A command's
    // connection to a host no rule covers waits for a person in a notification; Allow lets
    // it through. The host is this process's HTTP server, named by TOOLHOST_NETWORK_HOSTS.
    const http = require('http');
    const server = http.createServer((req, res) => {
      res.setHeader('Connection', 'close');
      res.end(`hello ${req.url}\n`);
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = server.address().port;
    const settings = vscode.workspace.getConfiguration('toolhost');
    const restarted = new Promise((resolve) => {
      const listener = api.onDidChangeTools(() => {
        listener.dispose();
        resolve();
      });
    });
    const config = {
      permission: { bash: 'allow' }, // only the network is asked
      sandbox: { network: { allow: [`127.0.0.1:${port}`] } },
    };
    await settings.update('config', config, vscode.ConfigurationTarget.Global);
    try {
      await restarted;
      await api.listTools();
      const command = `curl -sS --max-time 30 http://files.e2e.test:${port}/asked`;
      const call = api.executeTool('bash', { command, description: 'Fetches a file' });
      await expectUser('network-allow', {
        act: 'toast',
        title: 'wants to connect to “files.e2e.test”',
        click: 'Allow',
        shot: 'network-ask',
      });
      const result = await call;
      return { output: result.output, isError: result.isError, network: result.metadata.sandbox.network };
    } finally {
      server.close();
      await settings.update('config', undefined, vscode.ConfigurationTarget.Global);
    }
  });

  log({ event: 'done' });
}

module.exports = { activate, deactivate() {} };
