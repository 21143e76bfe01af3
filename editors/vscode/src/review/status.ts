/**
 * The status bar item "2 changes to review", shown while anything waits for an answer
 * (in the warning colours, so it is seen); a click opens the oldest review.
 */
import * as vscode from 'vscode';
import { ReviewController } from './controller';
import { plain, plural } from './words';

export class ReviewStatus implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem(
    'toolhost.reviews',
    vscode.StatusBarAlignment.Left,
    1000,
  );
  private readonly subscription: vscode.Disposable;

  constructor(private readonly controller: ReviewController) {
    this.item.name = 'toolhost: waiting for your review';
    this.item.command = { title: 'Review', command: 'toolhost.review.show' };
    this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
    this.subscription = controller.onDidChange(() => this.render());
    this.render();
  }

  /** What the item shows; for tests. */
  get text(): string {
    return this.item.text;
  }

  dispose(): void {
    this.subscription.dispose();
    this.item.dispose();
  }

  private render(): void {
    const reviews = this.controller.reviews;
    void vscode.commands.executeCommand('setContext', 'toolhost.reviewsPending', reviews.length > 0);
    if (!reviews.length) {
      this.item.hide();
      return;
    }
    const edits = reviews.filter((r) => r.isEdit).length;
    const asks = reviews.length - edits;
    const words =
      asks === 0
        ? plural(edits, 'change')
        : edits === 0
          ? plural(asks, reviews.every((r) => r.params.permission === 'bash') ? 'command' : 'request')
          : `${reviews.length} requests`;
    this.item.text = `$(${edits ? 'diff' : 'shield'}) ${words} to review`;
    this.item.tooltip = new vscode.MarkdownString(
      reviews.map((r) => `- **${r.tool}**: ${plain(r.params.title)}`).join('\n') +
        '\n\nClick to review the oldest.',
    );
    this.item.show();
  }
}
