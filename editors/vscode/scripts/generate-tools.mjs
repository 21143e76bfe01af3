// Generates package.json's `contributes.languageModelTools` from the catalogue
// (`toolhost list --json`), so Copilot's agent mode sees the same tools, schemas and
// descriptions a model gets over the wire. The catalogue is filtered per model, so
// the lists for the default model and for one that gets apply_patch are merged.
// Run from an empty folder, so a project's own config or custom tools stay out.
//
// usage: node scripts/generate-tools.mjs [--check] [--if-available]
//   --check: exit 1 when stale.
//   --if-available: with no `toolhost` to ask (a fresh clone: no .venv, none on PATH),
//   keep the committed list and say so, rather than fail (`npm run package` uses it).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXTENSION_ROOT, findToolhost } from './toolhost.mjs';

const PREFIX = 'toolhost_';
const MODELS = [undefined, 'openai/gpt-5'];

const DISPLAY_NAMES = {
  read: 'Read file',
  write: 'Write file',
  edit: 'Edit file',
  multiedit: 'Edit file (several edits)',
  apply_patch: 'Apply patch',
  glob: 'Find files',
  grep: 'Search file contents',
  list: 'List directory',
  bash: 'Run command',
  webfetch: 'Fetch URL',
  todowrite: 'Update task list',
  todoread: 'Read task list',
  skill: 'Load skill',
  lsp: 'Language features',
};

const ICONS = {
  read: '$(file)',
  edit: '$(edit)',
  delete: '$(trash)',
  move: '$(arrow-right)',
  search: '$(search)',
  execute: '$(terminal)',
  think: '$(checklist)',
  fetch: '$(globe)',
  other: '$(tools)',
};

function catalogue(toolhost) {
  const cwd = mkdtempSync(join(tmpdir(), 'toolhost-catalogue-'));
  try {
    const tools = new Map();
    for (const model of MODELS) {
      const args = ['list', '--json', '--cwd', cwd, ...(model ? ['--model', model] : [])];
      const out = execFileSync(toolhost, args, {
        encoding: 'utf8',
        env: { ...process.env, OPENCODE_CONFIG_DIR: cwd },
      });
      for (const tool of JSON.parse(out).tools) {
        if (!tools.has(tool.id)) tools.set(tool.id, tool);
      }
    }
    return [...tools.values()];
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
}

// Read-only tools also in Restricted Mode; the others only in a trusted workspace. Where
// the MCP server (mcpServer.ts) serves the whole catalogue, these would repeat it. The
// extension sets toolhost.staticTools to all, readOnly or none (staticTools.ts); each
// clause is one comparison, never `&&` or `||`, which VS Code 1.100 cannot send to
// extension hosts (vscode.lm.tools is then empty for every extension).
export const WHEN_READ_ONLY = 'toolhost.staticTools != none';
export const WHEN_OTHERS = 'toolhost.staticTools == all';

export function contribution(tool) {
  const readOnly = tool.annotations?.readOnlyHint === true;
  const openWorld = tool.annotations?.openWorldHint === true;
  return {
    name: PREFIX + tool.id,
    when: readOnly ? WHEN_READ_ONLY : WHEN_OTHERS,
    toolReferenceName: PREFIX + tool.id,
    displayName: DISPLAY_NAMES[tool.id] ?? tool.id,
    userDescription: tool.description.split('\n')[0],
    modelDescription: tool.description,
    canBeReferencedInPrompt: true,
    icon: ICONS[tool.kind] ?? ICONS.other,
    tags: [
      'toolhost',
      `toolhost-${tool.kind}`,
      ...(readOnly ? ['read-only'] : []),
      ...(openWorld ? ['open-world'] : []),
    ],
    inputSchema: tool.parameters,
  };
}

const toolhost = findToolhost();
if (!toolhost) {
  const why =
    'no `toolhost` found ($TOOLHOST, the repository .venv, PATH); ' +
    'create the venv (python3 -m venv .venv && .venv/bin/pip install -e .) in the repository root';
  if (process.argv.includes('--if-available')) {
    console.log(`generate-tools: ${why}. Keeping the committed languageModelTools.`);
    process.exit(0);
  }
  console.error(`generate-tools: ${why}.`);
  process.exit(1);
}

const file = join(EXTENSION_ROOT, 'package.json');
const before = readFileSync(file, 'utf8');
const pkg = JSON.parse(before);
pkg.contributes.languageModelTools = catalogue(toolhost).map(contribution);
const after = JSON.stringify(pkg, null, 2) + '\n';

if (process.argv.includes('--check')) {
  if (after !== before) {
    console.error('package.json languageModelTools is stale: run `npm run generate` in editors/vscode');
    process.exit(1);
  }
} else if (after !== before) {
  writeFileSync(file, after);
  console.log(`package.json: ${pkg.contributes.languageModelTools.length} language model tools`);
}
