// The proposed text behind the diff preview: LSP text edits, and unified diffs
// (also with their common indentation trimmed, as the sidecar sends them).
'use strict';
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { applyTextEdits, applyHunks, parseUnifiedDiff, hunkSides } = require('../../out/diffs.js');

const range = (sl, sc, el, ec) => ({ start: { line: sl, character: sc }, end: { line: el, character: ec } });

test('text edits apply from the end, so earlier positions stay valid', () => {
  const text = 'one\ntwo\nthree\n';
  const edits = [
    { range: range(0, 0, 0, 3), newText: 'ONE' },
    { range: range(2, 0, 2, 5), newText: 'THREE\nFOUR' },
    { range: range(1, 3, 1, 3), newText: '!' },
  ];
  assert.equal(applyTextEdits(text, edits), 'ONE\ntwo!\nTHREE\nFOUR\n');
});

test('text edits count UTF-16 units and CRLF line ends, as LSP does', () => {
  assert.equal(
    applyTextEdits('a😀b\r\nc\r\n', [{ range: range(0, 3, 0, 4), newText: 'B' }]),
    'a😀B\r\nc\r\n',
  );
  assert.equal(applyTextEdits('x\r\ny\r\n', [{ range: range(1, 0, 1, 1), newText: 'Y' }]), 'x\r\nY\r\n');
  assert.equal(applyTextEdits('', [{ range: range(0, 0, 0, 0), newText: 'new\n' }]), 'new\n');
});

const DIFF = [
  'Index: a.txt',
  '===================================================================',
  '--- a/a.txt',
  '+++ b/a.txt',
  '@@ -1,3 +1,3 @@',
  ' alpha',
  '-beta',
  '+BETA',
  ' gamma',
  '',
].join('\n');

test('a unified diff applies to the file it was made from', () => {
  const [file] = parseUnifiedDiff(DIFF);
  assert.equal(file.oldPath, 'a.txt');
  assert.equal(file.newPath, 'a.txt');
  assert.equal(applyHunks('alpha\nbeta\ngamma\n', file), 'alpha\nBETA\ngamma\n');
});

test('a diff that does not fit the text gives undefined, never a wrong preview', () => {
  const [file] = parseUnifiedDiff(DIFF);
  assert.equal(applyHunks('alpha\nsomething else\ngamma\n', file), undefined);
});

test('a trimmed diff gets its indentation back from the file', () => {
  const text = 'class A:\n    def f(self):\n        a = 1\n        b = 2\n        c = 3\n';
  const trimmed = [
    '--- a/x.py',
    '+++ b/x.py',
    '@@ -3,3 +3,3 @@',
    ' a = 1',
    '-b = 2',
    '+b = 20',
    ' c = 3',
  ].join('\n');
  const [file] = parseUnifiedDiff(trimmed);
  assert.equal(
    applyHunks(text, file),
    'class A:\n    def f(self):\n        a = 1\n        b = 20\n        c = 3\n',
  );
});

test('several hunks, an added line and an empty context line', () => {
  const text = ['l1', 'l2', '', 'l4', 'l5', 'l6', 'l7', 'l8', 'l9', 'l10', ''].join('\n');
  const diff = [
    '--- a/f',
    '+++ b/f',
    '@@ -1,3 +1,4 @@',
    ' l1',
    '+inserted',
    ' l2',
    '',
    '@@ -9,2 +10,2 @@',
    ' l9',
    '-l10',
    '+L10',
  ].join('\n');
  const [file] = parseUnifiedDiff(diff);
  assert.equal(file.hunks.length, 2);
  assert.equal(
    applyHunks(text, file),
    ['l1', 'inserted', 'l2', '', 'l4', 'l5', 'l6', 'l7', 'l8', 'l9', 'L10', ''].join('\n'),
  );
});

test('new and deleted files, and several files in one diff', () => {
  const diff = [
    '--- /dev/null',
    '+++ b/new.txt',
    '@@ -0,0 +1,2 @@',
    '+x',
    '+y',
    '--- a/gone.txt',
    '+++ /dev/null',
    '@@ -1 +0,0 @@',
    '-bye',
  ].join('\n');
  const [created, deleted] = parseUnifiedDiff(diff);
  assert.equal(created.oldPath, undefined);
  assert.equal(created.newPath, 'new.txt');
  assert.equal(applyHunks('', created), 'x\ny\n');
  assert.equal(deleted.newPath, undefined);
  assert.deepEqual(hunkSides(deleted), { before: 'bye', after: '' });
});
