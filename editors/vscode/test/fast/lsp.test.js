// editor/lsp: the `lsp` tool answered by VS Code's provider commands, converted
// to LSP JSON (0-based positions on the wire, 1-based in the tool's arguments).
'use strict';
const { after, before, beforeEach, test } = require('node:test');
const assert = require('node:assert/strict');
const { activate, stub, vscode } = require('./harness');

let s;
const calls = [];
before(async () => {
  s = await activate({
    files: {
      'main.py': 'from lib import greet\n\ngreet("you")\n',
      'lib.py': 'import sys\n\n\ndef greet(name):\n    print(name)\n',
    },
  });
});
after(() => s.dispose());
beforeEach(() => {
  stub.reset();
  calls.length = 0;
  stub.builtinCommands.clear();
});

function provide(command, fn) {
  stub.builtinCommands.set(command, (...args) => {
    calls.push({ command, args });
    return fn(...args);
  });
}

const lsp = (operation, line = 3, character = 1) =>
  s.api.executeTool('lsp', { operation, filePath: 'main.py', line, character });

test('goToDefinition asks VS Code at the 0-based position and returns LSP locations', async () => {
  const target = s.uri('lib.py');
  provide('vscode.executeDefinitionProvider', () => [
    new vscode.Location(target, new vscode.Range(3, 4, 3, 9)),
  ]);
  const result = await lsp('goToDefinition', 3, 2);
  assert.equal(result.isError, false, result.output);
  const [{ args }] = calls;
  assert.equal(args[0].toString(), s.uri('main.py').toString());
  assert.deepEqual([args[1].line, args[1].character], [2, 1]);
  assert.deepEqual(result.metadata.result, [
    { uri: target.toString(), range: { start: { line: 3, character: 4 }, end: { line: 3, character: 9 } } },
  ]);
  assert.ok(stub.findDocument(s.file('main.py')), 'the document should be opened for its language server');
});

test('location links become locations at their target selection', async () => {
  const target = s.uri('lib.py');
  provide('vscode.executeImplementationProvider', () => [
    {
      targetUri: target,
      targetRange: new vscode.Range(3, 0, 4, 15),
      targetSelectionRange: new vscode.Range(3, 4, 3, 9),
    },
  ]);
  const result = await lsp('goToImplementation');
  assert.deepEqual(result.metadata.result, [
    { uri: target.toString(), range: { start: { line: 3, character: 4 }, end: { line: 3, character: 9 } } },
  ]);
});

test('findReferences and hover', async () => {
  provide('vscode.executeReferenceProvider', (uri) => [
    new vscode.Location(uri, new vscode.Range(2, 0, 2, 5)),
  ]);
  const refs = await lsp('findReferences');
  assert.equal(refs.metadata.result.length, 1);
  assert.equal(refs.metadata.result[0].range.start.line, 2);

  provide('vscode.executeHoverProvider', () => [
    new vscode.Hover(
      [new vscode.MarkdownString('**greet**'), { language: 'python', value: 'def greet(name)' }],
      new vscode.Range(2, 0, 2, 5),
    ),
  ]);
  const hover = await lsp('hover');
  assert.deepEqual(hover.metadata.result, {
    contents: { kind: 'markdown', value: '**greet**\n\n---\n\n```python\ndef greet(name)\n```' },
    range: { start: { line: 2, character: 0 }, end: { line: 2, character: 5 } },
  });
});

test('documentSymbol keeps the hierarchy and LSP symbol kinds', async () => {
  provide('vscode.executeDocumentSymbolProvider', () => {
    const cls = new vscode.DocumentSymbol(
      'Greeter',
      'class',
      vscode.SymbolKind.Class,
      new vscode.Range(0, 0, 4, 0),
      new vscode.Range(0, 6, 0, 13),
    );
    cls.children.push(
      new vscode.DocumentSymbol(
        'hello',
        '',
        vscode.SymbolKind.Method,
        new vscode.Range(1, 4, 2, 0),
        new vscode.Range(1, 8, 1, 13),
      ),
    );
    return [cls];
  });
  const result = await lsp('documentSymbol');
  const [cls] = result.metadata.result;
  assert.equal(cls.name, 'Greeter');
  assert.equal(cls.kind, 5); // LSP Class
  assert.equal(cls.detail, 'class');
  assert.equal(cls.children[0].kind, 6); // LSP Method
  assert.deepEqual(cls.children[0].selectionRange.start, { line: 1, character: 8 });
});

test('workspaceSymbol returns symbol information', async () => {
  provide('vscode.executeWorkspaceSymbolProvider', (query) => {
    assert.equal(query, '');
    return [
      new vscode.SymbolInformation(
        'greet',
        vscode.SymbolKind.Function,
        'lib',
        new vscode.Location(s.uri('lib.py'), new vscode.Range(3, 4, 3, 9)),
      ),
    ];
  });
  const result = await lsp('workspaceSymbol');
  assert.deepEqual(result.metadata.result, [
    {
      name: 'greet',
      kind: 12,
      containerName: 'lib',
      location: {
        uri: s.uri('lib.py').toString(),
        range: { start: { line: 3, character: 4 }, end: { line: 3, character: 9 } },
      },
    },
  ]);
});

/** The call-hierarchy item VS Code prepares for `greet` in lib.py. */
function greetItem() {
  return new vscode.CallHierarchyItem(
    vscode.SymbolKind.Function,
    'greet',
    '',
    s.uri('lib.py'),
    new vscode.Range(3, 0, 4, 15),
    new vscode.Range(3, 4, 3, 9),
  );
}

test('incoming calls are asked with the very item VS Code prepared', async () => {
  const prepared = greetItem();
  const caller = new vscode.CallHierarchyItem(
    vscode.SymbolKind.Module,
    'main',
    '',
    s.uri('main.py'),
    new vscode.Range(0, 0, 2, 12),
    new vscode.Range(0, 0, 0, 0),
  );
  provide('vscode.prepareCallHierarchy', () => [prepared]);
  provide('vscode.provideIncomingCalls', (item) => {
    assert.equal(item, prepared, 'VS Code answers only for items it produced');
    return [new vscode.CallHierarchyIncomingCall(caller, [new vscode.Range(2, 0, 2, 5)])];
  });
  const result = await lsp('incomingCalls');
  assert.equal(result.isError, false, result.output);
  const [call] = result.metadata.result;
  assert.equal(call.from.name, 'main');
  assert.equal(call.from.uri, s.uri('main.py').toString());
  assert.deepEqual(call.fromRanges, [{ start: { line: 2, character: 0 }, end: { line: 2, character: 5 } }]);
});

test('outgoing calls', async () => {
  const prepared = greetItem();
  const callee = new vscode.CallHierarchyItem(
    vscode.SymbolKind.Function,
    'print',
    '',
    s.uri('lib.py'),
    new vscode.Range(4, 4, 4, 15),
    new vscode.Range(4, 4, 4, 9),
  );
  provide('vscode.prepareCallHierarchy', () => [prepared]);
  provide('vscode.provideOutgoingCalls', (item) => {
    assert.equal(item, prepared);
    return [new vscode.CallHierarchyOutgoingCall(callee, [new vscode.Range(4, 4, 4, 9)])];
  });
  const result = await lsp('outgoingCalls');
  assert.equal(result.metadata.result[0].to.name, 'print');
});

test('no answer from any provider is "no results", not an error', async () => {
  provide('vscode.executeDefinitionProvider', () => []);
  const result = await lsp('goToDefinition');
  assert.equal(result.isError, false);
  assert.match(result.output, /No results found for goToDefinition/);
});
