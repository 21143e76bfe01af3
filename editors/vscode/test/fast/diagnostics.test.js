// editor/diagnostics: what VS Code's language servers report reaches an edit's
// output (only the errors the edit introduced), waiting at most waitMs, and not
// at all for files no language server reports on.
'use strict';
const { after, before, test } = require('node:test');
const assert = require('node:assert/strict');
const { activate, stub, vscode, waitFor } = require('./harness');

const WAIT_MS = 1500;
let s;
let lintCollection;
let subscriptions = [];

/**
 * A stand-in language server for Python files: 100 ms after a document opens or
 * changes it reports every `undefined_name` as an error. JSON files get a report
 * only when they open (a server that never reports on changes).
 */
function startFakeLanguageServer() {
  lintCollection = vscode.languages.createDiagnosticCollection('fake-python');
  const jsonCollection = vscode.languages.createDiagnosticCollection('fake-json');
  const lint = (doc) => {
    if (doc.languageId !== 'python') return;
    setTimeout(() => {
      const found = [];
      doc
        .getText()
        .split('\n')
        .forEach((line, i) => {
          const at = line.indexOf('undefined_name');
          if (at >= 0) {
            const d = new vscode.Diagnostic(
              new vscode.Range(i, at, i, at + 14),
              'Undefined name `undefined_name`',
            );
            d.source = 'fakels';
            found.push(d);
          }
        });
      lintCollection.set(doc.uri, found);
    }, 100);
  };
  subscriptions = [
    vscode.workspace.onDidOpenTextDocument((doc) => {
      lint(doc);
      if (doc.languageId === 'json') jsonCollection.set(doc.uri, []);
    }),
    vscode.workspace.onDidChangeTextDocument((e) => lint(e.document)),
    jsonCollection,
  ];
}

before(async () => {
  startFakeLanguageServer();
  s = await activate({
    files: {
      'main.py': 'import os\nprint(os.name)\n',
      'old.py': 'x = undefined_name\ny = 1\n',
      'plain.txt': 'nothing checks this\n',
      'data.json': '{"a": 1}\n',
    },
    // About diagnostics, not review: edits land without asking.
    settings: { 'toolhost.diagnostics.waitMs': WAIT_MS, 'toolhost.review.byDefault': false },
  });
});
after(async () => {
  subscriptions.forEach((d) => d.dispose());
  lintCollection.dispose();
  await s.dispose();
  stub.setSetting('toolhost.review.byDefault', undefined);
});

test('an error the edit introduced is appended to its output', async () => {
  await s.api.executeTool('read', { filePath: 'main.py' });
  // The language server has checked the file once it opened (as it has for a file the user has open).
  await waitFor(() => lintCollection.has(s.uri('main.py')), 'the fake language server to report on main.py');
  const result = await s.api.executeTool('edit', {
    filePath: 'main.py',
    oldString: 'print(os.name)',
    newString: 'print(undefined_name)',
  });
  assert.equal(result.isError, false, result.output);
  assert.match(
    result.output,
    /<diagnostics file="[^"]*main\.py">\nERROR \[2:7\] Undefined name `undefined_name`\n<\/diagnostics>/,
  );
  const byUri = result.metadata.diagnostics;
  const entry = Object.entries(byUri).find(([uri]) => uri.endsWith('main.py'));
  assert.ok(entry, JSON.stringify(byUri));
  assert.equal(entry[1][0].source, 'fakels');
  assert.equal(entry[1][0].severity, 1);
});

test('a file no tab shows is opened in a background tab, so pull-diagnostics servers report on it', async () => {
  const shown = stub.tabGroup.tabs.filter((t) => t.input instanceof vscode.TabInputText);
  const tab = shown.find((t) => t.input.uri.fsPath === s.file('main.py'));
  assert.ok(tab, `main.py should have a tab now: ${shown.map((t) => t.label)}`);
  assert.equal(tab.isActive, false, 'the tab opens in the background');
  assert.equal(tab.isPreview, false, "it must not replace the person's preview tab");
  const opened = stub.recorded.commands.filter((c) => c.id === 'vscode.open');
  assert.ok(opened.length > 0 && opened.every((c) => c.args[1].preserveFocus && c.args[1].background));
});

test('errors that were there before the edit are not reported again', async () => {
  await s.api.executeTool('read', { filePath: 'old.py' });
  // The sidecar's baseline does not wait (waitMs 0): let the server report first.
  await waitFor(() => lintCollection.has(s.uri('old.py')), 'the fake language server to report on old.py');
  const result = await s.api.executeTool('edit', {
    filePath: 'old.py',
    oldString: 'y = 1',
    newString: 'y = 2',
  });
  assert.equal(result.isError, false, result.output);
  assert.doesNotMatch(result.output, /<diagnostics/);
});

test("diagnostics marked as toolhost's own are left out", async () => {
  const own = vscode.languages.createDiagnosticCollection('not-a-language-server');
  try {
    await s.api.executeTool('read', { filePath: 'main.py' });
    const d = new vscode.Diagnostic(new vscode.Range(0, 0, 0, 1), 'from toolhost itself');
    d.source = 'toolhost';
    own.set(s.uri('main.py'), [d]);
    const result = await s.api.executeTool('edit', {
      filePath: 'main.py',
      oldString: 'import os',
      newString: 'import sys',
    });
    assert.equal(result.isError, false, result.output);
    assert.doesNotMatch(result.output, /from toolhost itself/);
  } finally {
    own.dispose();
  }
});

test('a file no language server reports on does not wait', async () => {
  await s.api.executeTool('read', { filePath: 'plain.txt' });
  const started = Date.now();
  const result = await s.api.executeTool('edit', {
    filePath: 'plain.txt',
    oldString: 'nothing',
    newString: 'no one',
  });
  assert.equal(result.isError, false, result.output);
  assert.ok(Date.now() - started < WAIT_MS, `the edit took ${Date.now() - started} ms`);
});

test('a server that does not report after a change is waited for at most waitMs', async () => {
  await s.api.executeTool('read', { filePath: 'data.json' });
  const started = Date.now();
  const result = await s.api.executeTool('edit', { filePath: 'data.json', oldString: '1', newString: '2' });
  const took = Date.now() - started;
  assert.equal(result.isError, false, result.output);
  assert.ok(took >= WAIT_MS - 50, `returned after ${took} ms, before waitMs`);
  assert.ok(took < WAIT_MS + 2500, `took ${took} ms, far beyond waitMs`);
  assert.equal(s.read('data.json'), '{"a": 2}\n');
});
