/**
 * The built-in tools as Language Model Tools, so Copilot's agent mode (or any
 * chat participant) can call them. package.json's `languageModelTools` is
 * generated from `toolhost list --json` at build time (scripts/generate-tools.mjs);
 * here each contributed tool is registered to run `tools/execute`, with a
 * progress message and, for tools that change things or reach the network, a
 * confirmation that shows what will run.
 */
import * as vscode from 'vscode';
import { ToolhostApi } from './api';
import { errorText, traceInfo } from './common/logging';
import { markConfirmed } from './confirmed';
import { ContributedTool } from './trust';

type Input = Record<string, unknown>;

export function registerLanguageModelTools(
  api: ToolhostApi,
  tools: readonly ContributedTool[],
): vscode.Disposable[] {
  if (typeof vscode.lm?.registerTool !== 'function') {
    traceInfo('This VS Code has no Language Model Tools API; the tools are not contributed to chat.');
    return [];
  }
  return tools.map((tool) =>
    vscode.lm.registerTool<Input>(tool.name, {
      prepareInvocation: (options) => prepare(tool, options.input ?? {}),
      invoke: (options, token) => invoke(api, tool, options.input ?? {}, token),
    }),
  );
}

export async function invoke(
  api: ToolhostApi,
  tool: ContributedTool,
  input: Input,
  token?: vscode.CancellationToken,
): Promise<vscode.LanguageModelToolResult> {
  let text: string;
  // VS Code confirmed this call (prepare asked): toolhost's review may be skipped for it.
  const callID = `call_lm${Date.now().toString(36)}${Math.random().toString(36).slice(2, 10)}`;
  const confirmed = needsConfirmation(tool) ? markConfirmed(callID) : undefined;
  try {
    const result = await api.executeTool(tool.id, input, { token, callID });
    const files = (result.attachments ?? []).map((a) => `[attachment: ${a.filename ?? 'file'} (${a.mime})]`);
    text = [result.output, ...files].join('\n');
  } catch (error) {
    if (error instanceof vscode.CancellationError) {
      throw error;
    }
    text = `toolhost could not run ${tool.id}: ${errorText(error)}`;
  } finally {
    confirmed?.dispose();
  }
  return new vscode.LanguageModelToolResult([new vscode.LanguageModelTextPart(text)]);
}

export function prepare(tool: ContributedTool, input: Input): vscode.PreparedToolInvocation {
  const prepared: vscode.PreparedToolInvocation = { invocationMessage: invocationMessage(tool.id, input) };
  if (needsConfirmation(tool)) {
    prepared.confirmationMessages = {
      title: `Allow toolhost to run ${tool.id}?`,
      message: new vscode.MarkdownString(confirmationText(tool.id, input)),
    };
  }
  return prepared;
}

/** What the sidecar asks about with `toolhost.review.byDefault` (REVIEW_DEFAULTS: edit, bash). */
const REVIEWED = new Set(['edit', 'write', 'multiedit', 'apply_patch', 'bash']);

/**
 * Whether toolhost's own review (with the diff) follows for this tool: then VS Code's
 * generic confirmation would only be a second prompt, with less in it. Not when the
 * person chose to skip that review after a confirmation (toolhost.copilot.*).
 */
export function reviewFollows(tool: ContributedTool): boolean {
  const config = vscode.workspace.getConfiguration('toolhost');
  if (config.get<boolean>('review.byDefault', true) === false) {
    return false;
  }
  if (config.inspect<boolean>('copilot.skipReviewAfterConfirmation')?.globalValue === true) {
    return false;
  }
  return REVIEWED.has(tool.id);
}

/** Tools that change things or reach the network are confirmed in chat first, unless
 * toolhost's review follows. */
export function needsConfirmation(tool: ContributedTool): boolean {
  return (!tool.readOnly || tool.openWorld) && !reviewFollows(tool);
}

function str(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

export function invocationMessage(id: string, input: Input): string {
  const file = str(input.filePath);
  switch (id) {
    case 'read':
      return `Reading ${file}`;
    case 'write':
      return `Writing ${file}`;
    case 'edit':
    case 'multiedit':
      return `Editing ${file}`;
    case 'glob':
      return `Finding files matching ${str(input.pattern)}`;
    case 'grep':
      return `Searching for ${str(input.pattern)}`;
    case 'list':
      return `Listing ${str(input.path) || 'the project'}`;
    case 'bash':
      return `Running: ${str(input.description) || str(input.command)}`;
    case 'webfetch':
      return `Fetching ${str(input.url)}`;
    case 'todowrite':
      return 'Updating the task list';
    case 'todoread':
      return 'Reading the task list';
    case 'skill':
      return `Loading the skill ${str(input.name)}`;
    case 'apply_patch':
      return 'Applying a patch';
    default:
      return `Running ${id}`;
  }
}

function confirmationText(id: string, input: Input): string {
  if (id === 'bash') {
    const why = str(input.description);
    return `${why ? `${why}\n\n` : ''}\`\`\`sh\n${str(input.command)}\n\`\`\``;
  }
  if (id === 'webfetch') {
    return `Fetch ${str(input.url)}`;
  }
  const words = changeInWords(id, input);
  if (words) {
    return words;
  }
  const json = JSON.stringify(input, null, 2);
  return '```json\n' + (json.length > 2000 ? `${json.slice(0, 2000)}\n…` : json) + '\n```';
}

function lines(text: string): number {
  return text === '' ? 0 : text.replace(/\n$/, '').split('\n').length;
}

function count(n: number, what: string): string {
  return `${n} ${what}${n === 1 ? '' : 's'}`;
}

/** An edit said in words: which file, and what changes in it. */
function changeInWords(id: string, input: Input): string | undefined {
  const file = str(input.filePath);
  switch (id) {
    case 'edit': {
      const all = input.replaceAll === true ? ' (every occurrence)' : '';
      return `Edit ${file}: replace ${count(lines(str(input.oldString)), 'line')} with ${count(lines(str(input.newString)), 'line')}${all}.`;
    }
    case 'multiedit':
      return `Edit ${file}: ${count(Array.isArray(input.edits) ? input.edits.length : 0, 'change')}.`;
    case 'write':
      return `Write ${file} (${count(lines(str(input.content)), 'line')}), replacing what it holds if it exists.`;
    case 'apply_patch': {
      const files = [...str(input.patchText).matchAll(/^\*\*\* (Add|Update|Delete) File: (.+)$/gm)].map(
        (m) => `${m[1].toLowerCase()} ${m[2]}`,
      );
      return `Apply a patch: ${files.join(', ') || 'no file named'}.`;
    }
    default:
      return undefined;
  }
}
