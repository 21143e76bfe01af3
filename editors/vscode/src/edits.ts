/**
 * The edit family. `workspace/applyEdit` is answered by vscode-languageclient
 * itself (VS Code applies the WorkspaceEdit to the buffer, keeping undo history,
 * and refuses a TextDocumentEdit whose version is not the buffer's). Here:
 * `editor/saveDocuments` saves the documents the sidecar just edited, and
 * `editor/openDocument` opens a document without showing it, so the language
 * servers start on it before an agent edits it.
 */
import * as vscode from 'vscode';
import { LanguageClient, ResponseError } from 'vscode-languageclient/node';
import { errorText, traceInfo, traceWarn } from './common/logging';
import { RequestFamily } from './common/server';

/** An LSP error code of our own: a client request that failed (LSP's RequestFailed). */
const REQUEST_FAILED = -32803;

export class EditsFamily implements RequestFamily {
  readonly flags = ['applyEdit', 'openDocument'] as const;

  register(client: LanguageClient): vscode.Disposable[] {
    return [
      client.onRequest('editor/saveDocuments', (params: SaveParams) => saveDocuments(params)),
      client.onRequest('editor/openDocument', (params: { uri?: unknown }) => openDocument(params)),
    ];
  }
}

/** `versions`: save a document only at that version (the user typed in it since: not saved). */
type SaveParams = { uris?: unknown; versions?: unknown };

/** Saves each open document; `saved` lists the ones now on disk as the buffer holds them. */
export async function saveDocuments(params: SaveParams): Promise<{ saved: string[] }> {
  const uris = Array.isArray(params?.uris)
    ? params.uris.filter((u): u is string => typeof u === 'string')
    : [];
  const versions = (params?.versions && typeof params.versions === 'object' ? params.versions : {}) as Record<
    string,
    unknown
  >;
  const saved: string[] = [];
  for (const uri of uris) {
    const document = findOpenDocument(vscode.Uri.parse(uri));
    const wanted = versions[uri];
    if (document && typeof wanted === 'number' && document.version !== wanted) {
      traceInfo(`editor/saveDocuments: ${uri} was typed in since the edit; left unsaved`);
      continue;
    }
    try {
      if (document && (await document.save())) {
        saved.push(uri);
      } else {
        traceWarn(`editor/saveDocuments: ${uri} ${document ? 'could not be saved' : 'is not open'}`);
      }
    } catch (error) {
      traceWarn(`editor/saveDocuments: saving ${uri} failed: ${errorText(error)}`);
    }
  }
  return { saved };
}

/** Opens (loads) a document without showing it in an editor. */
export async function openDocument(params: { uri?: unknown }): Promise<Record<string, never>> {
  if (typeof params?.uri !== 'string') {
    throw new ResponseError(-32602, 'editor/openDocument needs params.uri (a string)');
  }
  try {
    await vscode.workspace.openTextDocument(vscode.Uri.parse(params.uri));
  } catch (error) {
    throw new ResponseError(REQUEST_FAILED, `could not open ${params.uri}: ${errorText(error)}`);
  }
  return {};
}

/**
 * The open document for a URI. File URIs are compared by path, since the sidecar
 * and VS Code may percent-encode the same path differently.
 */
export function findOpenDocument(uri: vscode.Uri): vscode.TextDocument | undefined {
  const key = uri.toString();
  return vscode.workspace.textDocuments.find(
    (d) =>
      d.uri.toString() === key ||
      (d.uri.scheme === 'file' && uri.scheme === 'file' && d.uri.fsPath === uri.fsPath),
  );
}
