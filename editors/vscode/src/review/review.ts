/**
 * One pending review: a `permission/ask` waiting for a person, its files and hunks,
 * the person's decision on each hunk (or whole file), and the answer those decisions
 * make (`{reply, hunks?, files?, edited?, message?, scope?}`, contract C in
 * docs/protocol.md).
 *
 * A rejected hunk is shown rejected in place: the proposed text gets the hunk's old
 * lines back, so what the proposed side shows is what accepting applies. A file whose
 * proposed text the person changed by hand is sent as `edited` (its full text).
 */
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import { applyHunks, applyTextEdits, parseUnifiedDiff, TextEdit } from '../diffs';
import { findOpenDocument } from '../edits';
import { AlwaysOption, PermissionAsk, PermissionReply } from '../types';
import { applySome, ReviewHunk } from './hunks';
import { describeAlways, oneLine, plural } from './words';

export type ReplyKind = 'once' | 'always' | 'reject';
export type RuleScope = 'session' | 'project' | 'user';
export const RULE_SCOPES: readonly RuleScope[] = ['session', 'project', 'user'];

/** An answer, from the UI or from `answerReview(id, answer)`: the `permission/ask` reply. */
export type ReviewAnswer = PermissionReply;

/** A file of an edit ask, as `metadata.files` describes it. */
export interface ReviewFile {
  filePath: string;
  relativePath: string;
  type: string;
  additions?: number;
  deletions?: number;
  movePath?: string;
  patch?: string;
  /** After the fact (`metadata.kind`): the text when the agent's turn began (null: none). */
  before?: string | null;
}

/** What `pendingReviews()` lists, the shape of Neovim's `require("toolhost").pending()`. */
export interface PendingReview {
  id: string;
  tool: string;
  title: string;
  permission: string;
  patterns: string[];
  always: string[];
  /** The "always" patterns in words: "commands starting `git status`". */
  alwaysCovers: string;
  /** What an "always" may cover, the first being the default (`alwaysOption` in the answer). */
  alwaysOptions: AlwaysOption[];
  /** Files whose buffer has unsaved changes: whether the change overlaps them (`unsaved` in the answer). */
  unsaved: UnsavedFile[];
  sessionID: string;
  callID: string;
  files: ReviewFile[];
  hunks: ReviewHunk[];
  /** Hunk id → the person's decision so far, for hunks already decided in the UI. */
  decisions: Record<string, Decision>;
  /** When the ask arrived (ms since the epoch). */
  askedAt: number;
}

export type Decision = 'accepted' | 'rejected';

export interface UnsavedFile {
  file: string;
  overlaps: boolean;
  /** The agent's hunks there, as 1-based [first, last] buffer lines. */
  lines: [number, number][];
}

/** One file of an edit review, with what the diff editor compares. */
export interface FileView {
  info: ReviewFile;
  rel: string;
  /** The file on disk (a move: where it goes). */
  uri: vscode.Uri;
  /** The original side: the real file, or an empty document for a new file. */
  left: vscode.Uri;
  /** The proposed side: an editable `toolhost-proposed:` document. */
  right: vscode.Uri;
  /** The text the change applies to (the open buffer, else the disk). */
  base: string;
  /** The whole proposal. */
  proposed: string;
  hunks: ReviewHunk[];
  /** Whether hunks can be accepted one by one (they rebuild the proposal from the base). */
  perHunk: boolean;
  label: string;
}

export type ProposedUri = (review: string, file: vscode.Uri, side: 'before' | 'after') => vscode.Uri;

let reviews = 0;

export class Review {
  readonly id: string;
  readonly askedAt = Date.now();
  readonly files: FileView[];
  readonly hunks: ReviewHunk[];
  /** Hunk id, or `file:<relative path>` for a file decided whole. */
  readonly decisions = new Map<string, Decision>();
  /** Whether the sidecar sent hunks (and so takes `hunks`/`files` in the reply). */
  readonly partial: boolean;

  constructor(
    readonly params: PermissionAsk,
    proposedUri: ProposedUri,
  ) {
    this.id = typeof params.id === 'string' && params.id ? params.id : `review-${++reviews}`;
    const raw = params.metadata.hunks;
    this.hunks = Array.isArray(raw) ? raw.filter(isHunk) : [];
    this.partial = Array.isArray(raw);
    this.files = params.permission === 'edit' ? buildFiles(params, this.id, this.hunks, proposedUri) : [];
  }

  get isEdit(): boolean {
    return this.params.permission === 'edit';
  }

  get tool(): string {
    return this.params.tool;
  }

  get always(): string[] {
    return this.params.always?.length ? this.params.always : this.params.patterns;
  }

  /**
   * The sidecar's options for "always" (what it covers, in words); none where it sent an
   * empty list (an ask it asks every time, e.g. a command making a git repository). A
   * sidecar that sends no list gets one option made here from the patterns.
   */
  get alwaysOptions(): AlwaysOption[] {
    if (Array.isArray(this.params.alwaysOptions)) return this.params.alwaysOptions.filter(isOption);
    return this.always.length === 0
      ? []
      : [
          {
            id: 'default',
            patterns: this.always,
            label: describeAlways(this.params.permission, this.always),
          },
        ];
  }

  /** Whether the sidecar takes `alwaysOption` and `scope` (it sent `alwaysOptions`). */
  get scoped(): boolean {
    return Array.isArray(this.params.alwaysOptions) && this.params.alwaysOptions.length > 0;
  }

  /** What "Always" would allow by default, in words ("" where it is not offered). */
  get alwaysCovers(): string {
    return this.alwaysOptions[0]?.label ?? '';
  }

  /** Files whose buffer has unsaved changes. */
  get unsaved(): UnsavedFile[] {
    const raw = this.params.metadata.unsaved;
    return Array.isArray(raw) ? raw.filter((u): u is UnsavedFile => !!u && typeof u.file === 'string') : [];
  }

  /** Files where the change overlaps lines the person changed and has not saved. */
  get overlapping(): string[] {
    return this.unsaved.filter((u) => u.overlaps).map((u) => u.file);
  }

  /** "app.txt (+1 −1)", "3 files", "`git status`". */
  get summary(): string {
    if (this.isEdit) {
      if (this.files.length === 1) {
        const [f] = this.files;
        return `${f.label} (+${f.info.additions ?? 0} −${f.info.deletions ?? 0})`;
      }
      return plural(this.files.length, 'file');
    }
    const command = this.params.metadata.command;
    return typeof command === 'string' ? `\`${oneLine(command)}\`` : this.params.patterns.join(', ');
  }

  fileOf(hunk: ReviewHunk): FileView | undefined {
    return this.files.find((f) => f.rel === hunk.file);
  }

  decisionOf(hunk: ReviewHunk): Decision | undefined {
    return this.decisions.get(hunk.id);
  }

  /** A file's decision: its own for a file without per-hunk review, else from its hunks. */
  fileDecision(file: FileView): Decision | 'partial' | undefined {
    if (!file.perHunk) {
      return this.decisions.get(`file:${file.rel}`);
    }
    const states = file.hunks.map((h) => this.decisions.get(h.id));
    if (states.every((s) => s === 'accepted')) return 'accepted';
    if (states.every((s) => s === 'rejected')) return 'rejected';
    return states.some((s) => s !== undefined) ? 'partial' : undefined;
  }

  /** Hunks and hunk-less files nobody has decided on yet. */
  get undecided(): number {
    let count = 0;
    for (const file of this.files) {
      count += file.perHunk
        ? file.hunks.filter((h) => !this.decisions.has(h.id)).length
        : this.decisions.has(`file:${file.rel}`)
          ? 0
          : 1;
    }
    return count;
  }

  /** The proposed text of a file with its rejected hunks left out. */
  expectedText(file: FileView): string {
    if (!file.perHunk) {
      return file.proposed;
    }
    const kept = file.hunks.filter((h) => this.decisions.get(h.id) !== 'rejected');
    return applySome(file.base, kept) ?? file.proposed;
  }

  /**
   * The answer the decisions make once every undecided hunk and file is `rest`.
   * `texts` gives each file's proposed text as it is now (the person may have typed).
   */
  answerFrom(
    rest: Decision,
    texts: (file: FileView) => string | undefined,
    reply: ReplyKind = 'once',
  ): ReviewAnswer {
    const decided = (key: string): Decision => this.decisions.get(key) ?? rest;
    const files: string[] = [];
    const hunks: string[] = [];
    const edited: Record<string, string> = {};
    let whole = true;
    for (const file of this.files) {
      if (!file.perHunk) {
        if (decided(`file:${file.rel}`) === 'accepted') {
          files.push(file.rel);
          const text = texts(file);
          if (text !== undefined && text !== file.proposed && file.info.type !== 'delete') {
            edited[file.rel] = text;
          }
        } else {
          whole = false;
        }
        continue;
      }
      const accepted = file.hunks.filter((h) => decided(h.id) === 'accepted');
      const text = texts(file);
      const expected = this.expectedText(file);
      if (text !== undefined && text !== expected) {
        // Typed by hand: the text as it stands is what the person accepts.
        edited[file.rel] = text;
        files.push(file.rel);
        continue;
      }
      if (accepted.length === file.hunks.length) {
        files.push(file.rel);
      } else {
        whole = false;
        hunks.push(...accepted.map((h) => h.id));
      }
    }
    const hasEdits = Object.keys(edited).length > 0;
    if (!files.length && !hunks.length) {
      return { reply: 'reject' };
    }
    if (whole && !hasEdits) {
      return { reply };
    }
    const answer: ReviewAnswer = { reply: reply === 'always' ? 'always' : 'once' };
    if (files.length) answer.files = files;
    if (hunks.length || !files.length) answer.hunks = hunks;
    if (hasEdits) answer.edited = edited;
    return answer;
  }

  /** Checks an answer given through the API; throws saying what is wrong. */
  validate(answer: unknown): ReviewAnswer {
    const where = `toolhost.answerReview(${JSON.stringify(this.id)}, …)`;
    if (!answer || typeof answer !== 'object' || Array.isArray(answer)) {
      throw new TypeError(`${where}: the answer must be an object such as { reply: "once" }`);
    }
    const a = answer as Record<string, unknown>;
    if (a.reply !== 'once' && a.reply !== 'always' && a.reply !== 'reject') {
      throw new TypeError(
        `${where}: reply must be "once", "always" or "reject", got ${JSON.stringify(a.reply)}`,
      );
    }
    if (a.reply === 'always' && this.alwaysOptions.length === 0) {
      throw new RangeError(
        `${where}: this ask offers no "always" (it is asked every time): reply "once" or "reject"`,
      );
    }
    const strings = (key: string, known: string[]): string[] | undefined => {
      const value = a[key];
      if (value === undefined) return undefined;
      if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) {
        throw new TypeError(`${where}: ${key} must be a list of strings`);
      }
      const unknown = value.filter((v) => !known.includes(v));
      if (unknown.length) {
        throw new RangeError(
          `${where}: no ${key === 'hunks' ? 'hunk' : 'file'} ${unknown.map((u) => JSON.stringify(u)).join(', ')} in this review; it has ${known.map((k) => JSON.stringify(k)).join(', ') || 'none'}`,
        );
      }
      return value as string[];
    };
    const result: ReviewAnswer = { reply: a.reply };
    const hunks = strings(
      'hunks',
      this.hunks.map((h) => h.id),
    );
    const files = strings(
      'files',
      this.files.map((f) => f.rel),
    );
    if (hunks) result.hunks = hunks;
    if (files) result.files = files;
    if (a.message !== undefined) {
      if (typeof a.message !== 'string') throw new TypeError(`${where}: message must be a string`);
      result.message = a.message;
    }
    if (a.edited !== undefined) {
      const edited = a.edited as Record<string, unknown>;
      if (!edited || typeof edited !== 'object' || Array.isArray(edited)) {
        throw new TypeError(`${where}: edited must be an object of relative path → text`);
      }
      strings('files', Object.keys(edited)); // the same check: only files of this review
      for (const [rel, text] of Object.entries(edited)) {
        if (!this.files.some((f) => f.rel === rel)) {
          throw new RangeError(
            `${where}: edited names ${JSON.stringify(rel)}, which is not a file of this review`,
          );
        }
        if (typeof text !== 'string')
          throw new TypeError(`${where}: edited[${JSON.stringify(rel)}] must be a string`);
      }
      result.edited = edited as Record<string, string>;
    }
    if (a.scope !== undefined) {
      if (!RULE_SCOPES.includes(a.scope as RuleScope)) {
        throw new TypeError(`${where}: scope must be "session", "project" or "user"`);
      }
      result.scope = a.scope as RuleScope;
    }
    if (a.alwaysOption !== undefined) {
      const ids = this.alwaysOptions.map((o) => o.id);
      if (typeof a.alwaysOption !== 'string' || !ids.includes(a.alwaysOption)) {
        throw new RangeError(
          `${where}: alwaysOption must be one of ${ids.map((i) => JSON.stringify(i)).join(', ')}`,
        );
      }
      result.alwaysOption = a.alwaysOption;
    }
    if (a.unsaved !== undefined) {
      if (a.unsaved !== 'editor' && a.unsaved !== 'save') {
        throw new TypeError(
          `${where}: unsaved must be "editor" (apply in the editor only) or "save" (save the unsaved changes too)`,
        );
      }
      result.unsaved = a.unsaved;
    }
    return result;
  }

  toPublic(): PendingReview {
    const decisions: Record<string, Decision> = {};
    for (const [key, value] of this.decisions) decisions[key] = value;
    return {
      id: this.id,
      tool: this.params.tool,
      title: this.params.title,
      permission: this.params.permission,
      patterns: [...this.params.patterns],
      always: [...this.always],
      alwaysCovers: this.alwaysCovers,
      alwaysOptions: this.alwaysOptions.map((o) => ({ ...o, patterns: [...o.patterns] })),
      unsaved: this.unsaved.map((u) => ({ ...u })),
      sessionID: this.params.sessionID,
      callID: this.params.callID,
      files: this.files.map((f) => ({ ...f.info })),
      hunks: this.hunks.map((h) => ({ ...h, lines: [...h.lines] })),
      decisions,
      askedAt: this.askedAt,
    };
  }
}

function isOption(value: unknown): value is AlwaysOption {
  const o = value as AlwaysOption;
  return !!o && typeof o.id === 'string' && typeof o.label === 'string' && Array.isArray(o.patterns);
}

function isHunk(value: unknown): value is ReviewHunk {
  const h = value as ReviewHunk;
  return (
    !!h &&
    typeof h.id === 'string' &&
    typeof h.file === 'string' &&
    typeof h.header === 'string' &&
    Array.isArray(h.lines)
  );
}

// --- the files of an edit ask -----------------------------------------------------------

function buildFiles(
  params: PermissionAsk,
  id: string,
  hunks: ReviewHunk[],
  proposedUri: ProposedUri,
): FileView[] {
  const infos = Array.isArray(params.metadata.files) ? (params.metadata.files as ReviewFile[]) : [];
  const fromEdit = editFiles(params.metadata.edit);
  const diffs = parseUnifiedDiff(typeof params.metadata.diff === 'string' ? params.metadata.diff : '');
  // Changed outside review: the disk already holds the change; its hunks run from the
  // text the turn began with, so accepting keeps them and rejecting undoes them.
  const afterTheFact = params.metadata.kind === 'afterTheFact';
  const entries: ReviewFile[] = infos.length
    ? infos
    : fromEdit.length
      ? fromEdit.map((f) => ({
          filePath: f.file.fsPath,
          relativePath: vscode.workspace.asRelativePath(f.file, false),
          type: f.deleted ? 'delete' : f.created ? 'add' : 'update',
        }))
      : diffs.map((d) => {
          const rel = d.newPath ?? d.oldPath ?? 'unknown';
          return {
            filePath: resolveInWorkspace(rel).fsPath,
            relativePath: rel,
            type: d.oldPath ? (d.newPath ? 'update' : 'delete') : 'add',
          };
        });
  return entries.map((info) => {
    const source = vscode.Uri.file(info.filePath);
    const uri = info.movePath ? vscode.Uri.file(info.movePath) : source;
    const rel = info.relativePath;
    const base = info.type === 'add' ? '' : afterTheFact ? (info.before ?? '') : (currentText(source) ?? '');
    const edit = fromEdit.find((f) => f.file.fsPath === uri.fsPath);
    const fileHunks = hunks.filter((h) => h.file === rel);
    let proposed: string | undefined;
    if (info.type === 'delete') {
      proposed = '';
    } else if (edit) {
      proposed = applyTextEdits(info.type === 'add' ? '' : base, edit.edits);
    } else if (fileHunks.length) {
      proposed = applySome(base, fileHunks);
    } else {
      const diff = diffs.find((d) => d.newPath === rel || d.oldPath === rel);
      proposed = diff ? applyHunks(base, diff) : undefined;
    }
    proposed ??= base;
    // As the sidecar narrows: added, deleted and moved files, and files one apply_patch
    // changes more than once, are taken whole or not at all.
    const perHunk =
      info.type === 'update' &&
      !info.movePath &&
      entries.filter((e) => e.relativePath === rel).length === 1 &&
      fileHunks.length > 0 &&
      applySome(base, fileHunks) === proposed;
    const exists = !afterTheFact && info.type !== 'add' && currentText(source) !== undefined;
    const label = info.movePath ? `${rel} → ${vscode.workspace.asRelativePath(uri, false)}` : rel;
    return {
      info,
      rel,
      uri,
      left: exists ? source : proposedUri(id, uri, 'before'),
      right: proposedUri(id, uri, 'after'),
      base,
      proposed,
      hunks: fileHunks,
      perHunk,
      label,
    };
  });
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
export function currentText(uri: vscode.Uri): string | undefined {
  const open = findOpenDocument(uri);
  if (open) {
    return open.getText();
  }
  try {
    return fs
      .readFileSync(uri.fsPath)
      .toString('utf8')
      .replace(/^\uFEFF/, '');
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
