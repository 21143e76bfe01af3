/**
 * Running tool calls, for people. A status bar item shows the call that runs and the
 * latest line of its output, and stops it on click (`$/cancelRequest`, which ends a
 * command and every process it started); with several running, the click asks which.
 *
 * The latest line comes from `tools/update` (`metadata.output`, a command's output so
 * far). The `$/progress` reports for the call's `workDoneToken` carry only its title,
 * so they are shown only until the first output arrives.
 */
import * as vscode from 'vscode';
import { LanguageClient, WorkDoneProgress } from 'vscode-languageclient/node';
import { COMMANDS } from './common/constants';
import { traceDebug, traceInfo } from './common/logging';
import { RequestFamily } from './common/server';

interface ToolUpdate {
  sessionID?: string;
  callID?: string;
  messageID?: string;
  title?: string;
  metadata?: Record<string, unknown>;
}

export interface RunningCall {
  callID: string;
  tool: string;
  /** The call's title (a command's description), once the sidecar has sent one. */
  title?: string;
  /** The latest line of output, or of progress. */
  latest?: string;
  started: number;
  /** Whether output (not only the title) has arrived. */
  hasOutput: boolean;
  stop(): void;
  report?(line: string): void;
}

export interface TrackOptions {
  /** Stops the call (the caller cancels its request). */
  stop(): void;
  /** Also told every new latest line (the Run Tool notification shows it). */
  report?(line: string): void;
}

export class ProgressFamily implements RequestFamily, vscode.Disposable {
  readonly flags = [] as const;
  private readonly calls = new Map<string, RunningCall>();
  private readonly item = vscode.window.createStatusBarItem(
    'toolhost.calls',
    vscode.StatusBarAlignment.Left,
    999,
  );
  private readonly changed = new vscode.EventEmitter<void>();
  /** Fires when a call starts, reports, or ends. */
  readonly onDidChange = this.changed.event;
  private readonly command: vscode.Disposable;

  /** `waiting(callID)`: the title of the review the call waits for, if it does. */
  constructor(private readonly waiting: (callID: string) => string | undefined = () => undefined) {
    this.item.name = 'toolhost: running tool call';
    this.item.command = { title: 'Stop', command: COMMANDS.stopCall };
    this.command = vscode.commands.registerCommand(COMMANDS.stopCall, (callID?: string) => this.stop(callID));
  }

  get running(): RunningCall[] {
    return [...this.calls.values()];
  }

  /** What the item shows; for tests. */
  get text(): string {
    return this.item.text;
  }

  register(client: LanguageClient): vscode.Disposable[] {
    return [
      client.onNotification('tools/update', (params: ToolUpdate) => {
        const call = params.callID ? this.calls.get(params.callID) : undefined;
        if (!call) {
          traceDebug(`tools/update for a call this window did not start: ${params.callID}`);
          return;
        }
        if (params.title) call.title = params.title;
        const line = taskLine(params) ?? lastLine(params.metadata?.output);
        if (line !== undefined) {
          call.hasOutput = true;
          this.setLatest(call, line);
        } else {
          this.render();
        }
      }),
    ];
  }

  /**
   * Shows one `tools/execute` while it runs; returns the `workDoneToken` to send with
   * it and a function to call once the call has returned.
   */
  track(
    client: LanguageClient,
    callID: string,
    tool: string,
    options: TrackOptions,
  ): { token: string; done(): void } {
    const token = `toolhost/${callID}`;
    const call: RunningCall = {
      callID,
      tool,
      started: Date.now(),
      hasOutput: false,
      stop: options.stop,
      report: options.report,
    };
    this.calls.set(callID, call);
    const subscription = client.onProgress(WorkDoneProgress.type, token, (value) => {
      if (value.kind === 'begin' && value.title) call.title ??= value.title;
      const message = value.kind !== 'end' ? value.message : undefined;
      if (message && !call.hasOutput) this.setLatest(call, message);
    });
    this.render();
    return {
      token,
      done: () => {
        subscription.dispose();
        this.calls.delete(callID);
        this.render();
      },
    };
  }

  /** Refreshes the item (a review started or ended for a running call). */
  refresh(): void {
    this.render();
  }

  /** Stops a call: the given one, the only one, or the one picked. */
  async stop(callID?: string): Promise<void> {
    let call = callID ? this.calls.get(callID) : undefined;
    if (!call && this.calls.size === 1) {
      call = this.running[0];
    } else if (!call && this.calls.size > 1) {
      const picked = await vscode.window.showQuickPick(
        this.running.map((c) => {
          const review = this.waiting(c.callID);
          return {
            label: `$(debug-stop) ${c.tool}: ${review ?? c.title ?? c.tool}`,
            description: review ? 'waiting for your review' : c.latest,
            call: c,
          };
        }),
        { title: 'toolhost: stop which call?' },
      );
      call = picked?.call;
    }
    if (call && this.calls.has(call.callID)) {
      traceInfo(`Stopping ${call.tool} (${call.callID}) at the user's request`);
      call.stop();
    }
  }

  dispose(): void {
    this.command.dispose();
    this.item.dispose();
    this.changed.dispose();
  }

  private setLatest(call: RunningCall, line: string): void {
    call.latest = line;
    call.report?.(line);
    this.render();
  }

  private render(): void {
    this.changed.fire();
    const calls = this.running;
    void vscode.commands.executeCommand('setContext', 'toolhost.callsRunning', calls.length > 0);
    if (!calls.length) {
      this.item.hide();
      return;
    }
    const newest = calls[calls.length - 1];
    const latest = this.waiting(newest.callID) ? 'waiting for your review' : newest.latest;
    const more = calls.length > 1 ? `${calls.length} calls · ` : '';
    this.item.text = `$(loading~spin) ${more}${newest.tool}${latest ? `: ${latest}` : ''}`;
    const tip = new vscode.MarkdownString();
    for (const c of calls) {
      tip.appendMarkdown(
        `- **${c.tool}** ${c.title ? `— ${c.title}` : ''}${c.latest ? `: \`${c.latest.replace(/`/g, "'")}\`` : ''}\n`,
      );
    }
    tip.appendMarkdown(`\nClick to stop ${calls.length > 1 ? 'one of them' : 'it'}.`);
    this.item.tooltip = tip;
    this.item.show();
  }
}

/** What a running sub-agent (`task`) does now: its task, latest call and how many are done;
 * undefined for any other tool. */
export function taskLine(update: ToolUpdate): string | undefined {
  const calls = update.metadata?.calls;
  if (!Array.isArray(calls) || !calls.length) {
    return undefined;
  }
  const last = calls[calls.length - 1] as { title?: string; status?: string };
  const done = calls.filter((c) => (c as { status?: string }).status !== 'running').length;
  const now = last.status === 'running' ? last.title : `${last.title} (${last.status})`;
  return `${update.title ?? 'task'}: ${now} [${done}/${calls.length} calls done]`;
}

/** The last non-empty line of a command's output so far, shortened; undefined when none. */
export function lastLine(output: unknown): string | undefined {
  if (typeof output !== 'string' || !output.trim()) {
    return undefined;
  }
  const last = output.trimEnd().split(/\r?\n/).at(-1)?.trim() ?? '';
  return last.length > 80 ? `${last.slice(0, 77)}...` : last;
}
