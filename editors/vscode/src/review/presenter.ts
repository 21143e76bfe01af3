/**
 * How a review is put in front of a person. A proposed edit opens beside the editor
 * being typed in, as a real diff editor scrolled to the first change, without taking
 * focus; a notification with short, whole labels (Accept/Allow · Reject · More…) asks
 * at once. Neither is the review's lifeline: a dismissed notification or a closed tab
 * leaves the review pending, and the status item and the Review view bring it back.
 * `toolhost.prompts: "modal"` asks in a dialog instead of a notification.
 */
import * as vscode from 'vscode';
import { PROPOSED_SCHEME } from '../common/constants';
import { errorText, traceWarn } from '../common/logging';
import { getSettings } from '../common/settings';
import { ReviewController } from './controller';
import { changedSpan, minimalEdit } from './hunks';
import { FileView, Review, RuleScope } from './review';
import { askInWords, oneLine, plain, plural } from './words';

/** What the sidecar takes in a reply beyond `{reply, message}`. */
export interface ReviewFeatures {
  /** Where an "always" may be kept (`scope`), for a sidecar that sends `alwaysOptions`. */
  scopes: RuleScope[];
}

const SCOPE_LABELS: Record<RuleScope, { label: string; detail: string }> = {
  session: {
    label: 'For this session',
    detail: 'Kept in memory for this agent session only; nothing is written.',
  },
  project: {
    label: 'For this project',
    detail: "Saved to the project's opencode.json (or the config file it already has).",
  },
  user: {
    label: 'For all my projects',
    detail: 'Saved to your user config (~/.config/opencode/opencode.json).',
  },
};

/** Where an "always" of `scope` is kept: the real file when the sidecar names it (ruleFiles). */
function scopeDetail(review: Review, scope: RuleScope): string {
  const file = scope === 'session' ? undefined : review.params.ruleFiles?.[scope];
  if (!file) {
    return SCOPE_LABELS[scope].detail;
  }
  const home = process.env.HOME;
  const shown = home && file.startsWith(`${home}/`) ? `~${file.slice(home.length)}` : file;
  return scope === 'user'
    ? `Saved to your user config (${shown}).`
    : `Saved to the project's ${vscode.workspace.asRelativePath(file)}.`;
}

/** The three answers to a change that overlaps unsaved lines, with the words a person reads. */
const OVERLAP = {
  editor: 'Apply in editor only',
  save: 'Save my changes too',
  reject: 'Reject',
} as const;

export class ReviewPresenter implements vscode.Disposable {
  private readonly subscriptions: vscode.Disposable[];

  constructor(
    private readonly controller: ReviewController,
    private readonly features: () => ReviewFeatures,
  ) {
    this.subscriptions = [
      controller.onDidAdd((review) => void this.present(review)),
      controller.onDidFinish((review) => void this.close(review)),
    ];
  }

  dispose(): void {
    this.subscriptions.forEach((d) => d.dispose());
  }

  /** A new ask: the diff (for an edit), then the notification or dialog. */
  private async present(review: Review): Promise<void> {
    const style = getSettings().prompts;
    if (review.isEdit && style !== 'notification') {
      await this.openDiff(review, review.files[0], false);
    }
    if (style === 'modal') {
      await this.askInDialog(review);
    } else {
      await this.notify(review);
    }
  }

  /** Opens the review where the person can answer it: the diff for an edit, else the choices. */
  async show(review: Review, file?: FileView): Promise<void> {
    if (review.isEdit && review.files.length) {
      await this.openDiff(review, file ?? review.files[0], true);
    } else {
      await this.more(review);
    }
  }

  /** The diff editor for one file of a review, beside the active editor, at the first change. */
  async openDiff(review: Review, file: FileView | undefined, focus: boolean, line?: number): Promise<void> {
    if (!file) {
      return;
    }
    try {
      const proposed = this.controller.proposed.text(file.right) ?? file.proposed;
      const at = line ?? firstChangedLine(review, file, proposed);
      const position = new vscode.Position(at, 0);
      const of =
        review.files.length > 1 ? ` (file ${review.files.indexOf(file) + 1} of ${review.files.length})` : '';
      await vscode.commands.executeCommand(
        'vscode.diff',
        file.left,
        file.right,
        `${file.label} ↔ proposed by ${review.tool}${of}`,
        {
          // Not a preview tab (that would replace the person's own preview editor), and
          // beside the editor being typed in, so that editor stays visible and focused.
          // Where it is open already, there: "Beside" another group would open a copy.
          preview: false,
          preserveFocus: !focus,
          viewColumn: openIn(file.right) ?? (focus ? undefined : besideColumn()),
          selection: new vscode.Range(position, position),
        },
      );
    } catch (error) {
      traceWarn(`Could not show the proposed change: ${errorText(error)}`);
    }
  }

  /** Every file of a multi-file review in one multi-diff editor. */
  async openAll(review: Review): Promise<void> {
    try {
      await vscode.commands.executeCommand(
        'vscode.changes',
        multiTitle(review),
        review.files.map((f) => [f.uri, f.left, f.right]),
      );
    } catch (error) {
      traceWarn(`Could not show the proposed changes: ${errorText(error)}`);
    }
  }

  /** All the choices, in words, in a quick pick (the notification's "More…"). */
  async more(review: Review): Promise<void> {
    interface Choice extends vscode.QuickPickItem {
      run?(): void | Promise<void>;
    }
    const accept = review.isEdit ? 'Accept' : 'Allow';
    const overlaps = review.overlapping;
    const choices: Choice[] = [];
    if (overlaps.length) {
      choices.push(
        {
          label: `$(check) ${OVERLAP.editor}`,
          detail: `The change goes into your editor with your unsaved lines; the disk is left as it is (the agent is told).`,
          run: () => this.controller.settle(review, 'accepted', { unsaved: 'editor' }),
        },
        {
          label: `$(save) ${OVERLAP.save}`,
          detail: `Apply the change and save ${overlaps.join(', ')}, your unsaved changes included.`,
          run: () => this.controller.settle(review, 'accepted', { unsaved: 'save' }),
        },
      );
    } else {
      choices.push({
        label: `$(check) ${accept}`,
        detail: review.isEdit
          ? review.decisions.size
            ? 'The changes not rejected so far.'
            : `All of it: ${review.summary}.`
          : `Once: ${plain(review.summary)}.`,
        run: () => this.controller.settle(review, 'accepted'),
      });
    }
    for (const option of review.alwaysOptions) {
      choices.push({
        label: `$(check-all) Always allow ${plain(option.label)}…`,
        detail: review.scoped
          ? 'Then choose: this session, this project, or all your projects.'
          : 'For as long as the sidecar runs.',
        run: () => this.always(review, option.id),
      });
    }
    choices.push(
      {
        label: '$(close) Reject',
        detail: 'Nothing is applied; the agent is told.',
        run: () => this.controller.settle(review, 'rejected'),
      },
      {
        label: '$(comment) Reject with a reason…',
        detail: 'Tell the agent why, or what to do instead.',
        run: () => this.rejectWithReason(review),
      },
    );
    if (review.isEdit) {
      choices.push({
        label: '$(diff) Review each change…',
        detail:
          'Open the diff and the Review view: accept or reject each hunk or file, or edit the proposal first.',
        run: async () => {
          await this.openDiff(review, review.files[0], true);
          await vscode.commands.executeCommand('toolhost.reviews.focus');
        },
      });
    }
    const picked = await vscode.window.showQuickPick(choices, {
      title: `toolhost: ${review.params.title}`,
      placeHolder: review.isEdit
        ? `${review.tool} proposes ${review.summary}`
        : `${review.tool} wants to ${plain(askOf(review))}`,
      ignoreFocusOut: true,
    });
    if (picked?.run && this.controller.get(review.id)) {
      await picked.run();
    }
  }

  /** Asks for a reason (optional); Escape goes back without answering. */
  async rejectWithReason(review: Review): Promise<void> {
    const reason = await vscode.window.showInputBox({
      title: `Reject ${review.tool}: ${review.params.title}`,
      prompt: 'Why, or what to do instead (optional). Enter rejects; Escape leaves it pending.',
      ignoreFocusOut: true,
    });
    if (reason !== undefined && this.controller.get(review.id)) {
      this.controller.settle(review, 'rejected', reason.trim() ? { message: reason.trim() } : {});
    }
  }

  /**
   * "Always allow …": what it covers (when the sidecar offers more than one option) and
   * where it is kept (this session, this project, all projects).
   */
  async always(review: Review, optionId?: string): Promise<void> {
    const options = review.alwaysOptions;
    if (!options.length) {
      void vscode.window.showInformationMessage(
        `toolhost: this ask cannot be allowed always; it is asked every time (${plain(review.params.title)}).`,
      );
      return;
    }
    let option = options.find((o) => o.id === optionId);
    if (!option && options.length > 1) {
      const picked = await vscode.window.showQuickPick(
        options.map((o) => ({ label: `Always allow ${plain(o.label)}`, option: o })),
        { title: `toolhost: always allow what? (${review.params.title})`, ignoreFocusOut: true },
      );
      option = picked?.option;
      if (!option) return;
    }
    option ??= options[0];
    let scope: RuleScope | undefined;
    if (review.scoped) {
      const scopes = this.features().scopes;
      const picked = await vscode.window.showQuickPick(
        scopes.map((s) => ({ label: SCOPE_LABELS[s].label, detail: scopeDetail(review, s), scope: s })),
        { title: `toolhost: always allow ${plain(option.label)} — for how long?`, ignoreFocusOut: true },
      );
      scope = picked?.scope;
      if (!scope) return;
    }
    if (this.controller.get(review.id)) {
      this.controller.settle(review, 'accepted', { reply: 'always', scope, alwaysOption: option.id });
    }
  }

  /** A click on a toast whose review ended meanwhile: VS Code cannot take a toast back. */
  private noLongerPending(review: Review): void {
    void vscode.window.showInformationMessage(
      `toolhost: that request is no longer pending: ${this.controller.whyEnded(review.id)}.`,
    );
  }

  private async notify(review: Review): Promise<void> {
    const warn = ['bash', 'external_directory', 'doom_loop', 'network'].includes(review.params.permission);
    const show =
      warn || review.overlapping.length
        ? vscode.window.showWarningMessage
        : vscode.window.showInformationMessage;
    if (review.overlapping.length) {
      const choice = await show(
        message(review),
        { modal: false },
        OVERLAP.editor,
        OVERLAP.save,
        OVERLAP.reject,
      );
      if (!this.controller.get(review.id)) {
        if (choice) this.noLongerPending(review);
        return;
      }
      if (choice === OVERLAP.editor) this.controller.settle(review, 'accepted', { unsaved: 'editor' });
      else if (choice === OVERLAP.save) this.controller.settle(review, 'accepted', { unsaved: 'save' });
      else if (choice === OVERLAP.reject) this.controller.settle(review, 'rejected');
      return;
    }
    const accept = review.isEdit ? 'Accept' : 'Allow';
    const choice = await show(message(review), { modal: false }, accept, 'Reject', 'More…');
    if (!this.controller.get(review.id)) {
      // Answered elsewhere meanwhile; VS Code cannot take a notification back, so say so.
      if (choice) this.noLongerPending(review);
      return;
    }
    if (choice === accept) {
      this.controller.settle(review, 'accepted');
    } else if (choice === 'Reject') {
      this.controller.settle(review, 'rejected');
    } else if (choice === 'More…') {
      await this.more(review);
    }
    // Dismissed: not an answer. The status item and the Review view keep it.
  }

  private async askInDialog(review: Review): Promise<void> {
    const overlaps = review.overlapping.length > 0;
    const accept = overlaps ? OVERLAP.editor : review.isEdit ? 'Accept' : 'Allow once';
    const always = `Always allow ${plain(review.alwaysCovers)}…`;
    const reason = 'Reject with a reason…';
    // The dialog focuses its first button, so a Space or Enter typed into the editor
    // presses it: that one only shows the change (or leaves the review pending), and
    // leaves the keys where they were: the typing that goes on must not land in the
    // proposed side, which can be edited.
    const safe = review.isEdit ? 'Show the diff' : 'Decide later';
    const offered = review.alwaysOptions.length ? [always] : [];
    const answers = overlaps
      ? [accept, OVERLAP.save, 'Reject', reason]
      : [accept, ...offered, 'Reject', reason];
    const items = [safe, ...answers];
    const choice = await vscode.window.showWarningMessage(
      `toolhost: ${review.params.title}`,
      { modal: true, detail: plain(message(review)) },
      ...items,
    );
    if (!this.controller.get(review.id)) {
      return;
    }
    if (choice === safe && review.isEdit) await this.openDiff(review, review.files[0], false);
    else if (choice === accept)
      this.controller.settle(review, 'accepted', overlaps ? { unsaved: 'editor' } : {});
    else if (choice === OVERLAP.save) this.controller.settle(review, 'accepted', { unsaved: 'save' });
    else if (choice === always) await this.always(review);
    else if (choice === 'Reject') this.controller.settle(review, 'rejected');
    else if (choice === reason) await this.rejectWithReason(review);
    // Cancel: still pending, as with a dismissed notification.
  }

  /** Closes the review's diff tabs once it is answered, without asking to save anything. */
  private async close(review: Review): Promise<void> {
    const ours = new Set(review.files.map((f) => f.right.toString()));
    for (const document of vscode.workspace.textDocuments) {
      if (ours.has(document.uri.toString()) && document.isDirty) {
        await document.save().then(undefined, () => undefined);
      }
    }
    const title = multiTitle(review);
    const tabs = vscode.window.tabGroups.all
      .flatMap((group) => group.tabs)
      .filter((tab) =>
        tab.input instanceof vscode.TabInputTextDiff
          ? ours.has(tab.input.modified.toString())
          : tab.input instanceof vscode.TabInputText
            ? ours.has(tab.input.uri.toString())
            : tab.label === title,
      );
    try {
      if (tabs.length) {
        await vscode.window.tabGroups.close(tabs, true);
      }
    } catch (error) {
      traceWarn(`Could not close the proposed change: ${errorText(error)}`);
    }
    for (const file of review.files) {
      this.controller.proposed.delete(file.right);
      if (file.left.scheme === PROPOSED_SCHEME) this.controller.proposed.delete(file.left);
    }
  }
}

/** The notification's text: who asks for what, and what the diff shows. */
function message(review: Review): string {
  const tool = review.tool;
  if (review.isEdit) {
    const files =
      review.files.length > 1
        ? `${plural(review.files.length, 'file')}: ${review.files.map((f) => f.rel).join(', ')}`
        : review.summary;
    const overlaps = review.overlapping;
    if (overlaps.length) {
      return (
        `toolhost: ${tool}'s change to ${overlaps.join(', ')} overlaps lines you changed and have not saved. ` +
        'Apply it in the editor only (the disk stays as it is), save your changes with it, or reject it.'
      );
    }
    return `toolhost: ${tool} proposes a change to ${files}. The diff is open beside your editor.`;
  }
  if (review.params.metadata.rerun === true) {
    // Allow runs the command again: the ask's title says so, and what its first run
    // changed (put back first). The words for the ask alone would hide both.
    return `toolhost: ${tool}: ${review.params.title.replace(/[.?]?$/, '.')}${alwaysWords(review)}`;
  }
  return `toolhost: ${tool} wants to ${plain(askOf(review))}.${alwaysWords(review)}`;
}

/** What a review that is not an edit would do, in words. */
function askOf(review: Review): string {
  const { command, port } = review.params.metadata;
  return askInWords(
    review.params.permission,
    review.params.patterns,
    typeof command === 'string' ? oneLine(command) : undefined,
    typeof port === 'number' ? port : undefined,
  );
}

/** The column of a tab that already shows the diff of `right`, if any. */
function openIn(right: vscode.Uri): vscode.ViewColumn | undefined {
  const target = right.toString();
  return vscode.window.tabGroups.all.find((group) =>
    group.tabs.some(
      (tab) => tab.input instanceof vscode.TabInputTextDiff && tab.input.modified.toString() === target,
    ),
  )?.viewColumn;
}

/**
 * The group next to the one being typed in, never a new sliver. "Beside" the rightmost of
 * two or more groups makes one more narrow column, where the changed line and its note were
 * cut off past the right edge; the group to its left has the width the person gave it.
 * (VS Code's own chat review shows changes in a group the person already has.)
 */
function besideColumn(): vscode.ViewColumn {
  const groups = vscode.window.tabGroups.all;
  if (groups.length === 1 && !groups[0].tabs.length && !vscode.window.visibleTextEditors.length) {
    // Nothing open: the diff takes the editor area, not its right half beside nothing.
    return groups[0].viewColumn;
  }
  const active = groups.findIndex((group) => group.isActive);
  if (groups.length < 2 || active < groups.length - 1) {
    return vscode.ViewColumn.Beside;
  }
  return groups[active - 1].viewColumn;
}

function multiTitle(review: Review): string {
  return `Proposed by ${review.tool}: ${review.params.title}`;
}

/** The line of the proposed text to show first: its first change. */
function firstChangedLine(review: Review, file: FileView, proposed: string): number {
  const pending = file.hunks.find((h) => review.decisionOf(h) === undefined) ?? file.hunks[0];
  const span = pending && changedSpan(proposed, pending);
  if (span) {
    return span.start;
  }
  const { start } = minimalEdit(file.base, proposed);
  return proposed.slice(0, start).split('\n').length - 1;
}

/** " “Always” would allow …" where the ask offers an always, else nothing. */
function alwaysWords(review: Review): string {
  return review.alwaysCovers ? ` “Always” would allow ${plain(review.alwaysCovers)}.` : '';
}
