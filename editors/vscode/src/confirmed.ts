/**
 * Calls that VS Code has just confirmed (a Language Model Tool's confirmation).
 *
 * With `toolhost.copilot.skipReviewAfterConfirmation` on (a user setting; off by
 * default), toolhost's own review of such a call is answered "once" without asking
 * again. Only callIDs this extension made for a confirmed invocation are here, and
 * each is forgotten when its call ends.
 */
import * as vscode from 'vscode';

const confirmed = new Set<string>();

export function markConfirmed(callID: string): vscode.Disposable {
  confirmed.add(callID);
  return new vscode.Disposable(() => confirmed.delete(callID));
}

/** True when the user chose to skip the review of calls VS Code already confirmed. */
export function skipReview(callID: string | undefined): boolean {
  if (!callID || !confirmed.has(callID)) {
    return false;
  }
  const setting = vscode.workspace
    .getConfiguration('toolhost')
    .inspect<boolean>('copilot.skipReviewAfterConfirmation');
  return setting?.globalValue === true; // the user's own settings only, never a workspace's
}
