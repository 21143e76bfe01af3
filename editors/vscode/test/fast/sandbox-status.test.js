// On a machine where bash cannot be sandboxed (every mechanism taken away from the
// sidecar's own probe with TOOLHOST_SANDBOX_SIMULATE, which only ever removes), the
// status item says so as a warning, where the person looks.
'use strict';
const { after, before, test } = require('node:test');
const assert = require('node:assert/strict');
const { activate, stub, vscode, waitFor } = require('./harness');

let s;
before(async () => {
  process.env.TOOLHOST_SANDBOX_SIMULATE = 'none';
  s = await activate({ files: { 'a.txt': 'hello\n' } });
  await s.api.listTools();
});
after(() => {
  delete process.env.TOOLHOST_SANDBOX_SIMULATE;
  s.dispose();
});

test('the status item warns that commands run unsandboxed', async () => {
  const item = stub.statusItems.find((i) => i.id === 'toolhost.status');
  const bash = () => stub.statusItems.filter((i) => i.id === 'toolhost.bash').at(-1);
  await waitFor(() => /^bash: UNSANDBOXED/.test(bash()?.text), 'the unsandboxed warning');
  assert.equal(bash().severity, vscode.LanguageStatusSeverity.Warning);
  assert.equal(item.severity, vscode.LanguageStatusSeverity.Warning);
  assert.equal(item.text, '$(warning) toolhost');
  assert.equal(item.command.title, 'Why unsandboxed?');
});
