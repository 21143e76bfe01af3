/**
 * `editor/diagnostics`: what VS Code's language servers report for some files,
 * as LSP diagnostics, once they have reported on each file's latest change (or
 * after `waitMs`). toolhost's own diagnostics collection is left out.
 *
 * "Reported on the latest change" is tracked per URI: a sequence number for the
 * last text change and for the last `onDidChangeDiagnostics` that named it. A file
 * is settled when its report is newer than its change, or, for a file not changed
 * since this window started, when it has any report or diagnostics at all.
 *
 * Waiting only makes sense where something reports: a file that no tab shows, in a
 * language seen reporting, is opened in a background tab first (language servers check open documents, and those
 * that use pull diagnostics, like VS Code's JSON and CSS servers, only documents in
 * tabs), and a file whose language
 * has never had diagnostics reported (plain text, or a language with no server
 * installed) is settled at once, so edits to such files never wait. The languages
 * seen reporting are remembered across windows (global state), so the first edit
 * after a restart waits for a language server that is still starting.
 */
import * as vscode from 'vscode';
import { LanguageClient } from 'vscode-languageclient/node';
import type { Diagnostic as LspDiagnostic } from 'vscode-languageclient/node';
import { MAX_DIAGNOSTICS_WAIT_MS } from './common/constants';
import { RequestFamily } from './common/server';
import { findOpenDocument } from './edits';
import { getSettings } from './common/settings';

const REPORTING_LANGUAGES_KEY = 'toolhost.reportingLanguages';

interface DiagnosticsParams {
  uris?: unknown;
  waitMs?: unknown;
}

export interface DiagnosticsResult {
  items: { uri: string; diagnostics: LspDiagnostic[] }[];
}

export class DiagnosticsFamily implements RequestFamily, vscode.Disposable {
  readonly flags = ['diagnostics'] as const;
  private sequence = 0;
  private readonly changed = new Map<string, number>();
  private readonly reported = new Map<string, number>();
  /** Languages whose documents have had diagnostics reported in this window. */
  private readonly reportingLanguages = new Set<string>();
  private readonly reports = new vscode.EventEmitter<void>();
  private readonly subscriptions: vscode.Disposable[];

  constructor(private readonly memory?: vscode.Memento) {
    for (const language of memory?.get<string[]>(REPORTING_LANGUAGES_KEY) ?? []) {
      this.reportingLanguages.add(language);
    }
    this.subscriptions = [
      // A document that opens gets a fresh report, like one that changes.
      vscode.workspace.onDidOpenTextDocument((document) => {
        this.changed.set(key(document.uri), ++this.sequence);
      }),
      vscode.workspace.onDidChangeTextDocument((event) => {
        if (event.contentChanges.length) {
          this.changed.set(key(event.document.uri), ++this.sequence);
        }
      }),
      vscode.languages.onDidChangeDiagnostics((event) => {
        for (const uri of event.uris) {
          this.reported.set(key(uri), ++this.sequence);
          const language = findOpenDocument(uri)?.languageId;
          if (language && !this.reportingLanguages.has(language)) {
            this.reportingLanguages.add(language);
            void this.memory?.update(REPORTING_LANGUAGES_KEY, [...this.reportingLanguages]);
          }
        }
        this.reports.fire();
      }),
      this.reports,
    ];
  }

  register(client: LanguageClient): vscode.Disposable[] {
    return [
      client.onRequest('editor/diagnostics', (params: DiagnosticsParams, token) =>
        this.diagnostics(client, params, token),
      ),
    ];
  }

  async diagnostics(
    client: LanguageClient,
    params: DiagnosticsParams,
    token?: vscode.CancellationToken,
  ): Promise<DiagnosticsResult> {
    const uris = Array.isArray(params?.uris)
      ? params.uris.filter((u): u is string => typeof u === 'string')
      : [];
    const requested = typeof params?.waitMs === 'number' ? params.waitMs : getSettings().diagnosticsWaitMs;
    const waitMs = Math.max(0, Math.min(requested, MAX_DIAGNOSTICS_WAIT_MS));
    const parsed = uris.map((uri) => vscode.Uri.parse(uri));
    const documents = await Promise.all(
      parsed.map((uri) => openQuietly(uri, (language) => this.reportingLanguages.has(language))),
    );
    const expected = parsed.filter((_, i) => {
      const language = documents[i]?.languageId;
      return language !== undefined && this.reportingLanguages.has(language);
    });
    await this.settled(expected, waitMs, token);
    const own = client.diagnostics;
    return {
      items: parsed.map((uri, i) => {
        const mine = new Set(own?.get(uri) ?? []);
        const theirs = vscode.languages
          .getDiagnostics(uri)
          .filter((d) => !mine.has(d) && d.source !== 'toolhost');
        return {
          uri: uris[i],
          diagnostics: theirs.map((d) => client.code2ProtocolConverter.asDiagnostic(d)),
        };
      }),
    };
  }

  dispose(): void {
    this.subscriptions.forEach((d) => d.dispose());
  }

  private isSettled(uri: vscode.Uri): boolean {
    const changed = this.changed.get(key(uri));
    const reported = this.reported.get(key(uri));
    if (changed === undefined) {
      return reported !== undefined || vscode.languages.getDiagnostics(uri).length > 0;
    }
    return reported !== undefined && reported > changed;
  }

  /** Resolves when every URI is settled, after `waitMs`, or on cancellation. */
  private settled(uris: vscode.Uri[], waitMs: number, token?: vscode.CancellationToken): Promise<void> {
    if (uris.every((uri) => this.isSettled(uri)) || waitMs === 0) {
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        listener.dispose();
        cancel?.dispose();
        resolve();
      };
      const timer = setTimeout(done, waitMs);
      const listener = this.reports.event(() => {
        if (uris.every((uri) => this.isSettled(uri))) {
          done();
        }
      });
      const cancel = token?.onCancellationRequested(done);
    });
  }
}

/**
 * The document, loaded and in a tab: opened as a background tab (not focused, not
 * replacing the preview tab) when no tab shows it. Undefined when it cannot be opened.
 */
async function openQuietly(
  uri: vscode.Uri,
  reports: (language: string) => boolean,
): Promise<vscode.TextDocument | undefined> {
  let document = findOpenDocument(uri);
  try {
    document ??= await vscode.workspace.openTextDocument(uri);
  } catch {
    return undefined;
  }
  // Only where a language server is known to report: no tab for a plain text file.
  if (document.uri.scheme === 'file' && reports(document.languageId) && !inTab(document.uri)) {
    try {
      // `background` (VS Code 1.100's TextDocumentShowOptions, not in the 1.95 typings)
      // opens the tab inactive; an older VS Code opens it active, without focus.
      const options = { background: true, preserveFocus: true, preview: false };
      await vscode.commands.executeCommand('vscode.open', document.uri, options);
    } catch {
      // Best effort: diagnostics from push servers still arrive.
    }
  }
  return document;
}

function inTab(uri: vscode.Uri): boolean {
  return vscode.window.tabGroups.all.some((group) =>
    group.tabs.some((tab) => {
      const input = tab.input;
      const shown =
        input instanceof vscode.TabInputText
          ? input.uri
          : input instanceof vscode.TabInputTextDiff
            ? input.modified
            : undefined;
      return shown?.scheme === 'file' && shown.fsPath === uri.fsPath;
    }),
  );
}

function key(uri: vscode.Uri): string {
  return uri.scheme === 'file' ? `file:${uri.fsPath}` : uri.toString();
}
