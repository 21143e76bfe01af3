/**
 * Per-hunk review inside the diff editor's proposed side: a note at the end of each
 * hunk's first line (its number, its state, the keys), a hover with Accept / Reject
 * links, CodeLenses (shown where `diffEditor.codeLens` is on), and "the hunk at the
 * cursor" for the Alt+Y / Alt+N commands and the context menu.
 */
import * as vscode from 'vscode';
import { PROPOSED_SCHEME } from '../common/constants';
import { ReviewController } from './controller';
import {
  bodyLines,
  changedSpan,
  LineSpan,
  locate,
  parseHeader,
  ReviewHunk,
  sides,
  splitLines,
} from './hunks';
import { FileView, Review } from './review';

export interface HunkAt {
  review: Review;
  file: FileView;
  hunk: ReviewHunk;
  index: number;
  span: LineSpan;
}

/** Where each hunk of a file sits in its proposed document now (rejected ones: their old lines). */
export function hunkSpans(review: Review, file: FileView, text: string): HunkAt[] {
  if (!file.perHunk) {
    return [];
  }
  const found: HunkAt[] = [];
  file.hunks.forEach((hunk, index) => {
    let span: LineSpan | undefined;
    if (review.decisionOf(hunk) === 'rejected') {
      // Shown as it was: the hunk's old side, and in it the lines it would have replaced.
      const { before } = sides(hunk);
      const start = locate(splitLines(text).lines, before, (parseHeader(hunk.header)?.oldStart ?? 1) - 1);
      const body = bodyLines(hunk).filter((l) => !l.startsWith('+'));
      const lead = Math.max(
        0,
        body.findIndex((l) => l.startsWith('-')),
      );
      const removed = body.filter((l) => l.startsWith('-')).length;
      span =
        start === undefined ? undefined : { start: start + lead, end: start + lead + Math.max(1, removed) };
    } else {
      span = changedSpan(text, hunk);
    }
    if (span) found.push({ review, file, hunk, index, span });
  });
  return found;
}

function contains(span: LineSpan, line: number): boolean {
  return span.start === span.end
    ? line === span.start || line === span.start - 1
    : line >= span.start && line < span.end;
}

export class InEditorReview implements vscode.HoverProvider, vscode.CodeLensProvider, vscode.Disposable {
  private readonly pending = vscode.window.createTextEditorDecorationType({
    after: { color: new vscode.ThemeColor('editorCodeLens.foreground'), margin: '0 0 0 2em' },
  });
  private readonly accepted = vscode.window.createTextEditorDecorationType({
    after: { color: new vscode.ThemeColor('testing.iconPassed'), margin: '0 0 0 2em' },
  });
  private readonly rejected = vscode.window.createTextEditorDecorationType({
    after: { color: new vscode.ThemeColor('testing.iconFailed'), margin: '0 0 0 2em' },
    isWholeLine: true,
  });
  private readonly lensesChanged = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.lensesChanged.event;
  private readonly subscriptions: vscode.Disposable[];

  constructor(private readonly controller: ReviewController) {
    const selector = { scheme: PROPOSED_SCHEME };
    this.subscriptions = [
      this.pending,
      this.accepted,
      this.rejected,
      this.lensesChanged,
      vscode.languages.registerHoverProvider(selector, this),
      vscode.languages.registerCodeLensProvider(selector, this),
      controller.onDidChange(() => this.refresh()),
      vscode.window.onDidChangeVisibleTextEditors(() => this.decorateAll()),
      vscode.workspace.onDidChangeTextDocument((event) => {
        if (event.document.uri.scheme === PROPOSED_SCHEME) this.refresh();
      }),
    ];
  }

  dispose(): void {
    this.subscriptions.forEach((d) => d.dispose());
  }

  /** The hunk under the cursor of the active (or given) proposed editor. */
  hunkAt(editor = vscode.window.activeTextEditor): HunkAt | undefined {
    const located = editor && this.locate(editor.document);
    const line = editor?.selection.active.line;
    return line === undefined ? undefined : located?.spans.find((s) => contains(s.span, line));
  }

  /** The review and file a proposed document shows. */
  locate(document: vscode.TextDocument): { review: Review; file: FileView; spans: HunkAt[] } | undefined {
    const review = this.controller.reviewOf(document.uri);
    const file = review?.files.find((f) => f.right.toString() === document.uri.toString());
    return review && file ? { review, file, spans: hunkSpans(review, file, document.getText()) } : undefined;
  }

  provideHover(document: vscode.TextDocument, position: vscode.Position): vscode.Hover | undefined {
    const at = this.locate(document)?.spans.find((s) => contains(s.span, position.line));
    if (!at) {
      return undefined;
    }
    const args = (command: string) =>
      `command:${command}?${encodeURIComponent(JSON.stringify([at.review.id, at.hunk.id]))}`;
    const decision = at.review.decisionOf(at.hunk);
    const text = new vscode.MarkdownString(undefined, true);
    text.isTrusted = { enabledCommands: ['toolhost.review.acceptHunk', 'toolhost.review.rejectHunk'] };
    text.appendMarkdown(
      `**Change ${at.index + 1} of ${at.file.hunks.length}** proposed by ${at.review.tool}` +
        (decision ? ` — ${decision}` : '') +
        `\n\n[$(check) Accept this change](${args('toolhost.review.acceptHunk')})` +
        ` · [$(close) Reject this change](${args('toolhost.review.rejectHunk')})`,
    );
    return new vscode.Hover(text);
  }

  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    const located = this.locate(document);
    if (!located) {
      return [];
    }
    return located.spans.flatMap((at) => {
      const range = new vscode.Range(at.span.start, 0, at.span.start, 0);
      const decision = at.review.decisionOf(at.hunk);
      const id = [at.review.id, at.hunk.id];
      const lenses = [];
      if (decision !== 'accepted') {
        lenses.push(
          new vscode.CodeLens(range, {
            title: `$(check) Accept change ${at.index + 1}/${at.file.hunks.length}`,
            command: 'toolhost.review.acceptHunk',
            arguments: id,
          }),
        );
      }
      if (decision !== 'rejected') {
        lenses.push(
          new vscode.CodeLens(range, {
            title: `$(close) Reject change ${at.index + 1}/${at.file.hunks.length}`,
            command: 'toolhost.review.rejectHunk',
            arguments: id,
          }),
        );
      }
      return lenses;
    });
  }

  private refresh(): void {
    this.lensesChanged.fire();
    this.decorateAll();
  }

  private decorateAll(): void {
    for (const editor of vscode.window.visibleTextEditors) {
      if (editor.document.uri.scheme === PROPOSED_SCHEME) {
        this.decorate(editor);
      }
    }
  }

  private decorate(editor: vscode.TextEditor): void {
    const spans = this.locate(editor.document)?.spans ?? [];
    // Short, and at the end of the change's shortest line: in a split diff the end of a
    // long line is out of sight, and the note was cut off there.
    const note = (at: HunkAt, text: string): vscode.DecorationOptions => {
      const last = editor.document.lineCount - 1;
      let line = Math.min(at.span.start, last);
      for (let n = line + 1; n < Math.min(at.span.end, last + 1); n++) {
        if (editor.document.lineAt(n).text.length < editor.document.lineAt(line).text.length) line = n;
      }
      const end = editor.document.lineAt(line).range.end;
      return {
        range: new vscode.Range(end, end),
        renderOptions: { after: { contentText: `${at.index + 1}/${at.file.hunks.length} ${text}` } },
      };
    };
    const byState = {
      pending: [] as vscode.DecorationOptions[],
      accepted: [] as vscode.DecorationOptions[],
      rejected: [] as vscode.DecorationOptions[],
    };
    for (const at of spans) {
      const decision = at.review.decisionOf(at.hunk);
      if (decision === 'accepted') byState.accepted.push(note(at, '✓'));
      else if (decision === 'rejected') byState.rejected.push(note(at, '✗ (Alt+Y: back)'));
      else byState.pending.push(note(at, 'Alt+Y/N'));
    }
    editor.setDecorations(this.pending, byState.pending);
    editor.setDecorations(this.accepted, byState.accepted);
    editor.setDecorations(this.rejected, byState.rejected);
  }
}
