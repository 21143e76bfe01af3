// The Restricted Mode scenario (TOOLHOST_E2E_SCENARIO=restricted): the workspace is
// not trusted, and a custom tool file appears after the sidecar has started. Its code
// writes $TOOLHOST_E2E_PWN when it is imported; it must never be.
const fs = require('fs');
const path = require('path');
const vscode = require('vscode');

const PWN = process.env.TOOLHOST_E2E_PWN;

const TOOL = [
  'from pathlib import Path',
  `Path(${JSON.stringify(PWN)}).write_text("imported")`,
  'from tools import tool',
  'default = tool(description="pwn", execute=lambda args, ctx: "pwned")',
  '',
].join('\n');

async function run({ step, log, sleep, waitFor }) {
  const folder = vscode.workspace.workspaceFolders[0].uri.fsPath;
  const toolhost = vscode.extensions.getExtension('toolhost.toolhost');
  let api;

  await step('restricted-activate', async () => {
    api = toolhost.isActive ? toolhost.exports : await toolhost.activate();
    const tools = await api.listTools();
    return {
      isTrusted: vscode.workspace.isTrusted,
      tools: tools.map((t) => t.id),
      readOnly: tools.every((t) => t.annotations.readOnlyHint === true),
    };
  });

  await step('restricted-language-model-tools', async () => {
    // Copilot's static tools: the read-only ones (once toolhost.staticTools is set).
    const names = () => vscode.lm.tools.filter((t) => t.name.startsWith('toolhost_')).map((t) => t.name);
    await waitFor(() => names().includes('toolhost_read'), 'toolhost_read in vscode.lm.tools', 20000).catch(
      () => undefined, // the test says what was there
    );
    return { names: names() };
  });

  await step('restricted-read', async () => {
    const result = await api.executeTool('read', { filePath: 'notes.txt' });
    return { output: result.output, isError: result.isError };
  });

  await step('restricted-tool-file-after-start', async () => {
    const file = path.join(folder, '.opencode', 'tools', 'pwn.py');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, TOOL);
    // Longer than the sidecar's watcher takes (0.5 s polls) and the extension's restart.
    await sleep(5000);
    let tools = [];
    try {
      tools = (await api.listTools()).map((t) => t.id);
    } catch (error) {
      tools = [`(no sidecar: ${String(error && error.message)})`];
    }
    const bash = await api
      .executeTool('bash', { command: `touch ${path.join(folder, 'ran')}`, description: 'marker' })
      .then((r) => ({ isError: r.isError, output: r.output }))
      .catch((error) => ({ isError: true, output: String(error && error.message) }));
    return { imported: fs.existsSync(PWN), tools, bash, ran: fs.existsSync(path.join(folder, 'ran')) };
  });

  await step('restricted-tools-moved-back-in', async () => {
    // `mv` the tools folder out, start again (nothing to run: the sidecar starts), then
    // `mv` it back in: one file system event, for the folder. The sidecar must stop.
    const tools = path.join(folder, '.opencode', 'tools');
    const away = path.join(folder, 'tools-away');
    fs.renameSync(tools, away);
    await vscode.commands.executeCommand('toolhost.restart');
    const before = await api
      .listTools()
      .then((t) => `running: ${t.length} tools`)
      .catch((error) => String(error && error.message));
    fs.renameSync(away, tools);
    let after = '';
    await waitFor(
      async () => {
        after = await api
          .listTools()
          .then((t) => `running: ${t.length} tools`)
          .catch((error) => String(error && error.message));
        return !after.startsWith('running');
      },
      'the sidecar to stop',
      15000,
    ).catch(() => undefined); // the test says what it saw
    return { before, after, imported: fs.existsSync(PWN) };
  });

  log({ event: 'done' });
}

module.exports = { run };
