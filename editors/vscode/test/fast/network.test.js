// Network by domain (issue 27) with the real sidecar: a command's connection to a host no
// rule covers is asked for in a notification while the command waits ("bash wants to
// connect to “files.corp.test” … while running “curl …”"); Allow lets it through, Reject
// refuses it (the result says so), "Always allow" offers the host or every name below
// its parent. The far end is an HTTP server on this process's loopback, named through
// TOOLHOST_NETWORK_HOSTS (the sidecar inherits it) and listed literally by its address.
'use strict';
const { after, before, beforeEach, test } = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const { activate, answerPrompts, stub } = require('./harness');

let s;
let server;
let port;
const hits = [];
let session = 0;
const newSession = () => `ses_network_${++session}`;

before(async () => {
  server = http.createServer((req, res) => {
    hits.push(req.url);
    res.setHeader('Connection', 'close');
    res.end(`hello ${req.url}\n`);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = server.address().port;
  process.env.TOOLHOST_NETWORK_HOSTS = 'files.corp.test=127.0.0.1,other.corp.test=127.0.0.1';
  s = await activate({
    settings: {
      'toolhost.config': {
        permission: { bash: 'allow' }, // only the network asks
        sandbox: { network: { allow: [`127.0.0.1:${port}`] } },
      },
    },
  });
});
after(async () => {
  await s.dispose();
  server.close();
  delete process.env.TOOLHOST_NETWORK_HOSTS;
});
beforeEach(() => stub.reset());

const curl = (host, path) => `curl -sS --max-time 30 http://${host}:${port}${path}`;

function bash(command, sessionID = newSession()) {
  return s.api.executeTool('bash', { command, description: 'Fetches' }, { sessionID });
}

test('the notification says which host the command would connect to, and Allow lets it through', async () => {
  answerPrompts(() => 'Allow');
  const command = curl('files.corp.test', '/once');
  const done = await bash(command);
  assert.equal(done.isError, false, done.output);
  assert.match(done.output, /hello \/once/);
  const [asked] = stub.recorded.messages;
  assert.equal(asked.severity, 'warning', 'reaching the network is asked as a warning');
  assert.equal(
    asked.message,
    `toolhost: bash wants to connect to “files.corp.test” (port ${port}) while running “${command}”. ` +
      '“Always” would allow network access to files.corp.test.',
  );
  assert.deepEqual(asked.items, ['Allow', 'Reject', 'More…']);
  assert.deepEqual(done.metadata.sandbox.network.reached, [`files.corp.test:${port}`]);
});

test('Reject refuses it, and the result says so', async () => {
  answerPrompts(() => 'Reject');
  const done = await bash(curl('files.corp.test', '/no'));
  assert.ok(!hits.includes('/no'), 'nothing reached the server');
  assert.match(
    done.output,
    new RegExp(`Network access to files.corp.test:${port} was refused: the user refused it`),
  );
  assert.equal(done.metadata.sandbox.network.refused[0].reason, 'the user refused it');
});

test('More… offers always for the host or every name below its parent, for how long it asks', async () => {
  answerPrompts(() => 'More…');
  stub.answers.quickPick = (items) =>
    items.find(
      (i) => i.label === '$(check-all) Always allow network access to every name below corp.test…',
    ) ?? items.find((i) => i.label === 'For this session');
  const sessionID = newSession();
  const first = await bash(curl('files.corp.test', '/always'), sessionID);
  assert.match(first.output, /hello \/always/);
  const [more] = stub.recorded.quickPicks;
  assert.deepEqual(
    more.items.map((i) => i.label).filter((l) => l.includes('Always')),
    [
      '$(check-all) Always allow network access to files.corp.test…',
      '$(check-all) Always allow network access to every name below corp.test…',
    ],
  );
  stub.reset();
  const second = await bash(curl('other.corp.test', '/after'), sessionID);
  assert.match(second.output, /hello \/after/);
  assert.equal(stub.recorded.messages.length, 0, 'covered by the session rule, not asked');
});

test('a network pattern and ask in words', () => {
  const { askInWords, describePattern } = require('../../out/words.js');
  assert.equal(describePattern('network', 'pypi.org'), 'network access to `pypi.org`');
  assert.equal(describePattern('network', '*.npmjs.org'), 'network access to every name below `npmjs.org`');
  assert.equal(describePattern('network', '*'), 'network access to every host');
  assert.equal(
    askInWords('network', ['pypi.org'], 'pip install x', 443),
    'connect to `pypi.org` while running `pip install x`',
  );
  assert.equal(askInWords('network', ['127.0.0.1'], undefined, 8080), 'connect to `127.0.0.1` (port 8080)');
});
