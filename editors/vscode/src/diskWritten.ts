/**
 * `editor/diskWritten {uris}`: the sidecar wrote the agent's change to these files on
 * disk while their buffers keep the user's unsaved changes (docs/protocol.md). VS Code
 * remembers the file's mtime from when it loaded or last saved the buffer, and its
 * next save refuses ("The content of the file is newer… Compare / Overwrite") once
 * the disk's mtime and size have moved. The extension API cannot update what VS Code
 * remembers, so the only way to honour "take the disk's new timestamp" is at the save
 * itself: just before VS Code writes the buffer (`onWillSaveTextDocument`), a file
 * that is still exactly as the sidecar left it gets back the mtime VS Code knows, and
 * VS Code's write then gives it a new one. A file someone else changed meanwhile is
 * left alone, so VS Code still warns about that. If no save follows, the sidecar's
 * mtime is put back.
 */
import * as fs from 'fs';
import * as vscode from 'vscode';
import { LanguageClient } from 'vscode-languageclient/node';
import { errorText, traceInfo, traceWarn } from './common/logging';
import { RequestFamily } from './common/server';
import { findOpenDocument } from './edits';

/** How long after a save starts its mtime may stay put back before it is restored. */
const RESTORE_AFTER_MS = 10000;

interface Written {
  /** The mtime VS Code knows (when it loaded or saved the buffer). */
  known: number;
  /** The file as the sidecar left it. */
  mtime: number;
  size: number;
  restore?: NodeJS.Timeout;
}

export class DiskWritesFamily implements RequestFamily, vscode.Disposable {
  readonly flags = [] as const;
  /** Per open file: the mtime when VS Code last read or wrote it. */
  private readonly known = new Map<string, number>();
  private readonly written = new Map<string, Written>();
  private readonly subscriptions: vscode.Disposable[];

  constructor() {
    for (const document of vscode.workspace.textDocuments) {
      if (!document.isDirty) this.remember(document);
    }
    this.subscriptions = [
      vscode.workspace.onDidOpenTextDocument((document) => this.remember(document)),
      vscode.workspace.onDidSaveTextDocument((document) => {
        const entry = this.written.get(key(document.uri));
        clearTimeout(entry?.restore);
        this.written.delete(key(document.uri));
        this.remember(document);
      }),
      // A clean buffer that changes was reloaded from disk: VS Code read the file again.
      vscode.workspace.onDidChangeTextDocument((event) => {
        if (event.contentChanges.length && !event.document.isDirty) this.remember(event.document);
      }),
      vscode.workspace.onDidCloseTextDocument((document) => this.known.delete(key(document.uri))),
      vscode.workspace.onWillSaveTextDocument((event) => {
        const entry = this.written.get(key(event.document.uri));
        if (entry) event.waitUntil(this.beforeSave(event.document.uri, entry));
      }),
    ];
  }

  register(client: LanguageClient): vscode.Disposable[] {
    return [
      client.onNotification('editor/diskWritten', (params: { uris?: unknown }) => {
        const uris = Array.isArray(params?.uris)
          ? params.uris.filter((u): u is string => typeof u === 'string')
          : [];
        for (const uri of uris) this.diskWritten(vscode.Uri.parse(uri));
      }),
    ];
  }

  dispose(): void {
    this.subscriptions.forEach((d) => d.dispose());
    for (const entry of this.written.values()) clearTimeout(entry.restore);
  }

  private diskWritten(uri: vscode.Uri): void {
    const document = findOpenDocument(uri);
    const known = this.known.get(key(uri));
    const stat = statOf(uri);
    if (!document || uri.scheme !== 'file' || known === undefined || !stat) {
      return;
    }
    traceInfo(`editor/diskWritten: ${vscode.workspace.asRelativePath(uri)} keeps its unsaved changes`);
    this.written.set(key(uri), { known, mtime: stat.mtimeMs, size: stat.size });
  }

  private async beforeSave(uri: vscode.Uri, entry: Written): Promise<void> {
    const stat = statOf(uri);
    if (!stat || stat.mtimeMs !== entry.mtime || stat.size !== entry.size) {
      this.written.delete(key(uri)); // changed by someone else since: VS Code should warn
      return;
    }
    try {
      // A millisecond earlier than what VS Code knows, so its "newer than" check passes.
      await fs.promises.utimes(uri.fsPath, stat.atime, (entry.known - 1) / 1000);
    } catch (error) {
      traceWarn(`Could not prepare ${uri.fsPath} for saving: ${errorText(error)}`);
      return;
    }
    clearTimeout(entry.restore);
    entry.restore = setTimeout(() => {
      // No save came (cancelled, or it failed): give the file its own mtime back.
      const now = statOf(uri);
      if (now && now.size === entry.size && Math.abs(now.mtimeMs - (entry.known - 1)) < 2) {
        fs.promises.utimes(uri.fsPath, now.atime, entry.mtime / 1000).catch(() => undefined);
      }
    }, RESTORE_AFTER_MS);
  }

  private remember(document: vscode.TextDocument): void {
    if (document.uri.scheme !== 'file') return;
    const stat = statOf(document.uri);
    if (stat) this.known.set(key(document.uri), stat.mtimeMs);
  }
}

function statOf(uri: vscode.Uri): fs.Stats | undefined {
  try {
    return fs.statSync(uri.fsPath);
  } catch {
    return undefined;
  }
}

function key(uri: vscode.Uri): string {
  return uri.scheme === 'file' ? uri.fsPath : uri.toString();
}
