// Review with the real sidecar and default settings: every edit and command waits
// for a person; the diff opens beside the editor; the notification's buttons are
// short and whole; dismissing it or closing the diff is not an answer; hunks and
// files are accepted one by one; the proposal can be corrected; "always" says what
// it covers and where it is kept; the API lists and answers reviews.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { after, before, beforeEach, test } = require('node:test');
const assert = require('node:assert/strict');
const { activate, answerPrompts, stub, vscode, waitFor } = require('./harness');

const BIG = Array.from({ length: 30 }, (_, i) => `line ${i + 1}`).join('\n') + '\n';

let s;
let session = 0;
let initialize;
before(async () => {
  s = await activate({
    files: {
      'a.txt': 'alpha\nbeta\ngamma\n',
      'big.txt': BIG,
      'keep.txt': 'keep me\n',
      'mine.txt': 'one\ntwo\nthree\n',
      'p1.txt': 'first file\n',
      'p2.txt': 'second file\n',
      'fix.txt': 'colour\n',
      'over.txt': 'top\nmiddle\nbottom\n',
      'over2.txt': 'top\nmiddle\nbottom\n',
      'gone.txt': 'withdrawn\n',
    },
    settings: { 'toolhost.trace.server': 'verbose' },
  });
  initialize = require('./harness').initializeParams();
});
after(() => s.dispose());
beforeEach(async () => {
  // A test that failed half-way must not leave its review for the next one.
  for (const review of s.api.pendingReviews()) s.api.answerReview(review.id, { reply: 'reject' });
  await waitFor(() => s.api.pendingReviews().length === 0, 'no review left over');
  stub.reset();
});

const newSession = () => `ses_review_${++session}`;

/** Starts a call in its own session (after a read of `file`); the promise of its result. */
async function start(tool, args, file, sessionID = newSession()) {
  if (file) {
    const read = await s.api.executeTool('read', { filePath: file }, { sessionID });
    assert.equal(read.isError, false, read.output);
  }
  return { sessionID, result: s.api.executeTool(tool, args, { sessionID }) };
}

async function nextReview(count = 1) {
  return waitFor(
    () => s.api.pendingReviews().length >= count && s.api.pendingReviews().at(-1),
    'a pending review',
  );
}

const diffCalls = () => stub.recorded.commands.filter((c) => c.id === 'vscode.diff');

/** The options of the diff an edit of big.txt opened (the edit accepted). */
async function diffOptionsOfAcceptedEdit(oldString, newString) {
  answerPrompts(() => 'Accept');
  const calls = diffCalls().length;
  const { result } = await start('edit', { filePath: 'big.txt', oldString, newString }, 'big.txt');
  assert.equal((await result).isError, false);
  return diffCalls()[calls].args[3];
}
const reviewItem = () => stub.statusBarItems.find((i) => i.id === 'toolhost.reviews');
const proposedDoc = (review) =>
  stub.documents.get(
    diffCalls()
      .find((c) => c.args[1].query.startsWith(`${review.id}/`))
      .args[1].toString(),
  );

test('with default settings an edit and a command both wait for an answer', async () => {
  assert.deepEqual(initialize.initializationOptions.permissionDefaults, { edit: 'ask', bash: 'ask' });

  answerPrompts(() => undefined); // nobody clicks
  const edit = await start(
    'edit',
    { filePath: 'keep.txt', oldString: 'keep', newString: 'lose' },
    'keep.txt',
  );
  const review = await nextReview();
  assert.equal(review.tool, 'edit');
  assert.match(review.id, /^per_/);
  assert.deepEqual(
    review.files.map((f) => [f.relativePath, f.type]),
    [['keep.txt', 'update']],
  );
  assert.deepEqual(
    review.hunks.map((h) => h.id),
    ['keep.txt#1'],
  );
  await new Promise((resolve) => setTimeout(resolve, 1500));
  assert.equal(s.api.pendingReviews().length, 1, 'the edit should still be waiting');
  assert.equal(s.read('keep.txt'), 'keep me\n');

  const bash = await start('bash', { command: 'echo hi > made.txt', description: 'Writes a file' });
  const command = await nextReview(2);
  assert.equal(command.tool, 'bash');
  assert.equal(command.files.length, 0);
  assert.ok(!require('fs').existsSync(s.file('made.txt')), 'the command ran without an answer');

  s.api.answerReview(command.id, { reply: 'reject', message: 'not now' });
  const rejected = await bash.result;
  assert.equal(rejected.metadata.error, 'permission_rejected');
  assert.match(rejected.output, /not now/);
  s.api.answerReview(review.id, { reply: 'reject' });
  assert.equal((await edit.result).metadata.error, 'permission_rejected');
  assert.deepEqual(s.api.pendingReviews(), []);
});

test('the diff opens beside the editor, without focus, at the change; the buttons are short and whole', async () => {
  const active = await stub.focus(s.uri('a.txt'), 0);
  let items;
  answerPrompts((offered) => {
    items = offered;
    return 'Accept';
  });
  const { result } = await start(
    'edit',
    { filePath: 'big.txt', oldString: 'line 20', newString: 'line twenty' },
    'big.txt',
  );
  const done = await result;
  assert.equal(done.isError, false, done.output);
  assert.deepEqual(items, ['Accept', 'Reject', 'More…']);
  const [left, right, title, options] = diffCalls()[0].args;
  assert.equal(left.toString(), s.uri('big.txt').toString());
  assert.equal(right.scheme, 'toolhost-proposed');
  assert.ok(right.path.endsWith('/big.txt'), 'the proposed document keeps the file name (and language)');
  assert.equal(title, 'big.txt ↔ proposed by edit');
  assert.equal(options.preview, false);
  assert.equal(options.preserveFocus, true);
  assert.equal(options.viewColumn, vscode.ViewColumn.Beside);
  assert.equal(options.selection.start.line, 19, 'the diff should open at the changed line');
  assert.equal(stub.documents.get(right.toString()).getText(), BIG.replace('line 20', 'line twenty'));
  assert.equal(vscode.window.activeTextEditor, active, 'the editor being typed in keeps focus');
  assert.match(stub.recorded.messages[0].message, /edit proposes a change to big\.txt \(\+1 −1\)/);
  assert.equal(s.read('big.txt'), BIG.replace('line 20', 'line twenty'));
  await waitFor(
    () => stub.tabGroup.tabs.every((t) => !(t.input instanceof vscode.TabInputTextDiff)),
    'the diff to close',
  );
});

test('typing in the rightmost of two groups, the diff opens in the other group, not a third narrow one', async () => {
  await stub.focus(s.uri('a.txt'), 0);
  // The person has split the editor and types in the right-hand group.
  const left = { tabs: [], isActive: false, viewColumn: 1, activeTab: undefined };
  const groups = vscode.window.tabGroups.all;
  const { viewColumn } = stub.tabGroup;
  groups.unshift(left);
  stub.tabGroup.viewColumn = 2;
  try {
    const options = await diffOptionsOfAcceptedEdit('line 21', 'line twenty-one');
    assert.equal(options.viewColumn, 1, 'a third column would cut off the changed line and its note');
    assert.equal(options.preserveFocus, true);
  } finally {
    groups.splice(groups.indexOf(left), 1);
    stub.tabGroup.viewColumn = viewColumn;
  }
});

test('with no editor open, the diff takes the whole editor area, not half of it', async () => {
  const { tabs } = stub.tabGroup;
  const visible = vscode.window.visibleTextEditors;
  stub.tabGroup.tabs = [];
  vscode.window.visibleTextEditors = [];
  try {
    const options = await diffOptionsOfAcceptedEdit('line 22', 'line twenty-two');
    assert.equal(options.viewColumn, stub.tabGroup.viewColumn);
  } finally {
    stub.tabGroup.tabs = tabs;
    vscode.window.visibleTextEditors = visible;
  }
});

test('a dismissed notification or a closed diff is not an answer; the status item brings the review back', async () => {
  answerPrompts(() => undefined); // dismissed
  const { result } = await start(
    'edit',
    { filePath: 'a.txt', oldString: 'beta', newString: 'BETA' },
    'a.txt',
  );
  const review = await nextReview();
  await waitFor(() => reviewItem().visible, 'the status item');
  assert.equal(reviewItem().text, '$(diff) 1 change to review');
  assert.equal(reviewItem().backgroundColor.id, 'statusBarItem.warningBackground');
  const view = stub.treeViews.get('toolhost.reviews');
  assert.equal(view.badge.value, 1);

  // The person closes the diff tab: still pending.
  await vscode.window.tabGroups.close(
    stub.tabGroup.tabs.filter((t) => t.input instanceof vscode.TabInputTextDiff),
  );
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.equal(s.api.pendingReviews().length, 1);
  assert.equal(s.read('a.txt'), 'alpha\nbeta\ngamma\n');

  // The status item reopens it, focused this time; the title bar's ✓ accepts it.
  const before = diffCalls().length;
  await vscode.commands.executeCommand(reviewItem().command.command);
  assert.equal(diffCalls().length, before + 1, 'the status item should reopen the diff');
  assert.equal(diffCalls().at(-1).args[3].preserveFocus, false);
  const proposed = diffCalls().at(-1).args[1];
  await vscode.commands.executeCommand('toolhost.review.acceptAll', proposed);
  const done = await result;
  assert.equal(done.isError, false, done.output);
  assert.equal(s.read('a.txt'), 'alpha\nBETA\ngamma\n');
  assert.equal(review.id, review.id);
  await waitFor(() => !reviewItem().visible, 'the status item to hide');
  assert.equal(view.badge, undefined);
});

test('Reject with a reason (from More…): the reason reaches the model', async () => {
  answerPrompts(() => 'More…');
  stub.answers.quickPick = (items) => items.find((i) => /Reject with a reason/.test(i.label));
  stub.answers.inputBox = () => 'use British spelling';
  const { result } = await start(
    'edit',
    { filePath: 'fix.txt', oldString: 'colour', newString: 'color' },
    'fix.txt',
  );
  const done = await result;
  assert.equal(done.metadata.error, 'permission_rejected');
  assert.match(done.output, /use British spelling/);
  assert.equal(s.read('fix.txt'), 'colour\n');
  const labels = stub.recorded.quickPicks[0].items.map((i) => i.label);
  assert.ok(labels.includes('$(check) Accept'), labels.join(' | '));
  assert.ok(labels.includes('$(close) Reject'), labels.join(' | '));
  assert.ok(
    labels.some((l) => l === '$(check-all) Always allow this file (fix.txt)…'),
    `"always" should say what it covers: ${labels.join(' | ')}`,
  );
});

test('per hunk: reject one of two hunks (it shows as rejected in place), accept the other; the result says which', async () => {
  answerPrompts(() => undefined);
  const original = s.read('big.txt');
  const { result } = await start(
    'multiedit',
    {
      filePath: 'big.txt',
      edits: [
        { oldString: 'line 3\n', newString: 'line three\n' },
        { oldString: 'line 25\n', newString: 'line twenty-five\n' },
      ],
    },
    'big.txt',
  );
  const review = await nextReview();
  assert.equal(review.hunks.length, 2, JSON.stringify(review.hunks));
  const [first, second] = review.hunks;
  const doc = await waitFor(() => proposedDoc(review), 'the proposed document');
  assert.match(doc.getText(), /line three[\s\S]*line twenty-five/);

  await vscode.commands.executeCommand('toolhost.review.rejectHunk', review.id, second.id);
  assert.doesNotMatch(doc.getText(), /twenty-five/, 'the rejected hunk should be taken out of the proposal');
  assert.match(doc.getText(), /line 25\n/);
  assert.equal(s.api.pendingReviews()[0].decisions[second.id], 'rejected');
  // The review view shows the decision.
  const tree = stub.treeViews.get('toolhost.reviews').provider;
  const [node] = tree.getChildren();
  const hunks = tree.getChildren(node).map((n) => tree.getTreeItem(n));
  assert.deepEqual(
    hunks.map((h) => h.contextValue),
    ['toolhost.review.hunk.pending', 'toolhost.review.hunk.rejected'],
  );

  await vscode.commands.executeCommand('toolhost.review.acceptHunk', review.id, first.id);
  const done = await result;
  assert.equal(done.isError, false, done.output);
  assert.match(done.output, new RegExp(`Applied: ${first.id.replace('.', '\\.')}`));
  assert.match(done.output, new RegExp(`Not applied: ${second.id.replace('.', '\\.')}`));
  assert.equal(s.read('big.txt'), original.replace('line 3\n', 'line three\n'));
});

test('Alt+Y / Alt+N decide the hunk under the cursor in the proposed side', async () => {
  answerPrompts(() => undefined);
  const original = s.read('big.txt');
  const { result } = await start(
    'multiedit',
    {
      filePath: 'big.txt',
      edits: [
        { oldString: 'line 5\n', newString: 'line five\n' },
        { oldString: 'line 28\n', newString: 'line twenty-eight\n' },
      ],
    },
    'big.txt',
  );
  const review = await nextReview();
  const doc = await waitFor(() => proposedDoc(review), 'the proposed document');
  const lineOf = (text) => doc.getText().split('\n').indexOf(text);
  // Per change: a hover with links, and CodeLenses (shown where diffEditor.codeLens is on).
  const hover = stub.providers.hover.find((p) => p.selector.scheme === 'toolhost-proposed').provider;
  const shown = hover.provideHover(doc, new vscode.Position(lineOf('line twenty-eight'), 0));
  assert.match(
    shown.contents[0].value,
    /Change 2 of 2.*\[\$\(check\) Accept this change\]\(command:toolhost\.review\.acceptHunk\?/s,
  );
  const lenses = stub.providers.codeLens.find((p) => p.selector.scheme === 'toolhost-proposed').provider;
  assert.deepEqual(
    lenses.provideCodeLenses(doc).map((l) => [l.range.start.line, l.command.title]),
    [
      [lineOf('line five'), '$(check) Accept change 1/2'],
      [lineOf('line five'), '$(close) Reject change 1/2'],
      [lineOf('line twenty-eight'), '$(check) Accept change 2/2'],
      [lineOf('line twenty-eight'), '$(close) Reject change 2/2'],
    ],
  );
  await stub.focus(doc.uri, lineOf('line twenty-eight'));
  await vscode.commands.executeCommand('toolhost.review.acceptHunk');
  assert.equal(s.api.pendingReviews()[0].decisions[review.hunks[1].id], 'accepted');
  await stub.focus(doc.uri, lineOf('line five'));
  await vscode.commands.executeCommand('toolhost.review.rejectHunk');
  const done = await result;
  assert.match(done.output, /Not applied: big\.txt#1/);
  assert.equal(s.read('big.txt'), original.replace('line 28\n', 'line twenty-eight\n'));
  // The hover offers the same two links, and each hunk had a note at its end.
  const notes = stub.recorded.decorations.flatMap((d) =>
    d.options.map((o) => o.renderOptions.after.contentText),
  );
  assert.ok(
    notes.some((n) => n === '2/2 Alt+Y/N'),
    JSON.stringify(notes),
  );
  assert.ok(
    notes.every((n) => n.length <= 16),
    `short enough for a split diff: ${JSON.stringify(notes)}`,
  );
});

test('the person corrects the proposal before accepting: their text lands, and the model is told', async () => {
  answerPrompts(() => undefined);
  const { result } = await start(
    'edit',
    { filePath: 'mine.txt', oldString: 'two', newString: 'TWO' },
    'mine.txt',
  );
  const review = await nextReview();
  const doc = await waitFor(() => proposedDoc(review), 'the proposed document');
  await stub.type(doc.uri, [new vscode.TextEdit(new vscode.Range(2, 0, 2, 5), 'THREE (by hand)')]);
  await vscode.commands.executeCommand('toolhost.review.acceptAll', doc.uri);
  const done = await result;
  assert.equal(done.isError, false, done.output);
  assert.equal(s.read('mine.txt'), 'one\nTWO\nTHREE (by hand)\n');
  assert.match(done.output, /THREE \(by hand\)/, 'the model should see what the person changed');
  assert.ok(
    stub.recorded.log.some((l) => /"edited":\{"mine\.txt":"one\\nTWO\\nTHREE \(by hand\)\\n"\}/.test(l)),
    'the reply should carry the edited text',
  );
});

test('a change to two files: accept one file, reject the other, from the Review view', async () => {
  answerPrompts(() => undefined);
  const patch = [
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
  const sessionID = newSession();
  await s.api.executeTool('read', { filePath: 'p1.txt' }, { sessionID });
  await s.api.executeTool('read', { filePath: 'p2.txt' }, { sessionID });
  const call = s.api.executeTool('apply_patch', { patchText: patch }, { sessionID });
  const review = await nextReview();
  assert.deepEqual(
    review.files.map((f) => f.relativePath),
    ['p1.txt', 'p2.txt'],
  );
  assert.match(diffCalls().at(-1).args[2], /p1\.txt ↔ proposed by apply_patch \(file 1 of 2\)/);
  const tree = stub.treeViews.get('toolhost.reviews').provider;
  const [root] = tree.getChildren();
  const [p1, p2] = tree.getChildren(root);
  assert.equal(tree.getTreeItem(p1).contextValue, 'toolhost.review.file.pending');
  await vscode.commands.executeCommand('toolhost.review.rejectFile', p2);
  await vscode.commands.executeCommand('toolhost.review.acceptFile', p1);
  const done = await call;
  assert.equal(done.isError, false, done.output);
  assert.equal(s.read('p1.txt'), 'first file, changed\n');
  assert.equal(s.read('p2.txt'), 'second file\n');
  assert.match(done.output, /p2\.txt/);
});

test('Always allow: it says what it covers, asks for how long, and a session rule is not asked again', async () => {
  answerPrompts(() => 'More…');
  stub.answers.quickPick = (items) =>
    items.find((i) => /^\$\(check-all\) Always allow/.test(i.label)) ??
    items.find((i) => i.label === 'For this session');
  const sessionID = newSession();
  const first = await s.api.executeTool(
    'bash',
    { command: 'echo one', description: 'Says one' },
    { sessionID },
  );
  assert.equal(first.isError, false, first.output);
  const [more, scopes] = stub.recorded.quickPicks;
  assert.ok(
    more.items.some((i) => i.label === '$(check-all) Always allow commands starting “echo”…'),
    more.items.map((i) => i.label).join(' | '),
  );
  assert.deepEqual(
    scopes.items.map((i) => i.label),
    ['For this session', 'For this project', 'For all my projects'],
  );
  // The real file the sidecar saves to (here OPENCODE_CONFIG_DIR), not a path guessed here.
  const userFile = require('path').join(process.env.OPENCODE_CONFIG_DIR, 'opencode.json');
  assert.equal(scopes.items[2].detail, `Saved to your user config (${userFile}).`);
  assert.ok(
    stub.recorded.log.some((l) =>
      /"reply":"always".*"scope":"session"|"scope":"session".*"reply":"always"/.test(l),
    ),
  );
  stub.reset();
  const second = await s.api.executeTool(
    'bash',
    { command: 'echo two', description: 'Says two' },
    { sessionID },
  );
  assert.equal(second.isError, false, second.output);
  assert.equal(stub.recorded.messages.length, 0, 'the session rule should answer without asking');
  answerPrompts(() => 'Reject');
  const other = await s.api.executeTool('bash', { command: 'echo three', description: 'Says three' });
  assert.equal(other.metadata.error, 'permission_rejected', 'another session is asked again');
});

test('an edit that overlaps unsaved typing offers the three choices; "Apply in editor only" leaves the disk', async () => {
  const doc = await stub.type(s.file('over.txt'), [
    new vscode.TextEdit(new vscode.Range(1, 0, 1, 6), 'MIDDLE typed'),
  ]);
  let offered;
  answerPrompts((items) => {
    offered = items;
    return 'Apply in editor only';
  });
  const { result } = await start(
    'edit',
    { filePath: 'over.txt', oldString: 'MIDDLE typed', newString: 'MIDDLE typed, agent' },
    'over.txt',
  );
  const done = await result;
  assert.deepEqual(offered, ['Apply in editor only', 'Save my changes too', 'Reject']);
  assert.match(stub.recorded.messages[0].message, /overlaps lines you changed and have not saved/);
  assert.equal(done.isError, false, done.output);
  assert.equal(doc.getText(), 'top\nMIDDLE typed, agent\nbottom\n');
  assert.equal(s.read('over.txt'), 'top\nmiddle\nbottom\n', 'the disk is untouched');
  assert.equal(doc.isDirty, true);
});

test('"Save my changes too" saves the buffer with the agent\'s change and the typing', async () => {
  const doc = await stub.type(s.file('over2.txt'), [
    new vscode.TextEdit(new vscode.Range(1, 0, 1, 6), 'MIDDLE typed'),
  ]);
  answerPrompts(() => 'Save my changes too');
  const { result } = await start(
    'edit',
    { filePath: 'over2.txt', oldString: 'MIDDLE typed', newString: 'MIDDLE typed, agent' },
    'over2.txt',
  );
  const done = await result;
  assert.equal(done.isError, false, done.output);
  assert.equal(s.read('over2.txt'), 'top\nMIDDLE typed, agent\nbottom\n');
  assert.equal(doc.isDirty, false);
});

test('toolhost.prompts "modal" asks in a dialog with whole labels; "notification" opens no diff', async () => {
  try {
    stub.setSetting('toolhost.prompts', 'modal');
    answerPrompts(() => 'Reject');
    const { result } = await start(
      'edit',
      { filePath: 'keep.txt', oldString: 'keep', newString: 'lose' },
      'keep.txt',
    );
    await result;
    const dialog = stub.recorded.messages[0];
    assert.equal(dialog.options.modal, true);
    assert.deepEqual(dialog.items, [
      'Show the diff',
      'Accept',
      'Always allow this file (keep.txt)…',
      'Reject',
      'Reject with a reason…',
    ]);
    assert.equal(diffCalls().length, 1);

    // The first button is the one a Space typed into the editor presses: it answers nothing.
    stub.reset();
    answerPrompts(() => 'Show the diff');
    const pressed = await start(
      'edit',
      { filePath: 'keep.txt', oldString: 'keep', newString: 'lose' },
      'keep.txt',
    );
    const review = await nextReview();
    await waitFor(() => diffCalls().length === 2, 'the diff shown again');
    const shown = diffCalls()[1];
    // Shown where its tab is (the stub's one group), not in a new group beside it.
    assert.equal(shown.args[3].viewColumn, vscode.window.tabGroups.all[0].viewColumn, 'no copy beside it');
    // Shown without moving the keys there: what is typed next goes where it was going,
    // never into the proposed side (which can be edited).
    assert.equal(shown.args[3].preserveFocus, true, 'the focus stays in the editor');
    assert.equal(s.read('keep.txt'), 'keep me\n', 'nothing accepted');
    assert.equal(s.api.pendingReviews().length, 1, 'still pending');
    s.api.answerReview(review.id, { reply: 'reject' });
    await pressed.result;

    stub.reset();
    stub.setSetting('toolhost.prompts', 'notification');
    answerPrompts(() => 'Reject');
    const again = await start(
      'edit',
      { filePath: 'keep.txt', oldString: 'keep', newString: 'lose' },
      'keep.txt',
    );
    await again.result;
    assert.equal(diffCalls().length, 0);
  } finally {
    stub.setSetting('toolhost.prompts', undefined);
  }
});

test('answerReview checks its answer and says what is wrong; onDidChangePendingReviews fires', async () => {
  const changes = [];
  const subscription = s.api.onDidChangePendingReviews((list) => changes.push(list.length));
  answerPrompts(() => undefined);
  const { result } = await start(
    'edit',
    { filePath: 'keep.txt', oldString: 'keep', newString: 'lose' },
    'keep.txt',
  );
  const review = await nextReview();
  assert.throws(
    () => s.api.answerReview('per_nope', { reply: 'once' }),
    /no pending review "per_nope"; pending: "per_/,
  );
  assert.throws(
    () => s.api.answerReview(review.id, { reply: 'yes' }),
    /reply must be "once", "always" or "reject"/,
  );
  assert.throws(
    () => s.api.answerReview(review.id, { reply: 'once', hunks: ['keep.txt#9'] }),
    /no hunk "keep\.txt#9" in this review; it has "keep\.txt#1"/,
  );
  assert.throws(
    () => s.api.answerReview(review.id, { reply: 'once', unsaved: 'disk' }),
    /unsaved must be "editor"/,
  );
  s.api.answerReview(review.id, { reply: 'once', hunks: ['keep.txt#1'] });
  const done = await result;
  assert.equal(done.isError, false, done.output);
  assert.equal(s.read('keep.txt'), 'lose me\n');
  subscription.dispose();
  assert.deepEqual(changes.slice(0, 1), [1]);
  assert.equal(changes.at(-1), 0);
});

test('a review the sidecar withdraws (its call was cancelled) leaves the list and closes its diff', async () => {
  answerPrompts(() => undefined);
  const sessionID = newSession();
  await s.api.executeTool('read', { filePath: 'gone.txt' }, { sessionID });
  const source = new vscode.CancellationTokenSource();
  const call = s.api.executeTool(
    'edit',
    { filePath: 'gone.txt', oldString: 'withdrawn', newString: 'never' },
    { sessionID, token: source.token },
  );
  await nextReview();
  source.cancel();
  await assert.rejects(call, (error) => error instanceof vscode.CancellationError);
  await waitFor(() => s.api.pendingReviews().length === 0, 'the review to be withdrawn');
  await waitFor(
    () => stub.tabGroup.tabs.every((t) => !(t.input instanceof vscode.TabInputTextDiff)),
    'its diff to close',
  );
  assert.equal(s.read('gone.txt'), 'withdrawn\n');
});

// Last: it saves a rule in the project's config.
test('a restart with a review pending withdraws it and tells the agent in toolhost words', async () => {
  const path = s.file('p2.txt');
  let click;
  stub.answers.message = (message, items) =>
    items.includes('Accept') ? new Promise((resolve) => (click = () => resolve('Accept'))) : undefined;
  const call = await start('edit', { filePath: path, oldString: 'second', newString: 'SECOND' }, path);
  await nextReview();
  await vscode.commands.executeCommand('toolhost.restart');
  const result = await call.result;
  assert.equal(result.isError, true);
  assert.equal(result.metadata.error, 'restarted');
  assert.match(result.output, /toolhost was restarted in VS Code .* a review it waited for was withdrawn/);
  assert.doesNotMatch(result.output, /Pending response rejected/);
  assert.equal(s.api.pendingReviews().length, 0, 'the review is withdrawn');
  assert.equal(s.read('p2.txt'), 'second file\n', 'nothing applied');
  click(); // the toast left on screen
  await waitFor(
    () =>
      stub.recorded.messages.some(
        (m) =>
          m.message ===
          'toolhost: that request is no longer pending: it was withdrawn because the sidecar was restarted.',
      ),
    'what the leftover toast says',
  );
  assert.equal(s.read('p2.txt'), 'second file\n', 'the click applied nothing');
});

test('Show Allowed Rules lists an "always" saved to the project in words, and revokes it', async () => {
  answerPrompts(() => 'More…');
  stub.answers.quickPick = (items) =>
    items.find((i) => /^\$\(check-all\) Always allow/.test(i.label)) ??
    items.find((i) => i.label === 'For this project');
  const first = await s.api.executeTool('bash', { command: 'printf saved', description: 'Prints' });
  assert.equal(first.isError, false, first.output);
  const config = JSON.parse(s.read('opencode.json'));
  assert.deepEqual(config.permission.bash, { 'printf *': 'allow' });

  stub.reset();
  await vscode.commands.executeCommand('toolhost.showRules');
  const pick = stub.recorded.quickPickWidgets[0];
  await waitFor(() => pick.items.length > 0 && !pick.busy, 'the rules to load');
  const item = pick.items.find((i) => i.rule.pattern === 'printf *');
  assert.ok(item, JSON.stringify(pick.items.map((i) => i.label)));
  assert.equal(item.label, '$(terminal) commands starting “printf”');
  assert.match(item.description, /bash: printf \* · saved in the project/);
  assert.match(item.detail, /opencode\.json/);

  pick._button(item, item.buttons.at(-1)); // the trash button
  await waitFor(() => !pick.items.some((i) => i.rule.pattern === 'printf *') && !pick.busy, 'the rule to go');
  // toolhost created opencode.json for this rule: revoking it leaves nothing behind.
  assert.ok(!require('fs').existsSync(s.file('opencode.json')), 'the file toolhost created is gone');
  assert.match(
    stub.recorded.messages.at(-1).message,
    /revoked the rule that allowed commands starting “printf” \(saved in the project\)/,
  );

  answerPrompts(() => 'Reject');
  const again = await s.api.executeTool('bash', { command: 'printf again', description: 'Prints' });
  assert.equal(again.metadata.error, 'permission_rejected', 'once revoked, the command is asked about again');
});

test('a command asking to write outside says, before it runs again, what its first run changed', async () => {
  const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'toolhost-outside-'));
  const command = `echo RAN >> ran.txt; python3 -c "open('${outside}/' + 'out', 'w')"`;
  answerPrompts((items, message) => (/wants to run/.test(message) ? 'Allow' : undefined));
  const { result } = await start('bash', { command, description: 'Writes inside and outside' });
  const rerun = await waitFor(
    () => stub.recorded.messages.find((m) => /run again/.test(m.message)),
    'the ask to write outside',
  );
  assert.match(rerun.message, /It will run again; the first run changed ran\.txt \(created\)/);
  assert.match(rerun.message, /put back as they were before it runs again\./);
  s.api.answerReview(s.api.pendingReviews()[0].id, { reply: 'reject' });
  await result;
  assert.equal(s.read('ran.txt'), 'RAN\n', 'it ran once');
  fs.rmSync(outside, { recursive: true, force: true });
});

test('an ask that is asked every time (a command making a git repository) offers no "always"', async () => {
  answerPrompts((items, message) => (/wants to run/.test(message) ? 'Allow' : undefined));
  const { result } = await start('bash', { command: 'git init -q sub', description: 'Makes a repository' });
  const asked = await waitFor(
    () => stub.recorded.messages.find((m) => /make a git repository in sub/.test(m.message)),
    'the ask to make the repository',
  );
  assert.doesNotMatch(asked.message, /Always/);
  assert.ok(!asked.items.some((i) => /Always/.test(i)), asked.items.join(' | '));
  const [review] = s.api.pendingReviews();
  assert.deepEqual(review.alwaysOptions, []);
  assert.throws(
    () => s.api.answerReview(review.id, { reply: 'always' }),
    /this ask offers no "always" \(it is asked every time\)/,
  );
  s.api.answerReview(review.id, { reply: 'reject' });
  const done = await result;
  assert.ok(!fs.existsSync(path.join(s.file('sub'), '.git')), 'no repository made');
  assert.match(done.output, /repositor/);
});
