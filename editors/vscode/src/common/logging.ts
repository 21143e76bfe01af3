/**
 * The `toolhost` log: one LogOutputChannel shared by the extension and the
 * language client (which also writes the sidecar's stderr and, with
 * `toolhost.trace.server`, the JSON-RPC trace into it).
 */
import * as vscode from 'vscode';

let channel: vscode.LogOutputChannel | undefined;

export function createLog(): vscode.LogOutputChannel {
  channel = vscode.window.createOutputChannel('toolhost', { log: true });
  return channel;
}

export function log(): vscode.LogOutputChannel {
  if (!channel) {
    throw new Error('toolhost: the log is used before activate() created it');
  }
  return channel;
}

export function traceInfo(message: string, ...args: unknown[]): void {
  channel?.info(message, ...args);
}

export function traceWarn(message: string, ...args: unknown[]): void {
  channel?.warn(message, ...args);
}

export function traceError(message: string | Error, ...args: unknown[]): void {
  channel?.error(message, ...args);
}

export function traceDebug(message: string, ...args: unknown[]): void {
  channel?.debug(message, ...args);
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
