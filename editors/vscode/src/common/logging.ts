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

/** A sidecar log line as its stderr handler writes it (server/logs.py FORMAT). */
const SIDECAR_RECORD = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR|CRITICAL) /;
/** The same record as window/logMessage, as the client writes it: "[Warn  - 1:02:03 PM] …". */
const FORWARDED_RECORD = /^\[(?:Trace|Debug|Info|Warn|Error)\s*- [^\]]*\] /;
/** How long one record's two copies (stderr, window/logMessage) may lie apart. */
const PAIR_MS = 10000;

/** Words seen from one source lately, each taken once by its copy from the other. */
class Recent {
  private readonly seen = new Map<string, number[]>();

  add(words: string): void {
    const now = Date.now();
    const times = (this.seen.get(words) ?? []).filter((t) => now - t < PAIR_MS);
    this.seen.set(words, [...times, now]);
    if (this.seen.size > 500) this.seen.delete(this.seen.keys().next().value as string);
  }

  /** True (and forgotten) when `words` came from the other source lately. */
  take(words: string): boolean {
    const now = Date.now();
    const times = (this.seen.get(words) ?? []).filter((t) => now - t < PAIR_MS);
    if (times.length === 0) {
      this.seen.delete(words);
      return false;
    }
    times.shift();
    if (times.length) this.seen.set(words, times);
    else this.seen.delete(words);
    return true;
  }
}

/**
 * The channel the language client writes into. Once the sidecar is initialized it
 * sends every log record as window/logMessage (with its level), so the same record on
 * its stderr is left out: each line shows once. While it stops (the client no longer
 * counts it initialized, yet its last records still come both ways) the two copies of
 * a record are paired by their words and shown once. Anything else on stderr (a
 * traceback, a record from before initialize) is kept. The client reports every exit
 * of the process as an error; exit code 0 is a clean stop, said as such.
 */
export function clientChannel(
  channel: vscode.LogOutputChannel,
  forwarded: () => boolean,
): vscode.LogOutputChannel {
  const fromStderr = new Recent();
  const fromMessages = new Recent();
  const append = (text: string): void => {
    const kept = text.split(/(?<=\n)/).filter((line) => {
      if (!SIDECAR_RECORD.test(line)) return true;
      const words = line.replace(SIDECAR_RECORD, '').trim();
      if (forwarded() || fromMessages.take(words)) return false;
      fromStderr.add(words);
      return true;
    });
    if (kept.length > 0) {
      channel.append(kept.join(''));
    }
  };
  // The client writes its own messages as "[Error - 1:02:03 PM] ..." lines.
  const appendLine = (line: string): void => {
    if (/^\[Error\s*- [^\]]*\] Server process exited with code 0\.$/.test(line)) {
      channel.info('The sidecar stopped (exit code 0).');
      return;
    }
    if (FORWARDED_RECORD.test(line)) {
      const words = line.replace(FORWARDED_RECORD, '').trim();
      if (fromStderr.take(words)) return; // shown already, from stderr
      fromMessages.add(words);
    }
    channel.appendLine(line);
  };
  return new Proxy(channel, {
    get(target, property, receiver) {
      if (property === 'append') {
        return append;
      }
      if (property === 'appendLine') {
        return appendLine;
      }
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
