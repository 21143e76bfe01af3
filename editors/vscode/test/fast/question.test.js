// editor/question: the question tool asks in quick picks (several picks for `multiple`,
// "Type your own answer…" opens an input box); Escape dismisses; answers are arrays.
'use strict';
const { after, before, beforeEach, test } = require('node:test');
const assert = require('node:assert/strict');
const { activate, initializeParams, stub } = require('./harness');

const QUESTIONS = [
  {
    header: 'Database',
    question: 'Which database?',
    options: [
      { label: 'Postgres (Recommended)', description: 'What the other services use' },
      { label: 'SQLite', description: 'One file' },
    ],
  },
  {
    header: 'Extras',
    question: 'Which extras?',
    options: [
      { label: 'Migrations', description: 'Alembic' },
      { label: 'Seed data', description: 'Rows to start with' },
      { label: 'Backups', description: 'Nightly' },
    ],
    multiple: true,
  },
];

let s;
let init;
let session = 0;
before(async () => {
  s = await activate({ settings: { 'toolhost.trace.server': 'verbose' } });
  init = initializeParams();
});
after(() => s.dispose());
beforeEach(() => stub.reset());

const ask = (questions) => s.api.executeTool('question', { questions }, { sessionID: `ses_q${++session}` });

test('the extension answers editor/question, so question is offered', async () => {
  assert.equal(init.initializationOptions.editor.question, true);
  const ids = (await s.api.listTools()).map((t) => t.id);
  assert.equal(ids[0], 'question');
});

test('one pick per question; several for multiple', async () => {
  stub.answers.quickPick = (items, options) =>
    options.canPickMany ? items.filter((i) => ['Migrations', 'Backups'].includes(i.label)) : items[1];
  const result = await ask(QUESTIONS);
  assert.equal(result.isError, false, result.output);
  assert.deepEqual(result.metadata.answers, [['SQLite'], ['Migrations', 'Backups']]);
  const [first, second] = stub.recorded.quickPicks;
  assert.equal(first.options.canPickMany, undefined);
  assert.equal(second.options.canPickMany, true);
  assert.match(first.options.title, /Database: Which database\? \(1\/2\)/);
  assert.deepEqual(
    first.items.map((i) => [i.label, i.detail]),
    [
      ['Postgres (Recommended)', 'What the other services use'],
      ['SQLite', 'One file'],
      ['Type your own answer…', undefined],
    ],
  );
  assert.match(result.output, /"Which extras\?"="Migrations, Backups"/);
});

test('Type your own answer opens an input box; its text is the answer', async () => {
  stub.answers.quickPick = (items) => items.find((i) => i.label === 'Type your own answer…');
  stub.answers.inputBox = () => 'MariaDB';
  const result = await ask(QUESTIONS.slice(0, 1));
  assert.deepEqual(result.metadata.answers, [['MariaDB']]);
  assert.equal(stub.recorded.inputBoxes[0].prompt, 'Which database?');
});

test('Escape dismisses: the call is rejected', async () => {
  stub.answers.quickPick = () => undefined;
  const result = await ask(QUESTIONS);
  assert.equal(result.isError, true);
  assert.equal(result.output, 'The user dismissed this question');
  assert.equal(result.metadata.error, 'permission_rejected');
});
