// Opens the code-server workbench in Debian's headless Chromium and plays the
// user's part of the scenario the helper extension runs: when the helper expects a
// click on a permission notification, check that the proposed change is showing in
// the diff editor and the notification is up, take a screenshot, click; when it
// expects an undo, press Ctrl+Z in the editor. Prints what it saw as JSON.
//
// usage: node drive.js URL MARKER CONTROL SHOTS_DIR   (NODE_PATH must reach playwright-core)
const fs = require('fs');
const path = require('path');
const { chromium } = require('playwright-core');

const [url, marker, control, shots] = process.argv.slice(2);
const TIMEOUT_MS = Number(process.env.TOOLHOST_E2E_TIMEOUT_MS || 180000);
const seen = { steps: {}, errors: [] };

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
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The toast's button with exactly this label ("Reject" is not "Reject with feedback…"). */
function toastButton(page, title, label) {
  const exact = new RegExp(`^\\s*${label.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s*$`);
  return page
    .locator('.notification-toast')
    .filter({ hasText: title })
    .locator('.monaco-button')
    .filter({ hasText: exact })
    .first();
}

async function answerPrompt(page, expect) {
  const observed = {};
  const button = toastButton(page, expect.title, expect.click);
  await until(
    async () => (await button.count()) > 0 && (await button.isVisible()),
    `a notification "${expect.title}" with "${expect.click}"`,
  );
  observed.notification = (
    await page.locator('.notification-toast').filter({ hasText: expect.title }).first().innerText()
  ).trim();
  observed.buttons = await page
    .locator('.notification-toast')
    .filter({ hasText: expect.title })
    .locator('.monaco-button')
    .allInnerTexts();
  const tab = page.locator('.tabs-container .tab').filter({ hasText: expect.diff });
  observed.diffTab = (await tab.count()) > 0;
  observed.diffEditorVisible = await page
    .locator('.monaco-diff-editor')
    .first()
    .isVisible()
    .catch(() => false);
  if (observed.diffEditorVisible) {
    const text = await page
      .locator('.monaco-diff-editor .editor.modified .view-lines')
      .first()
      .innerText()
      .catch(() => '');
    observed.diffModified = text.replace(/\u00a0/g, ' ').trim(); // the editor renders spaces as NBSP
  }
  await page.screenshot({ path: path.join(shots, `${expect.id}.png`) });
  await button.click();
  observed.clicked = expect.click;
  // Once answered, the diff editor closes.
  await until(async () => (await tab.count()) === 0, 'the diff tab to close', 10000).then(
    () => (observed.diffClosed = true),
    () => (observed.diffClosed = false),
  );
  return observed;
}

async function undo(page, expect) {
  const editor = page.locator('.editor-group-container.active .monaco-editor .view-lines').first();
  await until(
    async () => (await editor.count()) > 0 && (await editor.innerText()).includes('hello'),
    `the ${expect.file} editor`,
  );
  await editor.click();
  await page.keyboard.press(expect.key);
  return { pressed: expect.key };
}

/** Runs a command from the palette as a user does: F1, its name, a tool, its arguments. */
async function palette(page, expect) {
  await page
    .locator('.monaco-workbench')
    .first()
    .click({ position: { x: 700, y: 400 } });
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input').first();
  await input.waitFor({ state: 'visible' });
  await input.fill(`>${expect.palette}`);
  await page
    .locator('.quick-input-list .monaco-list-row')
    .filter({ hasText: expect.palette })
    .first()
    .waitFor();
  await page.keyboard.press('Enter');
  const tool = page.locator('.quick-input-list .monaco-list-row').filter({ hasText: expect.tool }).first();
  await tool.waitFor();
  const picks = (await page.locator('.quick-input-list .monaco-list-row .label-name').allInnerTexts()).slice(
    0,
    20,
  );
  await input.fill(expect.tool);
  await page.keyboard.press('Enter');
  await until(async () => (await input.inputValue()).startsWith('{'), 'the JSON arguments box');
  const template = await input.inputValue();
  await page.screenshot({
    path: path.join(shots, `${expect.id}-arguments.png`),
  });
  await input.fill(expect.args);
  await page.keyboard.press('Enter');
  const result = page.locator('.tabs-container .tab').filter({ hasText: `${expect.tool} result` });
  await until(async () => (await result.count()) > 0, 'the result tab');
  await page.screenshot({ path: path.join(shots, `${expect.id}-result.png`) });
  return {
    picks,
    template,
    resultTab: (await result.first().innerText()).trim(),
  };
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
  const page = await browser.newPage({
    viewport: { width: 1400, height: 900 },
  });
  page.on('pageerror', (error) => seen.errors.push(String(error)));
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
          const act = expect.click ? answerPrompt : expect.palette ? palette : undo;
          seen.steps[expect.id] = await act(page, expect);
        } catch (error) {
          seen.steps[expect.id] = { error: String(error) };
          await page.screenshot({ path: path.join(shots, `${expect.id}-failed.png`) }).catch(() => undefined);
        }
        done(expect.id);
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
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
