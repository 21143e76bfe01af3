/**
 * The queue of pending reviews. A `permission/ask` becomes a Review that waits, with
 * no timeout, until someone answers it: a button, a hunk or file decision that
 * settles the last open one, or `answerReview()` from another extension. Closing the
 * diff tab or a notification is not an answer; the review stays in the list and the
 * status item until it is answered, or until the sidecar withdraws the ask (the call
 * was cancelled).
 */
import * as vscode from 'vscode';
import { CancellationToken } from 'vscode-languageclient/node';
import { PROPOSED_SCHEME } from '../common/constants';
import { errorText, traceInfo, traceWarn } from '../common/logging';
import { PermissionAsk, PermissionReply } from '../types';
import { minimalEdit, ReviewHunk, swapHunk } from './hunks';
import { ProposedFiles } from './proposedFs';
import { Decision, FileView, PendingReview, ReplyKind, Review, ReviewAnswer } from './review';

export interface SettleOptions {
  message?: string;
  reply?: ReplyKind;
  scope?: ReviewAnswer['scope'];
  alwaysOption?: string;
  unsaved?: ReviewAnswer['unsaved'];
}

interface Waiting {
  review: Review;
  resolve(reply: PermissionReply): void;
}

export class ReviewController implements vscode.Disposable {
  private readonly waiting = new Map<string, Waiting>();
  private readonly changed = new vscode.EventEmitter<void>();
  private readonly added = new vscode.EventEmitter<Review>();
  private readonly finished = new vscode.EventEmitter<Review>();
  /** Fires whenever the list or a decision in it changes. */
  readonly onDidChange = this.changed.event;
  /** Fires once per new review, after it is listed. */
  readonly onDidAdd = this.added.event;
  /** Fires once per review, when it is answered or withdrawn. */
  readonly onDidFinish = this.finished.event;

  /** Why a review ended without an answer from here, by id (said if its toast is clicked). */
  private readonly withdrawn = new Map<string, string>();

  constructor(readonly proposed: ProposedFiles) {}

  /** Why the review `id` is no longer pending, in words ("it was already answered"). */
  whyEnded(id: string): string {
    const why = this.withdrawn.get(id);
    return why ? `it was withdrawn ${why}` : 'it was already answered';
  }

  get reviews(): Review[] {
    return [...this.waiting.values()].map((w) => w.review);
  }

  get(id: string): Review | undefined {
    return this.waiting.get(id)?.review;
  }

  /** The review a proposed document or diff belongs to. */
  reviewOf(uri: vscode.Uri | undefined): Review | undefined {
    const id = uri && ProposedFiles.reviewOf(uri);
    return id ? this.get(id) : undefined;
  }

  pending(): PendingReview[] {
    return this.reviews.map((r) => r.toPublic());
  }

  /** Lists the ask and waits for its answer. */
  ask(params: PermissionAsk, token?: CancellationToken): Promise<PermissionReply> {
    const review = new Review(params, ProposedFiles.uri);
    for (const file of review.files) {
      this.proposed.set(file.right, file.proposed);
      if (file.left.scheme === PROPOSED_SCHEME) {
        this.proposed.set(file.left, file.base);
      }
    }
    return new Promise<PermissionReply>((resolve) => {
      this.waiting.set(review.id, { review, resolve });
      token?.onCancellationRequested(() => {
        if (this.waiting.has(review.id)) {
          traceInfo(`permission/ask ${review.id} (${review.tool}) was withdrawn by the sidecar`);
          this.finish(review, undefined);
        }
      });
      this.changed.fire();
      this.added.fire(review);
    });
  }

  /** Answers a review; throws when the id is unknown or the answer is malformed. */
  answer(id: string, answer: unknown): void {
    const review = this.get(id);
    if (!review) {
      const ids = this.reviews.map((r) => JSON.stringify(r.id)).join(', ');
      throw new RangeError(
        `toolhost.answerReview: no pending review ${JSON.stringify(id)}${ids ? `; pending: ${ids}` : ' (none is pending)'}`,
      );
    }
    this.finish(review, review.validate(answer));
  }

  /** Accepts or rejects every hunk and file not decided yet, and answers. */
  settle(review: Review, rest: Decision, extra: SettleOptions = {}): void {
    if (!this.waiting.has(review.id)) {
      return;
    }
    let answer: ReviewAnswer;
    if (!review.isEdit) {
      answer = { reply: rest === 'accepted' ? (extra.reply ?? 'once') : 'reject' };
    } else if (rest === 'rejected' && review.decisions.size === 0) {
      answer = { reply: 'reject' };
    } else {
      answer = review.answerFrom(rest, (file) => this.proposed.text(file.right), extra.reply);
    }
    if (extra.message) answer.message = extra.message;
    if (answer.reply === 'always' && review.scoped) {
      if (extra.scope) answer.scope = extra.scope;
      if (extra.alwaysOption) answer.alwaysOption = extra.alwaysOption;
    }
    if (answer.reply !== 'reject' && extra.unsaved && review.overlapping.length)
      answer.unsaved = extra.unsaved;
    this.finish(review, answer);
  }

  /** The sidecar no longer waits for this ask (answered elsewhere, or the call was cancelled). */
  withdraw(id: string, why = 'by the sidecar'): void {
    const review = this.get(id);
    if (review) {
      this.withdrawn.set(id, why);
      traceInfo(`permission/ask ${id} (${review.tool}) was withdrawn ${why}`);
      this.finish(review, undefined);
    }
  }

  /** Decides one hunk; shows a rejection in place; answers once nothing is left open. */
  async decideHunk(review: Review, hunk: ReviewHunk, decision: Decision): Promise<void> {
    const file = review.fileOf(hunk);
    if (!file || !this.waiting.has(review.id)) {
      return;
    }
    if (!file.perHunk) {
      return this.decideFile(review, file, decision);
    }
    const before = review.decisionOf(hunk);
    if (before === decision) {
      return;
    }
    // Show it in the proposed text: a rejected hunk's old lines come back.
    const wasRejected = before === 'rejected';
    if (decision === 'rejected' || wasRejected) {
      const swapped = await this.swap(file, hunk, decision === 'rejected' ? 'old' : 'new');
      if (!swapped) {
        void vscode.window.showWarningMessage(
          `toolhost: the proposed text of ${file.rel} no longer holds that change as proposed (was it edited?); change it by hand instead.`,
        );
        return;
      }
    }
    review.decisions.set(hunk.id, decision);
    this.afterDecision(review);
  }

  decideFile(review: Review, file: FileView, decision: Decision): Promise<void> {
    if (!this.waiting.has(review.id)) {
      return Promise.resolve();
    }
    if (file.perHunk) {
      return (async () => {
        for (const hunk of file.hunks) {
          if (review.decisionOf(hunk) !== decision) {
            await this.decideHunk(review, hunk, decision);
            if (!this.waiting.has(review.id)) return;
          }
        }
      })();
    }
    review.decisions.set(`file:${file.rel}`, decision);
    this.afterDecision(review);
    return Promise.resolve();
  }

  dispose(): void {
    for (const { review } of [...this.waiting.values()]) {
      this.finish(review, { reply: 'reject', message: 'VS Code closed the review before it was answered.' });
    }
    this.changed.dispose();
    this.added.dispose();
    this.finished.dispose();
  }

  private afterDecision(review: Review): void {
    if (review.undecided === 0) {
      // Everything has a decision: that is the answer.
      this.settle(review, 'accepted');
    } else {
      this.changed.fire();
    }
  }

  /** Puts one hunk to its old or new side in the proposed document, as one undoable edit. */
  private async swap(file: FileView, hunk: ReviewHunk, to: 'old' | 'new'): Promise<boolean> {
    const current = this.proposed.text(file.right);
    const next = current === undefined ? undefined : swapHunk(current, hunk, to);
    if (current === undefined || next === undefined) {
      return false;
    }
    const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === file.right.toString());
    if (!open) {
      this.proposed.set(file.right, next);
      return true;
    }
    const change = minimalEdit(current, next);
    const edit = new vscode.WorkspaceEdit();
    edit.replace(
      file.right,
      new vscode.Range(open.positionAt(change.start), open.positionAt(change.end)),
      change.text,
    );
    try {
      if (!(await vscode.workspace.applyEdit(edit))) {
        return false;
      }
      // Keep our own change saved (in memory), so closing the tab never asks to save it.
      if (open.isDirty && open.getText() === next) {
        await open.save();
      }
      return true;
    } catch (error) {
      traceWarn(`Could not show the decision on ${file.rel}: ${errorText(error)}`);
      return false;
    }
  }

  private finish(review: Review, answer: ReviewAnswer | undefined): void {
    const waiting = this.waiting.get(review.id);
    if (!waiting) {
      return;
    }
    this.waiting.delete(review.id);
    if (answer) {
      traceInfo(
        `permission/ask ${review.id} ${review.tool} (${review.params.patterns.join(', ')}): ${JSON.stringify(answer)}`,
      );
      waiting.resolve(answer);
    } else {
      waiting.resolve({ reply: 'reject' });
    }
    this.finished.fire(review);
    this.changed.fire();
  }
}
