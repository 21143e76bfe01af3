/**
 * `editor/lsp`: a read-only LSP request answered by VS Code's own language
 * features, through its provider commands (`vscode.executeDefinitionProvider`
 * and the rest), with the results converted to LSP JSON by the language client's
 * converters. Call hierarchy items handed out are remembered, because VS Code
 * answers incoming/outgoing calls only for items it produced itself.
 */
import * as vscode from 'vscode';
import {
  CallHierarchyIncomingCall,
  CallHierarchyItem as LspCallHierarchyItem,
  CallHierarchyOutgoingCall,
  DocumentSymbol as LspDocumentSymbol,
  Hover as LspHover,
  LanguageClient,
  Location as LspLocation,
  ResponseError,
  SymbolInformation as LspSymbolInformation,
} from 'vscode-languageclient/node';
import { RequestFamily } from './common/server';

const INVALID_PARAMS = -32602;
const METHOD_NOT_FOUND = -32601;
const REMEMBERED_ITEMS = 500;

interface LspRequest {
  method?: unknown;
  params?: any;
}

type Converters = Pick<LanguageClient, 'code2ProtocolConverter' | 'protocol2CodeConverter'>;

export class LspFamily implements RequestFamily {
  readonly flags = ['lsp'] as const;
  /** Call hierarchy items by the key put in their `data`, oldest first. */
  private readonly items = new Map<string, vscode.CallHierarchyItem>();
  private nextItem = 0;

  register(client: LanguageClient): vscode.Disposable[] {
    return [client.onRequest('editor/lsp', (request: LspRequest) => this.answer(client, request))];
  }

  async answer(client: Converters, request: LspRequest): Promise<unknown> {
    const { method, params } = request ?? {};
    if (typeof method !== 'string' || !params || typeof params !== 'object') {
      throw new ResponseError(INVALID_PARAMS, 'editor/lsp needs { method: string, params: object }');
    }
    const c2p = client.code2ProtocolConverter;
    switch (method) {
      case 'textDocument/definition':
        return locations(c2p, await this.atPosition('vscode.executeDefinitionProvider', client, params));
      case 'textDocument/implementation':
        return locations(c2p, await this.atPosition('vscode.executeImplementationProvider', client, params));
      case 'textDocument/references':
        return locations(c2p, await this.atPosition('vscode.executeReferenceProvider', client, params));
      case 'textDocument/hover':
        return hover(
          c2p,
          await this.atPosition<vscode.Hover[]>('vscode.executeHoverProvider', client, params),
        );
      case 'textDocument/documentSymbol': {
        const uri = await openDocument(client, params);
        const symbols = await vscode.commands.executeCommand<
          (vscode.DocumentSymbol | vscode.SymbolInformation)[] | undefined
        >('vscode.executeDocumentSymbolProvider', uri);
        return (symbols ?? []).map((s) => documentSymbol(c2p, s));
      }
      case 'workspace/symbol': {
        const query = typeof params.query === 'string' ? params.query : '';
        const symbols = await vscode.commands.executeCommand<vscode.SymbolInformation[] | undefined>(
          'vscode.executeWorkspaceSymbolProvider',
          query,
        );
        return (symbols ?? []).map((s) => symbolInformation(c2p, s));
      }
      case 'textDocument/prepareCallHierarchy': {
        const items = await this.atPosition<vscode.CallHierarchyItem[]>(
          'vscode.prepareCallHierarchy',
          client,
          params,
        );
        return (items ?? []).map((item) => this.remember(c2p, item));
      }
      case 'callHierarchy/incomingCalls': {
        const item = await this.recall(client, params.item);
        const calls = await vscode.commands.executeCommand<vscode.CallHierarchyIncomingCall[] | undefined>(
          'vscode.provideIncomingCalls',
          item,
        );
        return (calls ?? []).map((call): CallHierarchyIncomingCall => ({
          from: this.remember(c2p, call.from),
          fromRanges: call.fromRanges.map((r) => c2p.asRange(r)),
        }));
      }
      case 'callHierarchy/outgoingCalls': {
        const item = await this.recall(client, params.item);
        const calls = await vscode.commands.executeCommand<vscode.CallHierarchyOutgoingCall[] | undefined>(
          'vscode.provideOutgoingCalls',
          item,
        );
        return (calls ?? []).map((call): CallHierarchyOutgoingCall => ({
          to: this.remember(c2p, call.to),
          fromRanges: call.fromRanges.map((r) => c2p.asRange(r)),
        }));
      }
      default:
        throw new ResponseError(METHOD_NOT_FOUND, `editor/lsp does not answer ${method}`);
    }
  }

  private async atPosition<T = (vscode.Location | vscode.LocationLink)[]>(
    command: string,
    client: Converters,
    params: any,
  ): Promise<T | undefined> {
    const uri = await openDocument(client, params);
    if (typeof params.position?.line !== 'number' || typeof params.position?.character !== 'number') {
      throw new ResponseError(INVALID_PARAMS, 'params.position must be { line, character }');
    }
    const position = client.protocol2CodeConverter.asPosition(params.position);
    return vscode.commands.executeCommand<T>(command, uri, position);
  }

  private remember(
    c2p: LanguageClient['code2ProtocolConverter'],
    item: vscode.CallHierarchyItem,
  ): LspCallHierarchyItem {
    const id = `toolhost-${++this.nextItem}`;
    this.items.set(id, item);
    if (this.items.size > REMEMBERED_ITEMS) {
      this.items.delete(this.items.keys().next().value!);
    }
    return { ...c2p.asCallHierarchyItem(item), data: { toolhost: id } };
  }

  /** The VS Code item behind an LSP item: remembered, or prepared again at its position. */
  private async recall(client: Converters, raw: any): Promise<vscode.CallHierarchyItem> {
    const id = raw?.data?.toolhost;
    const remembered = typeof id === 'string' ? this.items.get(id) : undefined;
    if (remembered) {
      return remembered;
    }
    if (typeof raw?.uri !== 'string' || !raw?.selectionRange?.start) {
      throw new ResponseError(INVALID_PARAMS, 'params.item must be a CallHierarchyItem');
    }
    const items = await this.atPosition<vscode.CallHierarchyItem[]>('vscode.prepareCallHierarchy', client, {
      textDocument: { uri: raw.uri },
      position: raw.selectionRange.start,
    });
    const found = items?.find((i) => i.name === raw.name) ?? items?.[0];
    if (!found) {
      throw new ResponseError(INVALID_PARAMS, `no call hierarchy item at ${raw.uri} for ${raw.name}`);
    }
    return found;
  }
}

/** Loads the document (which starts its language's extensions); its URI. */
async function openDocument(client: Converters, params: any): Promise<vscode.Uri> {
  const raw = params.textDocument?.uri;
  if (typeof raw !== 'string') {
    throw new ResponseError(INVALID_PARAMS, 'params.textDocument.uri must be a string');
  }
  const uri = client.protocol2CodeConverter.asUri(raw);
  await vscode.workspace.openTextDocument(uri);
  return uri;
}

function locations(
  c2p: LanguageClient['code2ProtocolConverter'],
  found: (vscode.Location | vscode.LocationLink)[] | undefined,
): LspLocation[] {
  return (found ?? []).map((item) =>
    'targetUri' in item
      ? { uri: c2p.asUri(item.targetUri), range: c2p.asRange(item.targetSelectionRange ?? item.targetRange) }
      : c2p.asLocation(item),
  );
}

/** The hovers of every provider, merged into one markdown hover (null when none). */
function hover(
  c2p: LanguageClient['code2ProtocolConverter'],
  hovers: vscode.Hover[] | undefined,
): LspHover | null {
  const parts: string[] = [];
  let range: vscode.Range | undefined;
  for (const h of hovers ?? []) {
    range ??= h.range;
    for (const content of h.contents) {
      if (typeof content === 'string') {
        parts.push(content);
      } else if ('language' in content) {
        parts.push('```' + content.language + '\n' + content.value + '\n```');
      } else {
        parts.push(content.value);
      }
    }
  }
  if (!parts.length) {
    return null;
  }
  const result: LspHover = { contents: { kind: 'markdown', value: parts.join('\n\n---\n\n') } };
  if (range) {
    result.range = c2p.asRange(range);
  }
  return result;
}

function documentSymbol(
  c2p: LanguageClient['code2ProtocolConverter'],
  symbol: vscode.DocumentSymbol | vscode.SymbolInformation,
): LspDocumentSymbol | LspSymbolInformation {
  if (!('selectionRange' in symbol)) {
    return symbolInformation(c2p, symbol);
  }
  const result: LspDocumentSymbol = {
    name: symbol.name,
    kind: c2p.asSymbolKind(symbol.kind),
    range: c2p.asRange(symbol.range),
    selectionRange: c2p.asRange(symbol.selectionRange),
  };
  if (symbol.detail) {
    result.detail = symbol.detail;
  }
  if (symbol.tags?.length) {
    result.tags = c2p.asSymbolTags(symbol.tags);
  }
  if (symbol.children?.length) {
    result.children = symbol.children.map((child) => documentSymbol(c2p, child) as LspDocumentSymbol);
  }
  return result;
}

function symbolInformation(
  c2p: LanguageClient['code2ProtocolConverter'],
  symbol: vscode.SymbolInformation,
): LspSymbolInformation {
  const result: LspSymbolInformation = {
    name: symbol.name,
    kind: c2p.asSymbolKind(symbol.kind),
    location: c2p.asLocation(symbol.location),
  };
  if (symbol.containerName) {
    result.containerName = symbol.containerName;
  }
  if (symbol.tags?.length) {
    result.tags = c2p.asSymbolTags(symbol.tags);
  }
  return result;
}
