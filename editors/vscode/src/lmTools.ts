/**
 * The built-in tools as Language Model Tools, so Copilot's agent mode (or any
 * chat participant) can call them. package.json's `languageModelTools` is
 * generated from `toolhost list --json` at build time (scripts/generate-tools.mjs);
 * here each contributed tool is registered to run `tools/execute`, with a
 * progress message, and one prompt for a call that changes things or reaches the
 * network: toolhost's own review by default (edits with their diff and commands from
 * the sidecar; a fetch asked here, in the same review), VS Code's confirmation where
 * the person turned toolhost's review off or chose VS Code's. VS Code's confirmation of
 * a call made outside a chat is a modal dialog whose focused "Yes" a Space typed into
 * the editor presses; toolhost's review takes no focus.
 */
import * as vscode from 'vscode';
import { ToolhostApi } from './api';
import { errorText, traceInfo } from './common/logging';
import { markConfirmed } from './confirmed';
import { ContributedTool } from './trust';
import { PermissionAsk, PermissionReply } from './types';

/** Asks in toolhost's review (a pending review, like the sidecar's asks) and waits. */
export type AskInReview = (ask: PermissionAsk, token?: vscode.CancellationToken) => Promise<PermissionReply>;

type Input = Record<string, unknown>;

export function registerLanguageModelTools(
  api: ToolhostApi,
  tools: readonly ContributedTool[],
  askInReview: AskInReview,
): vscode.Disposable[] {
  if (typeof vscode.lm?.registerTool !== 'function') {
    traceInfo('This VS Code has no Language Model Tools API; the tools are not contributed to chat.');
    return [];
  }
  return tools.map((tool) =>
    vscode.lm.registerTool<Input>(tool.name, {
      prepareInvocation: (options) => prepare(tool, options.input ?? {}),
      invoke: (options, token) => invoke(api, tool, options.input ?? {}, token, askInReview),
    }),
  );
}

/** What "Always" allowed for calls asked here, until VS Code restarts: `tool pattern`. */
const allowedHere = new Set<string>();

export async function invoke(
  api: ToolhostApi,
  tool: ContributedTool,
  input: Input,
  token?: vscode.CancellationToken,
  askInReview?: AskInReview,
): Promise<vscode.LanguageModelToolResult> {
  let text: string;
  // VS Code confirmed this call (prepare asked): toolhost's review may be skipped for it.
  const callID = `call_lm${Date.now().toString(36)}${Math.random().toString(36).slice(2, 10)}`;
  if (askInReview && asksHere(tool)) {
    const refused = await askHere(askInReview, tool, input, callID, token);
    if (refused) {
      return new vscode.LanguageModelToolResult([new vscode.LanguageModelTextPart(refused)]);
    }
  }
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
 * Whether toolhost's review is the one prompt: on by default; off where the person
 * turned the review off, or chose VS Code's confirmation instead (toolhost.copilot.*).
 */
function toolhostConfirms(): boolean {
  const config = vscode.workspace.getConfiguration('toolhost');
  return (
    config.get<boolean>('review.byDefault', true) !== false &&
    config.inspect<boolean>('copilot.skipReviewAfterConfirmation')?.globalValue !== true
  );
}

/**
 * Whether toolhost's own review (with the diff) follows for this tool: then VS Code's
 * generic confirmation would only be a second prompt, with less in it.
 */
export function reviewFollows(tool: ContributedTool): boolean {
  return toolhostConfirms() && REVIEWED.has(tool.id);
}

/** A call that reaches the network and that the sidecar does not review by default
 * (webfetch): asked here, in toolhost's review. */
export function asksHere(tool: ContributedTool): boolean {
  return toolhostConfirms() && tool.openWorld && !REVIEWED.has(tool.id);
}

/** VS Code's confirmation: only where toolhost's review is not the one prompt, for tools
 * that change things or reach the network. (todowrite changes only the session's task
 * list: with toolhost's review on, nothing asks about it.) */
export function needsConfirmation(tool: ContributedTool): boolean {
  return (!tool.readOnly || tool.openWorld) && !toolhostConfirms();
}

/** Asks about the call in toolhost's review; the text for the model when refused. */
async function askHere(
  askInReview: AskInReview,
  tool: ContributedTool,
  input: Input,
  callID: string,
  token?: vscode.CancellationToken,
): Promise<string | undefined> {
  const pattern = str(input.url) || str(input.query) || '*';
  const key = `${tool.id} ${pattern}`;
  if (allowedHere.has(key)) {
    return undefined;
  }
  const ask: PermissionAsk = {
    id: `lm_${callID}`,
    sessionID: 'vscode-lm',
    callID,
    tool: tool.id,
    permission: tool.id,
    patterns: [pattern],
    title: invocationMessage(tool.id, input),
    metadata: {},
  };
  const reply = await askInReview(ask, token);
  if (reply.reply === 'always') {
    allowedHere.add(key);
  } else if (reply.reply === 'reject') {
    return reply.message
      ? `The user rejected permission to use this specific tool call with the following feedback: ${reply.message}`
      : 'The user rejected permission to use this specific tool call.';
  }
  return undefined;
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
