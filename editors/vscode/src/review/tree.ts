/**
 * The Review view (toolhost's activity bar container): every pending ask, its files
 * and hunks, each with inline ✓/✗ buttons and its decision so far; the activity bar
 * badge counts what waits. Clicking a hunk shows it in the diff editor.
 */
import * as vscode from 'vscode';
import { ReviewController } from './controller';
import { bodyLines, changedSpan, parseHeader, ReviewHunk } from './hunks';
import { Decision, FileView, Review } from './review';
import { plural } from './words';

export const REVIEW_VIEW = 'toolhost.reviews';

export type ReviewNode =
  | { kind: 'review'; review: Review }
  | { kind: 'file'; review: Review; file: FileView }
  | { kind: 'hunk'; review: Review; file: FileView; hunk: ReviewHunk; index: number };

export class ReviewTree implements vscode.TreeDataProvider<ReviewNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<ReviewNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  readonly view: vscode.TreeView<ReviewNode>;
  private readonly subscriptions: vscode.Disposable[];

  constructor(private readonly controller: ReviewController) {
    this.view = vscode.window.createTreeView(REVIEW_VIEW, { treeDataProvider: this, showCollapseAll: false });
    this.subscriptions = [this.view, this.changed, controller.onDidChange(() => this.refresh())];
    this.refresh();
  }

  dispose(): void {
    this.subscriptions.forEach((d) => d.dispose());
  }

  private refresh(): void {
    const reviews = this.controller.reviews;
    this.view.badge = reviews.length
      ? { value: reviews.length, tooltip: `${plural(reviews.length, 'request')} waiting for your review` }
      : undefined;
    this.changed.fire(undefined);
  }

  getChildren(node?: ReviewNode): ReviewNode[] {
    if (!node) {
      return this.controller.reviews.map((review) => ({ kind: 'review', review }));
    }
    if (node.kind === 'review') {
      const { review } = node;
      if (review.files.length === 1) {
        return this.hunkNodes(review, review.files[0]);
      }
      return review.files.map((file) => ({ kind: 'file', review, file }));
    }
    if (node.kind === 'file') {
      return this.hunkNodes(node.review, node.file);
    }
    return [];
  }

  getParent(node: ReviewNode): ReviewNode | undefined {
    if (node.kind === 'review') return undefined;
    if (node.kind === 'file' || node.review.files.length === 1)
      return { kind: 'review', review: node.review };
    return { kind: 'file', review: node.review, file: node.file };
  }

  getTreeItem(node: ReviewNode): vscode.TreeItem {
    switch (node.kind) {
      case 'review':
        return this.reviewItem(node.review);
      case 'file':
        return this.fileItem(node.review, node.file);
      case 'hunk':
        return this.hunkItem(node);
    }
  }

  private hunkNodes(review: Review, file: FileView): ReviewNode[] {
    return file.perHunk ? file.hunks.map((hunk, index) => ({ kind: 'hunk', review, file, hunk, index })) : [];
  }

  private reviewItem(review: Review): vscode.TreeItem {
    const item = new vscode.TreeItem(
      review.params.title,
      review.isEdit ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None,
    );
    item.id = review.id;
    item.description = review.isEdit
      ? `${review.tool} · ${review.files.length === 1 ? review.summary.replace(/^.* \(/, '(') : review.summary}`
      : `${review.tool} · waiting`;
    item.iconPath = new vscode.ThemeIcon(
      review.isEdit ? 'diff' : review.params.permission === 'bash' ? 'terminal' : 'shield',
    );
    item.contextValue = review.isEdit ? 'toolhost.review.edit' : 'toolhost.review.ask';
    const tip = new vscode.MarkdownString(undefined, true);
    tip.appendMarkdown(`**${review.tool}** asks: ${escape(review.params.title)}\n\n`);
    if (typeof review.params.metadata.command === 'string') {
      tip.appendCodeblock(review.params.metadata.command, 'shellscript');
    }
    if (review.alwaysCovers) tip.appendMarkdown(`\n\n“Always” would allow ${review.alwaysCovers}.`);
    item.tooltip = tip;
    item.command = { title: 'Show', command: 'toolhost.review.show', arguments: [review.id] };
    return item;
  }

  private fileItem(review: Review, file: FileView): vscode.TreeItem {
    const item = new vscode.TreeItem(
      file.label,
      file.perHunk ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None,
    );
    item.id = `${review.id}/${file.rel}`;
    item.resourceUri = file.uri;
    const state = review.fileDecision(file);
    const kind = file.info.type === 'update' ? '' : ` · ${file.info.type}`;
    item.description = `+${file.info.additions ?? 0} −${file.info.deletions ?? 0}${kind}${state ? ` · ${state}` : ''}`;
    item.iconPath = decisionIcon(state === 'partial' ? undefined : state, 'file');
    item.contextValue = `toolhost.review.file.${state ?? 'pending'}`;
    item.command = { title: 'Show', command: 'toolhost.review.showFile', arguments: [review.id, file.rel] };
    return item;
  }

  private hunkItem(node: Extract<ReviewNode, { kind: 'hunk' }>): vscode.TreeItem {
    const { review, file, hunk, index } = node;
    const decision = review.decisionOf(hunk);
    const removed = hunk.lines.filter((l) => l.startsWith('-')).length;
    const added = hunk.lines.filter((l) => l.startsWith('+')).length;
    const item = new vscode.TreeItem(`Change ${index + 1} of ${file.hunks.length}`);
    item.id = `${review.id}/${hunk.id}`;
    const at = parseHeader(hunk.header);
    const lead = bodyLines(hunk).findIndex((l) => !l.startsWith(' '));
    const line = (at?.newStart ?? 1) + Math.max(lead, 0);
    const where = added ? `line ${line}` : `after line ${Math.max(line - 1, 0)}`;
    item.description = `${decision ?? 'pending'} · ${where} · +${added} −${removed}`;
    item.iconPath = decisionIcon(decision, 'circle-outline');
    item.contextValue = `toolhost.review.hunk.${decision ?? 'pending'}`;
    const tip = new vscode.MarkdownString();
    tip.appendMarkdown(`**${file.rel}** ${escape(hunk.header)}\n\n`);
    tip.appendCodeblock(hunk.lines.join('\n'), 'diff');
    item.tooltip = tip;
    const text = this.controller.proposed.text(file.right) ?? file.proposed;
    const span = changedSpan(text, hunk);
    item.command = {
      title: 'Show',
      command: 'toolhost.review.showHunk',
      arguments: [review.id, hunk.id, span?.start],
    };
    return item;
  }
}

function decisionIcon(decision: Decision | undefined, pending: string): vscode.ThemeIcon {
  if (decision === 'accepted')
    return new vscode.ThemeIcon('check', new vscode.ThemeColor('testing.iconPassed'));
  if (decision === 'rejected')
    return new vscode.ThemeIcon('close', new vscode.ThemeColor('testing.iconFailed'));
  return new vscode.ThemeIcon(pending);
}

function escape(text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-.!|<>]/g, '\\$&');
}
