/**
 * The API other extensions (agent panels) reach with
 * `vscode.extensions.getExtension('toolhost.toolhost').exports`:
 * `listTools(options?)` and `executeTool(tool, args, options?)`, the ToolResult of
 * PROTOCOL.md. Both wait for the sidecar to start.
 */
import { randomUUID } from 'crypto';
import * as vscode from 'vscode';
import { ResponseError } from 'vscode-languageclient/node';
import { ServerManager } from './common/server';
import { StatusItem } from './common/status';
import { ProgressFamily } from './progress';
import { isOffered, restrictedResult } from './trust';
import { ModelRef, ToolInfo, ToolResult } from './types';

/** JSON-RPC's RequestCancelled: the sidecar's answer to `$/cancelRequest`. */
const REQUEST_CANCELLED = -32800;

export interface ListToolsOptions {
  model?: ModelRef;
  agent?: string;
  sessionID?: string;
}

export interface ExecuteToolOptions {
  sessionID?: string;
  messageID?: string;
  callID?: string;
  agent?: string;
  model?: ModelRef;
  /** The agent's turn (one user message): `Toolhost: Undo Last Agent Turn` undoes it whole. */
  turnID?: string;
  /** Cancelling it cancels the call (`$/cancelRequest`); the promise then rejects. */
  token?: vscode.CancellationToken;
}

export interface ToolhostApi {
  /** The tools offered (in Restricted Mode: only the read-only ones). */
  listTools(options?: ListToolsOptions): Promise<ToolInfo[]>;
  /** Runs a tool. Tool failures are results with `isError: true`, never rejections. */
  executeTool(tool: string, args: Record<string, unknown>, options?: ExecuteToolOptions): Promise<ToolResult>;
  /** Fires when the catalogue may have changed (custom tools, config, a restart). */
  readonly onDidChangeTools: vscode.Event<void>;
}

export class ToolCaller implements ToolhostApi {
  readonly onDidChangeTools: vscode.Event<void>;
  private catalogue: Promise<ToolInfo[]> | undefined;

  constructor(
    private readonly server: ServerManager,
    private readonly progress: ProgressFamily,
    private readonly status: StatusItem,
  ) {
    this.onDidChangeTools = server.onDidChangeTools;
    server.onDidChangeTools(() => (this.catalogue = undefined));
  }

  async listTools(options: ListToolsOptions = {}): Promise<ToolInfo[]> {
    const client = await this.server.ready();
    const result = await client.sendRequest<{ tools: ToolInfo[] }>('tools/list', clean(options));
    const tools = result.tools.filter(isOffered);
    if (!options.model && !options.agent) {
      this.status.setToolCount(tools.length);
    }
    return tools;
  }

  async executeTool(
    tool: string,
    args: Record<string, unknown>,
    options: ExecuteToolOptions = {},
    internal: { report?(line: string): void } = {},
  ): Promise<ToolResult> {
    if (typeof tool !== 'string' || !tool) {
      throw new TypeError('toolhost.executeTool: tool must be a tool id such as "read"');
    }
    if (!args || typeof args !== 'object' || Array.isArray(args)) {
      throw new TypeError('toolhost.executeTool: args must be an object of named arguments');
    }
    const client = await this.server.ready();
    if (!vscode.workspace.isTrusted && !(await this.isReadOnly(tool))) {
      return restrictedResult(tool);
    }
    const { token, ...rest } = options;
    const callID = options.callID ?? `call_${randomUUID().replace(/-/g, '').slice(0, 20)}`;
    // One token for the request: the caller's cancels it, and so does a person's Stop.
    const cancel = new vscode.CancellationTokenSource();
    const fromCaller = token?.onCancellationRequested(() => cancel.cancel());
    if (token?.isCancellationRequested) cancel.cancel();
    let stoppedByUser = false;
    const tracked = this.progress.track(client, callID, tool, {
      stop: () => {
        stoppedByUser = true;
        cancel.cancel();
      },
      report: internal.report,
    });
    this.status.trackCall(1);
    try {
      const params = { ...clean(rest), tool, args, callID, workDoneToken: tracked.token };
      const result = await client.sendRequest<ToolResult | undefined>('tools/execute', params, cancel.token);
      if (result === undefined || result === null) {
        throw new Error(`toolhost: tools/execute ${tool} returned no result`);
      }
      return result;
    } catch (error) {
      const cancelled = error instanceof ResponseError && error.code === REQUEST_CANCELLED;
      if (cancelled && token?.isCancellationRequested) {
        throw new vscode.CancellationError();
      }
      if (cancelled && stoppedByUser) {
        // The model should hear that a person stopped it, not see a failure of the tool.
        return stoppedResult(tool);
      }
      if (this.server.wasStopped(client)) {
        // Not vscode-jsonrpc's "Pending response rejected since connection got disposed".
        return restartedResult(tool);
      }
      throw error;
    } finally {
      fromCaller?.dispose();
      cancel.dispose();
      tracked.done();
      this.status.trackCall(-1);
    }
  }

  /** Restricted Mode runs a tool only when the live catalogue marks it read-only. */
  private async isReadOnly(tool: string): Promise<boolean> {
    if (!this.catalogue) {
      this.catalogue = this.server
        .ready()
        .then((client) => client.sendRequest<{ tools: ToolInfo[] }>('tools/list', {}))
        .then((result) => result.tools);
      this.catalogue.catch(() => (this.catalogue = undefined));
    }
    const info = (await this.catalogue).find((t) => t.id === tool);
    return info?.annotations?.readOnlyHint === true;
  }
}

/** The result of a call a person stopped from the status bar. */
export function stoppedResult(tool: string): ToolResult {
  return {
    title: `${tool} stopped`,
    output: `The user stopped this ${tool} call in VS Code before it finished. Ask them before running it again.`,
    metadata: { error: 'cancelled', stoppedBy: 'user' },
    isError: true,
  };
}

export function restartedResult(tool: string): ToolResult {
  return {
    title: `${tool} ended by a restart`,
    output:
      `toolhost was restarted in VS Code (Toolhost: Restart, a changed setting, or an install) while this ${tool} ` +
      'call was running, so it ended there: a review it waited for was withdrawn unanswered, and a command ' +
      'it ran was stopped. Read the files it touches before running it again if it is still needed.',
    metadata: { error: 'restarted' },
    isError: true,
  };
}

function clean<T extends object>(options: T): Partial<T> {
  return Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as Partial<T>;
}
