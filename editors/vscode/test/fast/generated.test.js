// package.json's languageModelTools is generated from the catalogue; it must match it.
'use strict';
const path = require('path');
const { spawnSync } = require('child_process');
const { test } = require('node:test');
const assert = require('node:assert/strict');

test('package.json languageModelTools matches `toolhost list --json`', () => {
  const script = path.join(__dirname, '..', '..', 'scripts', 'generate-tools.mjs');
  const run = spawnSync(process.execPath, [script, '--check'], { encoding: 'utf8' });
  assert.equal(run.status, 0, `${run.stderr}${run.stdout}`);
});
