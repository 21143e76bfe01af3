/**
 * `permission/ask`: the sidecar asks before a tool does something the config says
 * to ask about. For an edit, the proposed change opens first in VS Code's diff
 * editor (the real file against a virtual document holding the proposed text,
 * without taking focus); then a notification asks `Allow once`,
 * `Always allow (<pattern>)`, `Reject` or `Reject with feedback…`.
 * Answers `{ reply, message? }`; a dismissed prompt is a rejection.
 */
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import { CancellationToken, LanguageClient } from 'vscode-languageclient/node';
import { PROPOSED_SCHEME } from './common/constants';
import { errorText, traceInfo, traceWarn } from './common/logging';
import { RequestFamily } from './common/server';
import { getSettings } from './common/settings';
import { skipReview } from './confirmed';
import { findOpenDocument } from './edits';
import { applyHunks, applyTextEdits, FileDiff, hunkSides, parseUnifiedDiff, TextEdit } from './diffs';
import { PermissionAsk, PermissionReply } from './types';

export const ALLOW_ONCE = 'Allow once';
export const REJECT = 'Reject';
export const REJECT_WITH_FEEDBACK = 'Reject with feedback…';

/** Holds the text of proposed edits for the `toolhost-proposed:` documents. */
export class ProposedDocuments implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly texts = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly registration = vscode.workspace.registerTextDocumentContentProvider(PROPOSED_SCHEME, this);

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? '';
  }

  set(uri: vscode.Uri, text: string): void {
    this.texts.set(uri.toString(), text);
    this.changed.fire(uri);
  }

  delete(uri: vscode.Uri): void {
    this.texts.delete(uri.toString());
  }

  dispose(): void {
    this.registration.dispose();
    this.changed.dispose();
  }
}

interface PreviewFile {
  file: vscode.Uri;
  left: vscode.Uri;
  right: vscode.Uri;
  label: string;
}

export class PermissionsFamily implements RequestFamily {
  readonly flags = ['permissionAsk'] as const;
  private previews = 0;

  constructor(private readonly proposed: ProposedDocuments) {}

  register(client: LanguageClient): vscode.Disposable[] {
    return [client.onRequest('permission/ask', (params: PermissionAsk, token) => this.ask(params, token))];
  }

  async ask(params: PermissionAsk, token?: CancellationToken): Promise<PermissionReply> {
    if (skipReview(params.callID)) {
      traceInfo(`permission/ask ${params.tool}: VS Code confirmed this call already; allowed once`);
      return { reply: 'once' };
    }
    const style = getSettings().prompts;
    const files = style !== 'notification' && params.permission === 'edit' ? await this.preview(params) : [];
    try {
      const reply = await prompt(params, style === 'modal', token);
      traceInfo(`permission/ask ${params.tool} (${params.patterns.join(', ')}): ${reply.reply}`);
      return reply;
    } finally {
      await this.closePreview(files);
    }
  }

  /** Opens the proposed change in the diff editor; returns what to close later. */
  private async preview(params: PermissionAsk): Promise<PreviewFile[]> {
    let files: PreviewFile[] = [];
    try {
      files = this.previewFiles(params);
      if (files.length === 1) {
        const [only] = files;
        await vscode.commands.executeCommand(
          'vscode.diff',
          only.left,
          only.right,
          `${only.label} ↔ proposed by ${params.tool}`,
          // Not a preview tab: that would replace the user's own preview editor.
          { preview: false, preserveFocus: true },
        );
      } else if (files.length > 1) {
        await vscode.commands.executeCommand(
          'vscode.changes',
          `Proposed by ${params.tool}: ${params.title}`,
          files.map((f) => [f.file, f.left, f.right]),
        );
      }
    } catch (error) {
      traceWarn(`Could not show the proposed change: ${errorText(error)}`);
    }
    return files;
  }

  private previewFiles(params: PermissionAsk): PreviewFile[] {
    const id = `${params.callID}-${++this.previews}`;
    const fromEdit = editFiles(params.metadata.edit);
    if (fromEdit.length) {
      return fromEdit.map((change, i) => {
        const base = currentText(change.file) ?? '';
        const proposed = change.deleted ? '' : applyTextEdits(change.created ? '' : base, change.edits);
        return this.previewFile(change.file, base, proposed, `${id}-${i}`);
      });
    }
    const diff = typeof params.metadata.diff === 'string' ? params.metadata.diff : '';
    return parseUnifiedDiff(diff).map((file, i) => this.previewFromDiff(file, `${id}-${i}`));
  }

  private previewFromDiff(file: FileDiff, id: string): PreviewFile {
    const rel = file.newPath ?? file.oldPath ?? 'unknown';
    const uri = resolveInWorkspace(rel);
    const base = file.oldPath ? currentText(uri) : '';
    const proposed = base === undefined ? undefined : file.newPath ? applyHunks(base, file) : '';
    if (base !== undefined && proposed !== undefined) {
      return this.previewFile(uri, base, proposed, id);
    }
    // The hunks do not fit the file as it is now: show them side by side alone.
    const sides = hunkSides(file);
    const left = proposedUri(uri, `${id}-before`);
    const right = proposedUri(uri, id);
    this.proposed.set(left, sides.before);
    this.proposed.set(right, sides.after);
    return { file: uri, left, right, label: `${path.basename(uri.fsPath)} (changed lines)` };
  }

  private previewFile(file: vscode.Uri, base: string, proposed: string, id: string): PreviewFile {
    const right = proposedUri(file, id);
    this.proposed.set(right, proposed);
    let left = file;
    if (currentText(file) === undefined) {
      left = proposedUri(file, `${id}-before`); // a new file: compare with nothing
      this.proposed.set(left, base);
    }
    return { file, left, right, label: vscode.workspace.asRelativePath(file, false) };
  }

  private async closePreview(files: PreviewFile[]): Promise<void> {
    if (!files.length) {
      return;
    }
    const ours = new Set(files.map((f) => f.right.toString()));
    const tabs = vscode.window.tabGroups.all
      .flatMap((group) => group.tabs)
      .filter((tab) => {
        const input = tab.input;
        if (input instanceof vscode.TabInputTextDiff) {
          return ours.has(input.modified.toString());
        }
        // The multi-file diff editor (vscode.changes) is named by its title only.
        return files.length > 1 && tab.label.startsWith('Proposed by ');
      });
    try {
      if (tabs.length) {
        await vscode.window.tabGroups.close(tabs, true);
      }
    } catch (error) {
      traceWarn(`Could not close the proposed change: ${errorText(error)}`);
    }
    for (const f of files) {
      this.proposed.delete(f.right);
      this.proposed.delete(f.left);
    }
  }
}

/** Asks the user; a dismissed prompt or a cancelled request is a rejection. */
async function prompt(
  params: PermissionAsk,
  modal: boolean,
  token?: CancellationToken,
): Promise<PermissionReply> {
  const always = `Always allow (${alwaysLabel(params)})`;
  const items = [ALLOW_ONCE, always, REJECT, REJECT_WITH_FEEDBACK];
  const warn = ['bash', 'external_directory', 'doom_loop'].includes(params.permission);
  const show = warn ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
  const options: vscode.MessageOptions = modal ? { modal: true, detail: detail(params) } : { modal: false };
  const message = modal ? `toolhost: ${params.title}` : `toolhost: ${params.title} — ${detail(params)}`;
  const choice = await raceCancel(Promise.resolve(show(message, options, ...items)), token);
  switch (choice) {
    case ALLOW_ONCE:
      return { reply: 'once' };
    case always:
      return { reply: 'always' };
    case REJECT_WITH_FEEDBACK: {
      const feedback = await vscode.window.showInputBox({
        title: `Reject ${params.tool} with feedback`,
        prompt: 'Tell the agent what to do instead',
        ignoreFocusOut: true,
      });
      return feedback?.trim() ? { reply: 'reject', message: feedback.trim() } : { reply: 'reject' };
    }
    default:
      return { reply: 'reject' };
  }
}

function raceCancel<T>(promise: Promise<T>, token?: CancellationToken): Promise<T | undefined> {
  if (!token) {
    return promise;
  }
  return new Promise((resolve, reject) => {
    const subscription = token.onCancellationRequested(() => resolve(undefined));
    promise.then(resolve, reject).finally(() => subscription.dispose());
  });
}

/** The line under the title: what the diff shows, or what would run or be touched. */
function detail(params: PermissionAsk): string {
  const patterns = params.patterns.join(', ');
  if (params.permission === 'edit') {
    return `the proposed change is open in the diff editor (${params.tool}).`;
  }
  const what =
    patterns && patterns !== params.title ? `${params.permission}: ${patterns}` : params.permission;
  return `${params.tool} asks for ${what}`.slice(0, 400);
}

/** What "Always allow" would approve: the ask's `always` patterns. */
export function alwaysLabel(params: PermissionAsk): string {
  const patterns = params.always?.length ? params.always : params.patterns;
  const label = patterns.map((p) => (p === '*' ? `${params.permission} *` : p)).join(', ');
  return label.length > 60 ? `${label.slice(0, 57)}...` : label;
}

interface EditFile {
  file: vscode.Uri;
  edits: TextEdit[];
  created: boolean;
  deleted: boolean;
}

/** The files of a WorkspaceEdit (`metadata.edit`), with their text edits. */
function editFiles(edit: unknown): EditFile[] {
  const changes = (edit as { documentChanges?: unknown[] } | undefined)?.documentChanges;
  if (!Array.isArray(changes)) {
    return [];
  }
  const files = new Map<string, EditFile>();
  const entry = (uri: string): EditFile => {
    let found = files.get(uri);
    if (!found) {
      found = { file: vscode.Uri.parse(uri), edits: [], created: false, deleted: false };
      files.set(uri, found);
    }
    return found;
  };
  for (const change of changes as Record<string, any>[]) {
    if (change.kind === 'create' && typeof change.uri === 'string') {
      entry(change.uri).created = true;
    } else if (change.kind === 'delete' && typeof change.uri === 'string') {
      entry(change.uri).deleted = true;
    } else if (change.kind === 'rename' && typeof change.newUri === 'string') {
      entry(change.newUri).created = true;
    } else if (typeof change.textDocument?.uri === 'string' && Array.isArray(change.edits)) {
      entry(change.textDocument.uri).edits.push(...(change.edits as TextEdit[]));
    }
  }
  return [...files.values()];
}

/** The text the user sees: the open buffer (saved or not), else the file, else undefined. */
function currentText(uri: vscode.Uri): string | undefined {
  const open = findOpenDocument(uri);
  if (open) {
    return open.getText();
  }
  try {
    const bytes = fs.readFileSync(uri.fsPath);
    return bytes.toString('utf8').replace(/^\uFEFF/, '');
  } catch {
    return undefined;
  }
}

function resolveInWorkspace(relative: string): vscode.Uri {
  if (path.isAbsolute(relative)) {
    return vscode.Uri.file(relative);
  }
  const root = vscode.workspace.workspaceFolders?.[0]?.uri;
  return root ? vscode.Uri.joinPath(root, relative) : vscode.Uri.file(path.resolve(relative));
}

/** A proposed-text document named like the file, so it gets the file's language. */
function proposedUri(file: vscode.Uri, id: string): vscode.Uri {
  return vscode.Uri.from({ scheme: PROPOSED_SCHEME, path: file.path, query: id });
}
