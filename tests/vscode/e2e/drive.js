// Opens the code-server workbench in Debian's headless Chromium and plays the
// user's part of the scenario the helper extension runs: answer a review's
// notification (after checking the diff beside the editor and that every button's
// label shows whole), dismiss one, press keys or type in an editor, decide hunks in
// the diff and the Review view, click status bar items and editor title actions,
// run a palette command. Takes a screenshot at each; prints what it saw as JSON.
//
// usage: node drive.js URL MARKER CONTROL SHOTS_DIR   (NODE_PATH must reach playwright-core)
const fs = require('fs');
const path = require('path');
const { chromium } = require('playwright-core');

const [url, marker, control, shots] = process.argv.slice(2);
const TIMEOUT_MS = Number(process.env.TOOLHOST_E2E_TIMEOUT_MS || 300000);
const seen = { steps: {}, errors: [], logged: [] };

const events = () =>
  fs.existsSync(marker)
    ? fs
        .readFileSync(marker, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line))
    : [];
const done = (id, error) => fs.appendFileSync(control, `${JSON.stringify({ done: id, error })}\n`);
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const shoot = (page, name) => page.screenshot({ path: path.join(shots, `${name}.png`) });

async function until(check, what, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await pause(200);
  }
}

const exactly = (label) => new RegExp(`^\\s*${label.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s*$`);
const toast = (page, title) => page.locator('.notification-toast').filter({ hasText: title }).first();
const diffTab = (page, title) => page.locator('.tabs-container .tab').filter({ hasText: title });

/** The toast's button with exactly this label ("Reject" is not "Reject with…"). */
function toastButton(page, title, label) {
  return toast(page, title)
    .locator('.monaco-button')
    .filter({ hasText: exactly(label) })
    .first();
}

/** What the diff editor for `title` shows, and whether it opened beside the active editor. */
async function observeDiff(page, title) {
  const observed = {};
  const tab = diffTab(page, title);
  observed.diffTab = (await tab.count()) > 0;
  observed.groups = await page.locator('.editor-group-container').count();
  const diff = page
    .locator('.editor-group-container')
    .filter({ has: page.locator('.monaco-diff-editor') })
    .first();
  observed.diffEditorVisible = await diff.isVisible().catch(() => false);
  if (observed.diffEditorVisible) {
    // Side by side or inline (a narrow group): the modified editor's own lines.
    const lines = await diff
      .locator('.monaco-diff-editor .editor.modified .view-lines:not(.line-delete) .view-line')
      .allInnerTexts()
      .catch(() => []);
    observed.diffModified = lines
      .join('\n')
      .replace(/\u00a0/g, ' ')
      .trim(); // spaces render as NBSP
  }
  // Keyboard focus: still in an editor that is not the diff.
  observed.focusInDiff = await page.evaluate(() => !!document.activeElement?.closest('.monaco-diff-editor'));
  return observed;
}

/** Clicks a notification button, after checking the diff and every label. */
async function answerToast(page, expect) {
  const button = toastButton(page, expect.title, expect.click);
  await until(
    async () => (await button.count()) > 0 && (await button.isVisible()),
    `a notification "${expect.title}" with "${expect.click}"`,
  );
  await pause(300); // let the diff settle
  const observed = expect.diff ? await observeDiff(page, expect.diff) : {};
  const box = toast(page, expect.title);
  observed.notification = (await box.innerText()).trim();
  const buttons = box.locator('.monaco-button');
  observed.buttons = (await buttons.allInnerTexts()).map((b) => b.trim());
  // A label cut with an ellipsis is wider inside than its box.
  observed.cutLabels = await buttons.evaluateAll((els) =>
    els.filter((el) => el.scrollWidth > el.clientWidth + 1).map((el) => el.innerText.trim()),
  );
  await shoot(page, expect.shot || expect.id);
  await button.click();
  observed.clicked = expect.click;
  if (expect.diff) {
    const tab = diffTab(page, expect.diff);
    await until(async () => (await tab.count()) === 0, 'the diff tab to close', 10000).then(
      () => (observed.diffClosed = true),
      () => (observed.diffClosed = false),
    );
  }
  return observed;
}

/** Closes a review's notification (×) and its diff tab, as a person who looks away would. */
async function dismiss(page, expect) {
  const box = toast(page, expect.title);
  await until(async () => (await box.count()) > 0, `a notification "${expect.title}"`);
  const tab = diffTab(page, expect.diff).first();
  await until(async () => (await tab.count()) > 0, `the diff tab "${expect.diff}"`);
  await pause(300);
  await shoot(page, `${expect.id}-before`);
  await box.hover();
  await box.locator('.codicon-notifications-clear').first().click();
  await tab.hover();
  await tab.locator('.codicon-close').first().click();
  await until(async () => (await toast(page, expect.title).count()) === 0, 'the notification to go', 10000);
  await until(async () => (await diffTab(page, expect.diff).count()) === 0, 'the diff tab to close', 10000);
  return { dismissed: true, closedTab: true };
}

/** The active group's editor that shows `text`. */
async function activeEditor(page, text) {
  const editor = page.locator('.editor-group-container.active .monaco-editor .view-lines').first();
  await until(
    async () => (await editor.count()) > 0 && (await editor.innerText()).includes(text),
    `the editor showing "${text}"`,
  );
  return editor;
}

async function key(page, expect) {
  const editor = await activeEditor(page, expect.shows);
  await editor.click();
  await page.keyboard.press(expect.key);
  await pause(expect.shot ? 1500 : 300);
  if (expect.shot) await shoot(page, expect.shot);
  const problems = await page
    .locator('.notification-toast')
    .allInnerTexts()
    .catch(() => []);
  return { pressed: expect.key, toasts: problems.map((t) => t.trim()) };
}

async function type(page, expect) {
  const editor = await activeEditor(page, expect.shows);
  await editor.click();
  await page.keyboard.press('Control+Home');
  await page.keyboard.type(expect.text);
  await page.keyboard.press('Enter');
  return { typed: expect.text };
}

/** Per hunk: Alt+N on one change in the diff, then ✓ on another in the Review view. */
async function hunks(page, expect) {
  const tab = diffTab(page, expect.diff);
  await until(async () => (await tab.count()) > 0, `the diff tab "${expect.diff}"`);
  const row = page.locator('.monaco-list-row').filter({ hasText: expect.acceptRow }).first();
  await until(async () => (await row.count()) > 0, `the Review view row "${expect.acceptRow}"`);
  await pause(500);
  const observed = await observeDiff(page, expect.diff);
  observed.rows = (await page.locator('.pane-body .monaco-list-row').allInnerTexts()).map((r) => r.trim());
  await shoot(page, 'review-hunks');
  const line = page
    .locator('.monaco-diff-editor .editor.modified .view-line')
    .filter({ hasText: expect.rejectLine })
    .first();
  await line.click();
  await page.keyboard.press('Alt+n');
  await until(
    async () =>
      (await page
        .locator('.monaco-diff-editor .editor.modified .view-line')
        .filter({ hasText: expect.rejectLine })
        .count()) === 0,
    'the rejected change to leave the proposed side',
    10000,
  );
  observed.rejectedInPlace = true;
  await pause(300);
  await shoot(page, 'review-hunk-rejected');
  await rowAction(page, expect.acceptRow, 'Accept This Change');
  observed.accepted = expect.acceptRow;
  return observed;
}

/** Corrects the proposed side in the diff by typing, then accepts with the title bar ✓. */
async function correct(page, expect) {
  const tab = diffTab(page, expect.diff);
  await until(async () => (await tab.count()) > 0, `the diff tab "${expect.diff}"`);
  const line = page
    .locator('.monaco-diff-editor .editor.modified .view-line')
    .filter({ hasText: expect.line })
    .first();
  await until(async () => (await line.count()) > 0, `the proposed line "${expect.line}"`);
  await line.click();
  await page.keyboard.press('End');
  await page.keyboard.type(expect.text);
  await pause(300);
  await shoot(page, 'review-corrected');
  const action = page.locator(`.editor-actions .action-label[aria-label^="${expect.action}"]`).first();
  await until(async () => (await action.count()) > 0, `the editor title action "${expect.action}"`);
  await action.click();
  return { typed: expect.text };
}

/** A row's inline action in the Review view. */
async function rowAction(page, text, label) {
  const action = `.action-label[aria-label^="${label}"]`;
  // The row of that name that carries the action (a review's own row may name the file too).
  const row = page
    .locator('.monaco-list-row')
    .filter({ hasText: text })
    .filter({ has: page.locator(action) })
    .first();
  await until(async () => (await row.count()) > 0, `the Review view row "${text}" with "${label}"`);
  await row.hover();
  await row.locator(action).first().click();
}

/** Per file: ✗ on one file, ✓ on the other, in the Review view. */
async function files(page, expect) {
  await until(
    async () => (await page.locator('.monaco-list-row').filter({ hasText: expect.accept }).count()) > 0,
    'the files in the Review view',
  );
  await pause(500);
  await shoot(page, 'review-files');
  const rows = (await page.locator('.pane-body .monaco-list-row').allInnerTexts()).map((r) => r.trim());
  await rowAction(page, expect.reject, 'Reject This File');
  await pause(300);
  await rowAction(page, expect.accept, 'Accept This File');
  return { rows };
}

/** "More…" on a notification, then the quick pick rows in order (and an input, if any). */
async function more(page, expect) {
  const button = toastButton(page, expect.title, 'More…');
  await until(
    async () => (await button.count()) > 0 && (await button.isVisible()),
    `"More…" on "${expect.title}"`,
  );
  await button.click();
  const observed = { choices: [] };
  for (const [i, text] of expect.picks.entries()) {
    const row = page.locator('.quick-input-list .monaco-list-row').filter({ hasText: text }).first();
    await row.waitFor({ timeout: 10000 });
    observed.choices.push(
      (await page.locator('.quick-input-list .monaco-list-row').allInnerTexts()).map((t) => t.trim()),
    );
    if (i === expect.picks.length - 1 && expect.shot) await shoot(page, expect.shot);
    if (i === 0) await shoot(page, `${expect.id}-choices`);
    await row.click();
  }
  if (expect.input) {
    const input = page.locator('.quick-input-widget input').first();
    await input.waitFor({ state: 'visible' });
    await input.fill(expect.input);
    await shoot(page, `${expect.id}-input`);
    await page.keyboard.press('Enter');
  }
  return observed;
}

/** Toolhost: Show Allowed Rules, then the trash button on one rule. */
async function rules(page, expect) {
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
  const row = page.locator('.quick-input-list .monaco-list-row').filter({ hasText: expect.row }).first();
  await row.waitFor({ timeout: 10000 });
  const listed = (await page.locator('.quick-input-list .monaco-list-row').allInnerTexts()).map((t) =>
    t.trim(),
  );
  await shoot(page, 'rules');
  await row.hover();
  await row.locator('.action-label[aria-label^="Revoke this rule"]').first().click();
  await until(
    async () =>
      (await page.locator('.quick-input-list .monaco-list-row').filter({ hasText: expect.row }).count()) ===
      0,
    'the revoked rule to leave the list',
    10000,
  );
  await page.keyboard.press('Escape');
  return { listed };
}

/** Clicks a status bar item. */
async function status(page, expect) {
  const item = page.locator('.statusbar-item').filter({ hasText: expect.text }).first();
  await until(
    async () => (await item.count()) > 0 && (await item.isVisible()),
    `the status bar item "${expect.text}"`,
  );
  const observed = { statusText: (await item.innerText()).trim() };
  if (expect.shot) await shoot(page, expect.shot);
  await item.click();
  if (expect.pick) {
    const row = page.locator('.quick-input-list .monaco-list-row').filter({ hasText: expect.pick }).first();
    await row.waitFor({ timeout: 10000 });
    observed.choices = (await page.locator('.quick-input-list .monaco-list-row').allInnerTexts()).map((t) =>
      t.trim(),
    );
    await shoot(page, `${expect.id}-pick`);
    await row.click();
  }
  return observed;
}

/** The status item reopens a review; the diff's title bar ✓ accepts it. */
async function reopen(page, expect) {
  const observed = await status(page, { text: expect.status });
  const tab = diffTab(page, expect.diff);
  await until(async () => (await tab.count()) > 0, `the diff tab "${expect.diff}" to reopen`);
  await pause(500);
  Object.assign(observed, await observeDiff(page, expect.diff));
  const action = page.locator(`.editor-actions .action-label[aria-label^="${expect.action}"]`).first();
  await until(async () => (await action.count()) > 0, `the editor title action "${expect.action}"`);
  if (expect.shot) await shoot(page, expect.shot);
  await action.click();
  return observed;
}

/** F1, the command's name, Enter; returns the quick input (some commands go on asking). */
async function runCommand(page, name) {
  await page
    .locator('.monaco-workbench')
    .first()
    .click({ position: { x: 700, y: 400 } });
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input').first();
  await input.waitFor({ state: 'visible' });
  await input.fill(`>${name}`);
  await page.locator('.quick-input-list .monaco-list-row').filter({ hasText: name }).first().waitFor();
  await page.keyboard.press('Enter');
  return input;
}

/** Runs a command from the palette as a user does: F1, its name, a tool, its arguments. */
async function palette(page, expect) {
  const input = await runCommand(page, expect.palette);
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
  await shoot(page, `${expect.id}-arguments`);
  await input.fill(expect.args);
  await page.keyboard.press('Enter');
  const result = page.locator('.tabs-container .tab').filter({ hasText: `${expect.tool} result` });
  await until(async () => (await result.count()) > 0, 'the result tab');
  await shoot(page, `${expect.id}-result`);
  return {
    picks,
    template,
    resultTab: (await result.first().innerText()).trim(),
  };
}

/** Runs a palette command that asks in a modal dialog, and clicks `expect.button` there. */
async function confirm(page, expect) {
  await runCommand(page, expect.palette);
  const dialog = page.locator('.monaco-dialog-box').first();
  await dialog.waitFor({ state: 'visible' });
  await pause(300);
  const text = (await dialog.innerText()).trim();
  await shoot(page, expect.shot || expect.id);
  await dialog
    .locator('.monaco-button')
    .filter({ hasText: exactly(expect.button) })
    .first()
    .click();
  return { dialog: text, clicked: expect.button };
}

/** A key pressed wherever the focus is (a dialog's, say), with no click first; then
 * `expect.then` typed, as a person who goes on typing. */
/**
 * A review's diff as it first shows: where it opened, and whether the changed line and
 * its note (the decoration after it) end inside the editor or past its right edge.
 */
async function shown(page, expect) {
  const tab = diffTab(page, expect.diff);
  await until(async () => (await tab.count()) > 0, `the diff tab "${expect.diff}"`);
  await pause(1000); // the note is drawn once the proposed document is shown
  const observed = await observeDiff(page, expect.diff);
  const line = await page.evaluate((text) => {
    const editor = document.querySelector('.monaco-diff-editor .editor.modified');
    const lines = editor ? [...editor.querySelectorAll('.view-lines .view-line')] : [];
    const shown = lines.find((l) => l.textContent.replace(/\u00a0/g, ' ').includes(text));
    if (!shown) return { lineShown: false };
    // The text area's right edge: the vertical scrollbar sits over it.
    const guard = editor.querySelector('.overflow-guard').getBoundingClientRect();
    const scrollbar = editor.querySelector('.scrollbar.vertical');
    const edge = guard.right - (scrollbar ? scrollbar.getBoundingClientRect().width : 0);
    // A decoration's text is generated content (::after) of its span, inside the span's box.
    const spans = [...shown.querySelectorAll('span')];
    const right = Math.max(...spans.map((s) => s.getBoundingClientRect().right));
    const note = spans
      .map((s) => getComputedStyle(s, '::after').content)
      .filter((c) => c && c !== 'none' && c !== 'normal')
      .map((c) => c.replace(/^"|"$/g, ''))
      .concat(shown.textContent) // or injected text, in the line itself
      .join(' ')
      .replace(/\u00a0/g, ' ');
    return { lineShown: true, pastEdge: Math.max(0, Math.round(right - edge)), note, width: guard.width };
  }, expect.line);
  await shoot(page, expect.shot);
  return { ...observed, ...line };
}

async function press(page, expect) {
  await page.keyboard.press(expect.key);
  await pause(500);
  if (expect.then) {
    await page.keyboard.type(expect.then);
    await pause(500);
  }
  if (expect.shot) await shoot(page, expect.shot);
  const dialog = await page
    .locator('.monaco-dialog-box')
    .allInnerTexts()
    .catch(() => []);
  return { pressed: expect.key, dialog: dialog.map((t) => t.trim()) };
}

const ACTS = {
  press,
  shown,
  toast: answerToast,
  dismiss,
  key,
  type,
  hunks,
  status,
  reopen,
  palette,
  correct,
  files,
  more,
  rules,
  confirm,
};

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
        let failure;
        try {
          const act = ACTS[expect.act];
          if (!act) throw new Error(`the driver does not know how to ${expect.act}`);
          seen.steps[expect.id] = await act(page, expect);
        } catch (error) {
          failure = String(error);
          seen.steps[expect.id] = { error: failure };
          await shoot(page, `${expect.id}-failed`).catch(() => undefined);
        }
        done(expect.id, failure);
      }
      await pause(200);
    }
  } catch (error) {
    seen.errors.push(String(error));
  }
  await shoot(page, 'final').catch(() => undefined);
  seen.ms = Date.now() - started;
  await browser.close();
  console.log(JSON.stringify(seen));
})().catch((error) => {
  console.log(JSON.stringify({ ...seen, errors: [...seen.errors, String(error)] }));
  process.exit(2);
});
