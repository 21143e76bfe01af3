// The review's property in the fast tier, measured rather than hoped: random
// interleavings of agent changes (one or two hunks; accepted, rejected, accepted in part,
// edited by the person; overlapping the user's unsaved lines or not; reviewed or allowed
// by a rule) with the user typing, undoing and saving in the same document, while a review
// is open and between calls. Invariants, after every step:
//
//   * every word the user typed (and has not undone) is in the document exactly once;
//   * every hunk the answer accepted is there exactly once, every other not at all;
//   * one undo takes back exactly one step;
//   * the disk never holds a word the user typed and did not save, nor a word twice;
//     a document without unsaved changes is the disk, and after a save they are equal.
//
// One extension host stand-in and one sidecar run every case. The suite runs 50 cases
// with a new seed each time; TOOLHOST_PROPERTY_CASES=1000 runs the full property, and
// TOOLHOST_PROPERTY_SEED replays a run (the seed is printed first, and with a failure).
'use strict';
const fs = require('fs');
const { after, before, test } = require('node:test');
const assert = require('node:assert/strict');
const { activate, answerPrompts, stub, vscode, waitFor } = require('./harness');

const SEED = Number(process.env.TOOLHOST_PROPERTY_SEED) || Date.now() % 1000000;
const CASES = Number(process.env.TOOLHOST_PROPERTY_CASES) || 50;
process.stderr.write(`property seed ${SEED}, ${CASES} cases\n`);

let s;
before(async () => {
  s = await activate({
    // Files named auto-* are allowed without a review (unless the change overlaps the
    // user's unsaved lines, which always asks); every other edit is reviewed.
    settings: { 'toolhost.config': { permission: { edit: { 'auto-*': 'allow' } } } },
  });
  answerPrompts(() => undefined); // the notifications go by; answers come through the API
});
after(() => s.dispose());

let rng = SEED;
const random = (n) => {
  rng = (rng * 1103515245 + 12345) % 2147483648;
  return (rng % n) + 1;
};
const chance = (p) => random(1000) <= p * 1000;
let serial = 0;
const token = (prefix) => `${prefix}${++serial}`;
const count = (text, word) => (text.match(new RegExp(`\\b${word}\\b`, 'g')) || []).length;

function fail(c, what) {
  throw new Error(
    `seed ${SEED} case ${c.index} (${c.name}): ${what}\nsteps: ${c.log.join('; ')}\n` +
      `document:\n${c.doc.getText()}\ndisk:\n${fs.readFileSync(c.path, 'utf8')}`,
  );
}

function check(c, where) {
  const now = c.doc.getText();
  for (const word of c.live) {
    if (count(now, word) !== 1) fail(c, `${where}: the user's ${word} is there ${count(now, word)} times`);
  }
  for (const word of c.gone) if (count(now, word)) fail(c, `${where}: the undone ${word} is still there`);
  for (const word of c.applied) {
    if (count(now, word) !== 1) fail(c, `${where}: accepted ${word} is there ${count(now, word)} times`);
  }
  for (const word of c.refused) if (count(now, word)) fail(c, `${where}: ${word}, not applied, is there`);
  const disk = fs.readFileSync(c.path, 'utf8');
  for (const [word] of disk.matchAll(/\bu\d+\b/g)) {
    if (!c.saved.has(word)) fail(c, `${where}: the user's unsaved ${word} reached the disk`);
  }
  for (const [word] of disk.matchAll(/\b[Ae]\d+\b/g)) {
    if (count(disk, word) > 1) fail(c, `${where}: ${word} is on disk twice`);
  }
  if (!c.doc.isDirty && disk !== now) fail(c, `${where}: a document without unsaved changes is not the disk`);
}

const savedNow = (c) => c.live.forEach((word) => c.saved.add(word));

async function userStep(c) {
  const roll = random(10);
  if (roll <= 6) {
    const word = token('u');
    const line = random(c.doc.lineCount - 1) - 1; // the last line is the empty one after \n
    const end = c.doc.lineAt(line).range.end;
    const text = chance(0.5) ? ` ${word}` : `\n${word}`;
    await stub.type(c.uri, [new vscode.TextEdit(new vscode.Range(end, end), text)]);
    c.live.add(word);
    c.blocks.push({ words: [word], user: true });
    c.log.push(`type ${word}@${line + 1}`);
  } else if (roll <= 8) {
    const top = c.blocks.pop();
    if (!top) return;
    const before = c.doc.getText();
    stub.undo(c.uri);
    const after = c.doc.getText();
    for (const word of top.words) {
      if (count(before, word) !== count(after, word) + 1)
        fail(c, `one undo did not take back exactly ${word}`);
      c.live.delete(word);
      c.applied.delete(word);
      (top.user ? c.gone : c.refused).add(word);
    }
    for (const [word] of before.matchAll(/\b[uAe]\d+\b/g)) {
      if (count(before, word) !== count(after, word) && !top.words.includes(word)) {
        fail(c, `one undo also took back ${word}`);
      }
    }
    c.log.push('undo');
  } else {
    await c.doc.save();
    savedNow(c);
    c.log.push('save');
  }
  check(c, c.log.at(-1));
}

async function agentCall(c) {
  const read = await s.api.executeTool('read', { filePath: c.path, limit: 100000 + ++serial });
  assert.equal(read.isError, false, read.output);
  const lines = c.doc.getText().replace(/\n$/, '').split('\n');
  const picks = [random(lines.length)];
  if (lines.length >= 16 && chance(0.5)) {
    const [first] = picks;
    picks.push(
      first > lines.length / 2
        ? random(Math.max(1, first - 8))
        : Math.min(lines.length, first + 8 + random(Math.max(1, lines.length - first - 7))),
    );
    picks.sort((a, b) => a - b);
  }
  const words = [];
  const edits = picks.map((n) => {
    const word = token('A');
    words.push(word);
    return { oldString: lines[n - 1], newString: `${lines[n - 1]} ${word}` };
  });
  const whole = lines.join('\n');
  const unique = edits.every((e) => whole.split(e.oldString).length === 2);
  if (!unique || (edits.length === 2 && edits[0].oldString === edits[1].oldString)) return;
  const tool = edits.length === 1 ? 'edit' : 'multiedit';
  const args = edits.length === 1 ? { filePath: c.path, ...edits[0] } : { filePath: c.path, edits };
  c.log.push(`${tool} ${words.join(',')}`);
  const call = { done: false };
  s.api.executeTool(tool, args).then(
    (result) => Object.assign(call, { done: true, result }),
    (error) => Object.assign(call, { done: true, error }),
  );
  await waitFor(() => call.done || s.api.pendingReviews().length > 0, 'the review or the result', 20000);
  let ask;
  let editedWord;
  if (!call.done) {
    [ask] = s.api.pendingReviews();
    for (let n = random(4) - 1; n > 0; n--) await userStep(c); // typing on while it waits
    let answer = { reply: 'once' };
    const roll = random(10);
    if (roll <= 2) answer = { reply: 'reject' };
    else if (roll <= 4 && ask.hunks.length > 1) answer.hunks = [ask.hunks[random(ask.hunks.length) - 1].id];
    else if (roll <= 5) {
      const proposed = stub.recorded.commands
        .filter((x) => x.id === 'vscode.diff' && x.args[1].query.startsWith(`${ask.id}/`))
        .map((x) => stub.documents.get(x.args[1].toString()))
        .find(Boolean);
      if (proposed) {
        editedWord = token('e');
        answer.edited = { [c.name]: `${proposed.getText()}${editedWord}\n` };
      }
    }
    if (ask.unsaved.some((u) => u.overlaps)) answer.unsaved = chance(0.5) ? 'save' : 'editor';
    c.log.push(`answer ${JSON.stringify(answer).slice(0, 80)}`);
    s.api.answerReview(ask.id, answer);
  }
  await waitFor(() => call.done, 'the call to end', 20000);
  if (call.error) fail(c, `the call failed: ${call.error}`);
  const result = call.result;
  const block = { words: [] };
  for (const word of editedWord ? [...words, editedWord] : words) {
    let expected = !result.isError;
    if (expected && ask) {
      for (const [, id] of result.output.matchAll(/Not applied: (\S+) \(/g)) {
        const hunk = ask.hunks.find((h) => h.id === id);
        if (hunk && count(hunk.lines.join('\n'), word)) expected = false;
      }
    }
    if (expected) {
      c.applied.add(word);
      block.words.push(word);
    } else {
      c.refused.add(word);
    }
  }
  if (block.words.length) c.blocks.push(block);
  if (!c.doc.isDirty) savedNow(c);
  c.log.push(result.isError ? `error: ${result.output.slice(0, 60)}` : 'applied');
  check(c, `after ${tool}`);
}

const tally = {};

test('random interleavings of agent changes with typing, undo and saves', { timeout: 1800000 }, async () => {
  for (let index = 1; index <= CASES; index++) {
    const auto = chance(0.3);
    const name = `${auto ? 'auto' : 'rev'}-${index}.txt`;
    const path = s.file(name);
    const lines = Array.from({ length: 6 + random(20) }, (_, i) => `c${index}l${i + 1}`);
    fs.writeFileSync(path, `${lines.join('\n')}\n`);
    const uri = vscode.Uri.file(path);
    const doc = await vscode.workspace.openTextDocument(uri);
    const c = {
      index,
      name,
      path,
      uri,
      doc,
      live: new Set(),
      gone: new Set(),
      saved: new Set(),
      applied: new Set(),
      refused: new Set(),
      blocks: [],
      log: [],
    };
    for (let calls = random(3); calls > 0; calls--) {
      for (let n = random(3) - 1; n > 0; n--) await userStep(c);
      await agentCall(c);
    }
    await doc.save();
    savedNow(c);
    check(c, 'after the last save');
    if (fs.readFileSync(path, 'utf8') !== doc.getText()) fail(c, 'after a save the disk is not the document');
    stub.recorded.commands.length = 0;
    for (const step of c.log) {
      const kind = step.split(' ')[0].replace(':', '');
      tally[kind] = (tally[kind] || 0) + 1;
    }
  }
  // What the run covered, so a run that reviewed nothing is seen as such.
  process.stderr.write(`property steps: ${JSON.stringify(tally)}\n`);
  assert.ok(tally.answer > 0 && tally.undo > 0 && tally.save > 0, JSON.stringify(tally));
});
