// Plays the user's part of the sub-agent and question scenario (task-helper): watches
// the sub-agent's progress in the status bar, and answers the question tool's quick
// picks as a person does (clicks an option; ticks several and presses Enter; picks
// "Type your own answer…" and types). Takes a screenshot at each. Prints what it saw.
//
// usage: node drive_subagents.js URL MARKER CONTROL SHOTS_DIR   (NODE_PATH reaches playwright-core)
const fs = require('fs');
const path = require('path');
const { chromium } = require('playwright-core');

const [url, marker, control, shots] = process.argv.slice(2);
const TIMEOUT_MS = Number(process.env.TOOLHOST_E2E_TIMEOUT_MS || 180000);
const seen = { steps: {}, errors: [], logged: [] };

const events = () =>
  fs.existsSync(marker)
    ? fs
        .readFileSync(marker, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line))
    : [];
const done = (id) => fs.appendFileSync(control, `${JSON.stringify({ done: id })}\n`);

async function until(check, what, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
}

/** The status bar shows the running task's progress ("… [1/1 calls done]"). */
async function watchStatus(page, expect) {
  const item = page.locator('.statusbar-item').filter({ hasText: expect.status }).first();
  await until(async () => (await item.count()) > 0, `a status bar item with "${expect.status}"`);
  const text = (await item.innerText()).trim();
  await page.screenshot({ path: path.join(shots, `${expect.id}.png`) });
  return { status: text };
}

/** Answers one quick pick: click an option, or tick several and accept, or type. */
async function answerPick(page, expect) {
  const widget = page.locator('.quick-input-widget');
  await until(
    async () => (await widget.isVisible()) && (await widget.innerText()).includes(expect.title),
    `a quick pick titled "${expect.title}"`,
  );
  const rows = page.locator('.quick-input-list .monaco-list-row');
  const observed = {
    title: (await page.locator('.quick-input-title').first().innerText()).trim(),
    rows: (await rows.allInnerTexts()).map((t) => t.replace(/\s+/g, ' ').trim()),
    checkboxes: await page
      .locator('.quick-input-list input[type=checkbox], .quick-input-list .monaco-checkbox')
      .count(),
    firstRow: (await rows.first().innerHTML()).slice(0, 1500),
  };
  await page.screenshot({ path: path.join(shots, `${expect.id}.png`) });
  for (const label of expect.picks) {
    const row = rows.filter({ hasText: label }).first();
    await row.click();
  }
  if (expect.multiple) {
    await page.screenshot({ path: path.join(shots, `${expect.id}-ticked.png`) });
    await page.keyboard.press('Enter');
  }
  if (expect.type) {
    const input = page.locator('.quick-input-widget input').first();
    await until(
      async () =>
        (await widget.isVisible()) &&
        (await page.locator('.quick-input-list .monaco-list-row').count()) === 0,
      'the input box for a typed answer',
    );
    await input.fill(expect.type);
    await page.screenshot({ path: path.join(shots, `${expect.id}-typed.png`) });
    await page.keyboard.press('Enter');
  }
  return observed;
}

(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  // The stack says where in the workbench it was thrown (workbench.js has a source map).
  page.on('pageerror', (error) => seen.errors.push(error.stack || String(error)));
  // Errors the workbench logs without throwing (its console logger prints "  ERR").
  page.on('console', (message) => {
    const text = message.text();
    if ((message.type() === 'error' && /\bERR\b/.test(text)) || /rejected promise not handled/.test(text)) {
      seen.logged.push(text.slice(0, 3000));
    }
  });
  const started = Date.now();
  await page.goto(url);
  const handled = new Set();
  try {
    for (;;) {
      if (Date.now() - started > TIMEOUT_MS) throw new Error('the scenario did not finish in time');
      const all = events();
      if (all.some((e) => e.event === 'done')) break;
      for (const expect of all.filter((e) => e.event === 'expect' && !handled.has(e.id))) {
        handled.add(expect.id);
        try {
          seen.steps[expect.id] = await (expect.status ? watchStatus : answerPick)(page, expect);
        } catch (error) {
          seen.steps[expect.id] = { error: String(error) };
          await page.screenshot({ path: path.join(shots, `${expect.id}-failed.png`) }).catch(() => undefined);
        }
        done(expect.id);
      }
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
  } catch (error) {
    seen.errors.push(String(error));
  }
  await page.screenshot({ path: path.join(shots, 'final.png') }).catch(() => undefined);
  seen.ms = Date.now() - started;
  await browser.close();
  console.log(JSON.stringify(seen));
})().catch((error) => {
  console.log(JSON.stringify({ ...seen, errors: [...seen.errors, String(error)] }));
  process.exit(2);
});
