// VS Code 1.100 (code-server 4.100) has no MCP server definition API: the extension
// must run without it, register no provider, and keep the static tools visible.
'use strict';
const { after, before, test } = require('node:test');
const assert = require('node:assert/strict');
const { activate, stub } = require('./harness');

let s;
before(async () => {
  s = await activate({ files: { 'a.txt': 'alpha\n' } });
  await s.api.listTools();
});
after(() => s.dispose());

test('without the API no provider is registered and the static tools stay', () => {
  assert.equal(stub.mcpProviders.size, 0);
  const sets = stub.recorded.commands.filter(
    (c) => c.id === 'setContext' && c.args[0] === 'toolhost.staticTools',
  );
  assert.deepEqual(sets.at(-1).args, ['toolhost.staticTools', 'all']);
  assert.ok(stub.lmTools.has('toolhost_edit') && stub.lmTools.has('toolhost_read'));
});
