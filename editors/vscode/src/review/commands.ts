/**
 * The review commands, reached from the diff editor's title bar and context menu, the
 * Review view's inline buttons, the hover and CodeLens links, the keyboard and the
 * palette. Each finds its review from what it was given (a review id, a view node, a
 * proposed document's URI) or from the active editor, and asks when that is unclear.
 */
import * as vscode from 'vscode';
import { ReviewController } from './controller';
import { InEditorReview } from './inEditor';
import { ReviewPresenter } from './presenter';
import { FileView, Review } from './review';
import { ReviewNode } from './tree';

export const REVIEW_COMMANDS = {
  show: 'toolhost.review.show',
  showFile: 'toolhost.review.showFile',
  showHunk: 'toolhost.review.showHunk',
  acceptAll: 'toolhost.review.acceptAll',
  rejectAll: 'toolhost.review.rejectAll',
  rejectWithReason: 'toolhost.review.rejectWithReason',
  always: 'toolhost.review.always',
  more: 'toolhost.review.more',
  acceptHunk: 'toolhost.review.acceptHunk',
  rejectHunk: 'toolhost.review.rejectHunk',
  acceptFile: 'toolhost.review.acceptFile',
  rejectFile: 'toolhost.review.rejectFile',
  openAll: 'toolhost.review.openAll',
} as const;

type Target = string | ReviewNode | vscode.Uri | undefined;

export function registerReviewCommands(
  controller: ReviewController,
  presenter: ReviewPresenter,
  inEditor: InEditorReview,
): vscode.Disposable[] {
  /** The review a command is about. */
  const reviewFor = async (target: Target, action: string): Promise<Review | undefined> => {
    if (typeof target === 'string') return controller.get(target);
    if (target instanceof vscode.Uri) return controller.reviewOf(target);
    if (target && 'review' in target) return controller.get(target.review.id);
    const active = controller.reviewOf(activeProposedUri());
    if (active) return active;
    const all = controller.reviews;
    if (all.length <= 1) return all[0];
    const picked = await vscode.window.showQuickPick(
      all.map((review) => ({
        label: review.params.title,
        description: `${review.tool} · ${review.summary}`,
        review,
      })),
      { title: `toolhost: which request to ${action}?` },
    );
    return picked?.review;
  };

  const fileFor = (review: Review, target: Target): FileView | undefined => {
    if (target && typeof target === 'object' && 'kind' in target && target.kind !== 'review')
      return target.file;
    const uri = target instanceof vscode.Uri ? target : activeProposedUri();
    return (
      review.files.find((f) => f.right.toString() === uri?.toString()) ??
      (review.files.length === 1 ? review.files[0] : undefined)
    );
  };

  const decideHunk = (accept: boolean) => async (target?: Target, hunkId?: string) => {
    const decision = accept ? 'accepted' : 'rejected';
    if (typeof target === 'string' && hunkId) {
      const review = controller.get(target);
      const hunk = review?.hunks.find((h) => h.id === hunkId);
      if (review && hunk) await controller.decideHunk(review, hunk, decision);
      return;
    }
    if (target && typeof target === 'object' && 'kind' in target && target.kind === 'hunk') {
      return controller.decideHunk(target.review, target.hunk, decision);
    }
    if (target && typeof target === 'object' && 'kind' in target && target.kind === 'file') {
      return controller.decideFile(target.review, target.file, decision);
    }
    const at = inEditor.hunkAt();
    if (at) {
      return controller.decideHunk(at.review, at.hunk, decision);
    }
    void vscode.window.showInformationMessage(
      'toolhost: put the cursor on a proposed change (in the right side of the review diff) first.',
    );
  };

  const decideFile = (accept: boolean) => async (target?: Target) => {
    const review = await reviewFor(target, accept ? 'accept a file of' : 'reject a file of');
    const file = review && fileFor(review, target);
    if (review && file) await controller.decideFile(review, file, accept ? 'accepted' : 'rejected');
  };

  const on =
    (action: string, run: (review: Review, target: Target) => unknown) => async (target?: Target) => {
      const review = await reviewFor(target, action);
      if (review) await run(review, target);
    };

  return [
    vscode.commands.registerCommand(REVIEW_COMMANDS.show, async (target?: Target) => {
      const review =
        typeof target === 'string' || target instanceof vscode.Uri || target
          ? await reviewFor(target, 'show')
          : controller.reviews[0];
      if (review) await presenter.show(review);
      else void vscode.window.showInformationMessage('toolhost: nothing is waiting for your review.');
    }),
    vscode.commands.registerCommand(REVIEW_COMMANDS.showFile, async (id: string, rel: string) => {
      const review = controller.get(id);
      const file = review?.files.find((f) => f.rel === rel);
      if (review && file) await presenter.openDiff(review, file, true);
    }),
    vscode.commands.registerCommand(
      REVIEW_COMMANDS.showHunk,
      async (id: string, hunkId: string, line?: number) => {
        const review = controller.get(id);
        const hunk = review?.hunks.find((h) => h.id === hunkId);
        const file = hunk && review?.fileOf(hunk);
        if (review && file) await presenter.openDiff(review, file, true, line);
      },
    ),
    vscode.commands.registerCommand(
      REVIEW_COMMANDS.acceptAll,
      on('accept', (r) => controller.settle(r, 'accepted')),
    ),
    vscode.commands.registerCommand(
      REVIEW_COMMANDS.rejectAll,
      on('reject', (r) => controller.settle(r, 'rejected')),
    ),
    vscode.commands.registerCommand(
      REVIEW_COMMANDS.rejectWithReason,
      on('reject', (r) => presenter.rejectWithReason(r)),
    ),
    vscode.commands.registerCommand(
      REVIEW_COMMANDS.always,
      on('always allow', (r) => presenter.always(r)),
    ),
    vscode.commands.registerCommand(
      REVIEW_COMMANDS.more,
      on('answer', (r) => presenter.more(r)),
    ),
    vscode.commands.registerCommand(
      REVIEW_COMMANDS.openAll,
      on('show', (r) => presenter.openAll(r)),
    ),
    vscode.commands.registerCommand(REVIEW_COMMANDS.acceptHunk, decideHunk(true)),
    vscode.commands.registerCommand(REVIEW_COMMANDS.rejectHunk, decideHunk(false)),
    vscode.commands.registerCommand(REVIEW_COMMANDS.acceptFile, decideFile(true)),
    vscode.commands.registerCommand(REVIEW_COMMANDS.rejectFile, decideFile(false)),
  ];
}

/** The proposed side of the review diff in front of the person, if one is. */
function activeProposedUri(): vscode.Uri | undefined {
  const editor = vscode.window.activeTextEditor;
  if (editor && editor.document.uri.scheme === 'toolhost-proposed') {
    return editor.document.uri;
  }
  const input = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
  return input instanceof vscode.TabInputTextDiff ? input.modified : undefined;
}
