// The review's text logic, without VS Code: some hunks of a change, a rejected hunk put
// back in place (also in a proposal the person edited), and "always" in words.
'use strict';
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { applySome, changedSpan, swapHunk, minimalEdit, parseHeader } = require('../../out/hunks.js');
const { askInWords, describeAlways, describePattern, plain } = require('../../out/words.js');

const BASE = Array.from({ length: 12 }, (_, i) => `l${i + 1}`).join('\n') + '\n';
const first = {
  id: 'a.txt#1',
  file: 'a.txt',
  header: '@@ -1,4 +1,4 @@',
  lines: [' l1', ' l2', '-l3', '+L3', ' l4'],
};
const second = {
  id: 'a.txt#2',
  file: 'a.txt',
  header: '@@ -9,4 +9,5 @@',
  lines: [' l9', ' l10', '-l11', '+L11', '+new', ' l12', '\\ No newline at end of file'],
};

test('a header gives both starts and counts', () => {
  assert.deepEqual(parseHeader('@@ -9,4 +9,5 @@ ctx'), {
    oldStart: 9,
    oldCount: 4,
    newStart: 9,
    newCount: 5,
  });
  assert.deepEqual(parseHeader('@@ -3 +3 @@'), { oldStart: 3, oldCount: 1, newStart: 3, newCount: 1 });
  assert.equal(parseHeader('not a header'), undefined);
});

test('applySome applies only the hunks given, in file order', () => {
  const both = applySome(BASE, [second, first]);
  assert.equal(both, BASE.replace('l3\n', 'L3\n').replace('l11\n', 'L11\nnew\n'));
  assert.equal(applySome(BASE, [second]), BASE.replace('l11\n', 'L11\nnew\n'));
  assert.equal(applySome(BASE, []), BASE);
  assert.equal(applySome('other\ntext\n', [first]), undefined, 'a hunk that does not fit is not forced');
});

test('a rejected hunk goes back to its old lines, and comes back again', () => {
  const proposed = applySome(BASE, [first, second]);
  const rejected = swapHunk(proposed, second, 'old');
  assert.equal(rejected, BASE.replace('l3\n', 'L3\n'));
  assert.equal(swapHunk(rejected, second, 'new'), proposed);
  assert.equal(swapHunk(BASE, second, 'old'), undefined, 'nothing to take back where it is absent');
});

test('the swap finds the hunk where the person moved it, in an edited proposal', () => {
  const proposed = 'added by hand\n' + applySome(BASE, [first, second]);
  assert.equal(swapHunk(proposed, first, 'old'), 'added by hand\n' + BASE.replace('l11\n', 'L11\nnew\n'));
});

test('changedSpan points at the added lines', () => {
  const proposed = applySome(BASE, [first, second]);
  assert.deepEqual(changedSpan(proposed, first), { start: 2, end: 3 });
  assert.deepEqual(changedSpan(proposed, second), { start: 10, end: 12 });
  assert.equal(changedSpan(BASE, second), undefined);
});

test('minimalEdit replaces only what differs', () => {
  assert.deepEqual(minimalEdit('abcdef', 'abXYef'), { start: 2, end: 4, text: 'XY' });
  assert.deepEqual(minimalEdit('same', 'same'), { start: 4, end: 4, text: '' });
});

test('what "always" covers, in words', () => {
  assert.equal(describePattern('bash', 'git status *'), 'commands starting `git status`');
  assert.equal(describePattern('bash', '*'), 'every command');
  assert.equal(describePattern('bash', 'npm run build'), 'the command `npm run build`');
  assert.equal(describePattern('edit', 'src/*'), 'edits to files in `src/`');
  assert.equal(describePattern('edit', '*.py'), 'edits to files matching `*.py`');
  assert.equal(describePattern('edit', 'src/a.py'), 'edits to the file `src/a.py`');
  assert.equal(describePattern('edit', '*'), 'edits to every file');
  assert.equal(
    describeAlways('bash', ['git status *', 'git diff *']),
    'commands starting `git status` and commands starting `git diff`',
  );
  assert.equal(plain('commands starting `git status`'), 'commands starting “git status”');
});

test('an ask that is not an edit says what would happen, not the permission name', () => {
  assert.equal(askInWords('external_directory', ['/tmp/x/*']), 'use files outside the project, in `/tmp/x/`');
  assert.equal(askInWords('webfetch', ['https://example.com/a']), 'fetch `https://example.com/a`');
  assert.equal(askInWords('bash', ['make *'], 'make test'), 'run `make test`');
  for (const permission of ['external_directory', 'webfetch', 'doom_loop']) {
    assert.doesNotMatch(askInWords(permission, ['p']), new RegExp(permission));
  }
});
