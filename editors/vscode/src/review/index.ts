/**
 * Review, put together: the queue, the diff and notification, the Review view, the
 * status item, the per-hunk controls in the editor, the commands, and the part of
 * the exported API that lets an agent panel list and answer reviews itself.
 */
import * as vscode from 'vscode';
import { registerReviewCommands } from './commands';
import { ReviewController } from './controller';
import { InEditorReview } from './inEditor';
import { ProposedFiles } from './proposedFs';
import { ReviewFeatures, ReviewPresenter } from './presenter';
import { PendingReview, ReviewAnswer } from './review';
import { ReviewStatus } from './status';
import { ReviewTree } from './tree';

export type { PendingReview, ReviewAnswer } from './review';
export type { ReviewHunk } from './hunks';

/** The review half of the exported API (same shape as Neovim's pending()/answer()). */
export interface ReviewApi {
  /** Every ask waiting for a person, oldest first, edits and commands alike. */
  pendingReviews(): PendingReview[];
  /**
   * Answers one: `{reply: "once"|"always"|"reject", hunks?, files?, message?, edited?, scope?}`.
   * With `hunks` or `files` only those are applied. Throws on an unknown id or a bad answer.
   */
  answerReview(id: string, answer: ReviewAnswer): void;
  /** Fires when a review arrives, is decided in part, or is answered; with the new list. */
  readonly onDidChangePendingReviews: vscode.Event<PendingReview[]>;
}

export class Reviews implements vscode.Disposable, ReviewApi {
  readonly proposed = new ProposedFiles();
  readonly controller = new ReviewController(this.proposed);
  private readonly listChanged = new vscode.EventEmitter<PendingReview[]>();
  readonly onDidChangePendingReviews = this.listChanged.event;
  private readonly subscriptions: vscode.Disposable[];

  constructor(features: () => ReviewFeatures) {
    const presenter = new ReviewPresenter(this.controller, features);
    const inEditor = new InEditorReview(this.controller);
    this.subscriptions = [
      presenter,
      inEditor,
      new ReviewTree(this.controller),
      new ReviewStatus(this.controller),
      ...registerReviewCommands(this.controller, presenter, inEditor),
      this.controller.onDidChange(() => this.listChanged.fire(this.pendingReviews())),
      this.listChanged,
    ];
  }

  pendingReviews(): PendingReview[] {
    return this.controller.pending();
  }

  answerReview(id: string, answer: ReviewAnswer): void {
    this.controller.answer(id, answer);
  }

  dispose(): void {
    this.subscriptions.forEach((d) => d.dispose());
    this.controller.dispose();
    this.proposed.dispose();
  }
}
