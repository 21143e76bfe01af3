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

test('a fresh clone (no toolhost anywhere) packages the committed list, and says so', () => {
  const fs = require('fs');
  const os = require('os');
  const script = path.join(__dirname, '..', '..', 'scripts', 'generate-tools.mjs');
  const emptyRepo = fs.mkdtempSync(path.join(os.tmpdir(), 'toolhost-fresh-clone-'));
  const env = { ...process.env, TOOLHOST_REPO: emptyRepo, PATH: path.dirname(process.execPath) };
  delete env.TOOLHOST;
  try {
    const lenient = spawnSync(process.execPath, [script, '--if-available'], { encoding: 'utf8', env });
    assert.equal(lenient.status, 0, `${lenient.stderr}${lenient.stdout}`);
    assert.match(lenient.stdout, /no `toolhost` found .*Keeping the committed languageModelTools/);
    const strict = spawnSync(process.execPath, [script], { encoding: 'utf8', env });
    assert.equal(strict.status, 1);
    assert.match(strict.stderr, /no `toolhost` found/);
    assert.doesNotMatch(strict.stderr, /ENOENT/);
  } finally {
    fs.rmSync(emptyRepo, { recursive: true, force: true });
  }
});
