// Copilot's view of toolhost: the MCP server definition where VS Code has the API
// (feature-detected; the stand-in enables it for these tests), the `when` clauses
// of the static Language Model Tools, and the opt-in that skips toolhost's review
// of a call VS Code has just confirmed.
'use strict';
const { execFileSync } = require('child_process');
const path = require('path');
const { after, before, test } = require('node:test');
const assert = require('node:assert/strict');
const { activate, answerPrompts, stub, toolhostScript, vscode, waitFor } = require('./harness');

const pkg = require(path.resolve(__dirname, '..', '..', 'package.json'));

let s;
before(async () => {
  stub.enableMcpApi();
  s = await activate({
    files: { 'a.txt': 'alpha\n' },
    settings: { 'toolhost.config': { permission: { edit: 'ask' } } },
  });
  await s.api.listTools(); // the sidecar is running
});
after(() => s.dispose());

function contextValue(key) {
  const sets = stub.recorded.commands.filter((c) => c.id === 'setContext' && c.args[0] === key);
  return sets.length ? sets[sets.length - 1].args[1] : undefined;
}

test('the MCP provider is declared and registered, and hides the static tools', async () => {
  assert.deepEqual(pkg.contributes.mcpServerDefinitionProviders, [{ id: 'toolhost.mcp', label: 'toolhost' }]);
  assert.ok(stub.mcpProviders.has('toolhost.mcp'));
  assert.equal(contextValue('toolhost.staticTools'), 'none');
});

test("the definition runs toolhost mcp, which attaches to this window's sidecar", async () => {
  const provider = stub.mcpProviders.get('toolhost.mcp');
  const [definition] = await waitFor(async () => {
    const found = await provider.provideMcpServerDefinitions();
    return found.length ? found : undefined;
  }, 'an MCP server definition');
  assert.ok(definition instanceof vscode.McpStdioServerDefinition);
  assert.equal(definition.command, toolhostScript());
  assert.deepEqual(definition.args, ['mcp', '--cwd', s.ws]);
  assert.equal(definition.cwd.fsPath, s.ws);
  // The command as VS Code would run it finds this window's sidecar through its lock file.
  const listing = JSON.parse(
    execFileSync(definition.command, [...definition.args, '--list-editors', '--json'], { encoding: 'utf8' }),
  );
  const chosen = listing.editors.filter((editor) => editor.chosen);
  assert.equal(chosen.length, 1, JSON.stringify(listing));
  assert.deepEqual(chosen[0].workspaceFolders, [s.ws]);
});

test('an untrusted workspace gets no definition', async () => {
  const provider = stub.mcpProviders.get('toolhost.mcp');
  stub.trust.isTrusted = false;
  try {
    assert.deepEqual(await provider.provideMcpServerDefinitions(), []);
  } finally {
    stub.trust.isTrusted = true;
  }
});

test('the static tools carry when clauses: read-only ones also in Restricted Mode', () => {
  for (const tool of pkg.contributes.languageModelTools) {
    const readOnly = tool.tags.includes('read-only');
    const expected = readOnly ? 'toolhost.staticTools != none' : 'toolhost.staticTools == all';
    assert.equal(tool.when, expected, tool.name);
  }
});

test("every Language Model Tool's when clause is a single term", () => {
  // VS Code 1.100 turns `a && b`, `a || b` and `!(…)` into circular objects, and then
  // cannot send the tools to extension hosts: vscode.lm.tools is empty for every
  // extension (seen in code-server 4.100.3 as "TypeError: i is not iterable"). Menus
  // and keybindings keep their when clauses in the workbench, so they may combine.
  for (const tool of pkg.contributes.languageModelTools) {
    assert.equal(typeof tool.when, 'string', tool.name);
    assert.doesNotMatch(tool.when, /&&|\|\||!\s*\(/, `${tool.name}: ${tool.when}`);
  }
});

async function lmEdit(from, to) {
  const token = new vscode.CancellationTokenSource().token;
  await stub.lmTools.get('toolhost_read').invoke({ input: { filePath: 'a.txt' } }, token);
  return stub.lmTools
    .get('toolhost_edit')
    .invoke({ input: { filePath: s.file('a.txt'), oldString: from, newString: to } }, token);
}

test("toolhost's review of a confirmed call is skipped only when the user chose so", async () => {
  let prompts = 0;
  answerPrompts((items) => {
    prompts += 1;
    return items.find((item) => (item.title ?? item) === 'Accept');
  });
  await lmEdit('alpha', 'beta');
  assert.equal(prompts, 1, 'by default toolhost still asks');
  assert.equal(s.read('a.txt'), 'beta\n');

  stub.setSetting('toolhost.copilot.skipReviewAfterConfirmation', true, 'workspace');
  await lmEdit('beta', 'gamma');
  assert.equal(prompts, 2, "a workspace's setting does not count");

  stub.setSetting('toolhost.copilot.skipReviewAfterConfirmation', true);
  const result = await lmEdit('gamma', 'delta');
  assert.match(result.content[0].value, /Edit applied successfully/);
  assert.equal(prompts, 2, 'the user setting skips the second ask');
  assert.equal(s.read('a.txt'), 'delta\n');

  // A call made through the API (not confirmed by VS Code) is still reviewed.
  await s.api.executeTool('read', { filePath: 'a.txt' });
  await s.api.executeTool('edit', { filePath: s.file('a.txt'), oldString: 'delta', newString: 'eps' });
  assert.equal(prompts, 3);
  stub.setSetting('toolhost.copilot.skipReviewAfterConfirmation', undefined);
  stub.setSetting('toolhost.copilot.skipReviewAfterConfirmation', undefined, 'workspace');
});
