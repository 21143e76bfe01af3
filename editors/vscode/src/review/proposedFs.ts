/**
 * The `toolhost-proposed:` file system: the proposed side of each review's diff, in
 * memory. A file system rather than a read-only content provider so the person can
 * correct the proposal in the diff editor before accepting it; saving it (Ctrl+S)
 * only writes here. `toolhost-proposed:/<relative path>?<review id>/<after|before>`
 * keeps the file's name, so the document gets the file's language.
 */
import * as vscode from 'vscode';
import { PROPOSED_SCHEME } from '../common/constants';

export class ProposedFiles implements vscode.FileSystemProvider, vscode.Disposable {
  private readonly files = new Map<string, { data: Uint8Array; mtime: number }>();
  private readonly changed = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  readonly onDidChangeFile = this.changed.event;
  private readonly registration = vscode.workspace.registerFileSystemProvider(PROPOSED_SCHEME, this, {
    isCaseSensitive: true,
  });

  static uri(review: string, file: vscode.Uri, side: 'before' | 'after'): vscode.Uri {
    // The path is the file's own (relative to the workspace where it is inside it), so
    // the tab, the breadcrumbs and the language read as the file's; the query says whose.
    const relative = vscode.workspace.asRelativePath(file, false);
    const shown = relative === file.fsPath ? file.path : `/${relative.replace(/\\/g, '/')}`;
    return vscode.Uri.from({ scheme: PROPOSED_SCHEME, path: shown, query: `${review}/${side}` });
  }

  /** The review id a proposed document belongs to. */
  static reviewOf(uri: vscode.Uri): string | undefined {
    return uri.scheme === PROPOSED_SCHEME ? uri.query.split('/')[0] || undefined : undefined;
  }

  set(uri: vscode.Uri, text: string): void {
    const existed = this.files.has(uri.toString());
    this.files.set(uri.toString(), { data: Buffer.from(text, 'utf8'), mtime: Date.now() });
    this.changed.fire([
      { type: existed ? vscode.FileChangeType.Changed : vscode.FileChangeType.Created, uri },
    ]);
  }

  /** The proposed text as the person sees it: the open document (edited or not), else the store. */
  text(uri: vscode.Uri): string | undefined {
    const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
    if (open) {
      return open.getText();
    }
    const file = this.files.get(uri.toString());
    return file ? Buffer.from(file.data).toString('utf8') : undefined;
  }

  delete(uri: vscode.Uri): void {
    if (this.files.delete(uri.toString())) {
      this.changed.fire([{ type: vscode.FileChangeType.Deleted, uri }]);
    }
  }

  // --- vscode.FileSystemProvider ---

  watch(): vscode.Disposable {
    return new vscode.Disposable(() => undefined);
  }

  stat(uri: vscode.Uri): vscode.FileStat {
    const file = this.files.get(uri.toString());
    if (!file) {
      throw vscode.FileSystemError.FileNotFound(uri);
    }
    return { type: vscode.FileType.File, ctime: file.mtime, mtime: file.mtime, size: file.data.byteLength };
  }

  readDirectory(): [string, vscode.FileType][] {
    return [];
  }

  createDirectory(): void {
    throw vscode.FileSystemError.NoPermissions('proposed changes have no folders');
  }

  readFile(uri: vscode.Uri): Uint8Array {
    const file = this.files.get(uri.toString());
    if (!file) {
      throw vscode.FileSystemError.FileNotFound(uri);
    }
    return file.data;
  }

  writeFile(uri: vscode.Uri, content: Uint8Array): void {
    if (!this.files.has(uri.toString())) {
      // Only the review's own documents exist here; "Save As" into this scheme does not.
      throw vscode.FileSystemError.NoPermissions(uri);
    }
    this.files.set(uri.toString(), { data: content, mtime: Date.now() });
    this.changed.fire([{ type: vscode.FileChangeType.Changed, uri }]);
  }

  rename(): void {
    throw vscode.FileSystemError.NoPermissions('proposed changes cannot be renamed');
  }

  dispose(): void {
    this.registration.dispose();
    this.changed.dispose();
    this.files.clear();
  }
}
