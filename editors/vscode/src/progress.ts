/**
 * A running tool call as VS Code progress: `$/progress` for the call's
 * `workDoneToken` (begin, report, end) and `tools/update` notifications both feed
 * one `window.withProgress` per call, shown in the status bar; it ends when the
 * call returns.
 */
import * as vscode from 'vscode';
import { LanguageClient, WorkDoneProgress } from 'vscode-languageclient/node';
import { traceDebug } from './common/logging';
import { RequestFamily } from './common/server';

interface ToolUpdate {
  sessionID?: string;
  callID?: string;
  messageID?: string;
  title?: string;
  metadata?: Record<string, unknown>;
}

interface CallProgress {
  report(message: string): void;
  end(): void;
  /** Set once a `tools/update` arrived: its message is richer than `$/progress`'s title. */
  updated?: boolean;
}

export class ProgressFamily implements RequestFamily {
  readonly flags = [] as const;
  private readonly calls = new Map<string, CallProgress>();

  register(client: LanguageClient): vscode.Disposable[] {
    return [
      client.onNotification('tools/update', (params: ToolUpdate) => {
        const call = params.callID ? this.calls.get(params.callID) : undefined;
        const message = updateMessage(params);
        if (call && message) {
          call.updated = true;
          call.report(message);
        } else if (!call) {
          traceDebug(`tools/update for a call this window did not start: ${params.callID}`);
        }
      }),
    ];
  }

  /**
   * Shows progress for one `tools/execute`; returns the `workDoneToken` to send with
   * it and a function to call once the call has returned.
   */
  track(client: LanguageClient, callID: string, tool: string): { token: string; done(): void } {
    const token = `toolhost/${callID}`;
    const call = startProgress(`toolhost: ${tool}`);
    this.calls.set(callID, call);
    const subscription = client.onProgress(WorkDoneProgress.type, token, (value) => {
      if ((value.kind === 'begin' || value.kind === 'report') && value.message && !call.updated) {
        call.report(value.message);
      }
    });
    return {
      token,
      done: () => {
        subscription.dispose();
        this.calls.delete(callID);
        call.end();
      },
    };
  }
}

function startProgress(title: string): CallProgress {
  let finish: () => void = () => undefined;
  let progress: vscode.Progress<{ message?: string }> | undefined;
  let ended = false;
  const pending: string[] = [];
  void vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title }, (p) => {
    progress = p;
    pending.splice(0).forEach((message) => p.report({ message }));
    return new Promise<void>((resolve) => {
      finish = resolve;
      if (ended) {
        resolve();
      }
    });
  });
  return {
    report(message: string) {
      if (progress) {
        progress.report({ message });
      } else {
        pending.push(message);
      }
    },
    end() {
      ended = true;
      finish();
    },
  };
}

/** What a `tools/update` says in one line: its title, else the last line of output;
 * a sub-agent's (`task`) says what it is doing now. */
export function updateMessage(update: ToolUpdate): string | undefined {
  const calls = update.metadata?.calls;
  if (Array.isArray(calls) && calls.length) {
    const last = calls[calls.length - 1] as { title?: string; status?: string };
    const done = calls.filter((c) => (c as { status?: string }).status !== 'running').length;
    const now = last.status === 'running' ? last.title : `${last.title} (${last.status})`;
    return `${update.title ?? 'task'}: ${now} [${done}/${calls.length} calls done]`;
  }
  const output = update.metadata?.output;
  if (typeof output === 'string' && output.trim()) {
    const last = output.trimEnd().split('\n').at(-1) ?? '';
    return last.length > 80 ? `${last.slice(0, 77)}...` : last;
  }
  return update.title || undefined;
}
