/**
 * The sidecar's catalogue as an MCP server for Copilot's agent mode, where VS Code
 * has `vscode.lm.registerMcpServerDefinitionProvider` (1.101+; feature-detected,
 * so 1.100 — code-server 4.100 — runs without it and keeps the static Language
 * Model Tools).
 *
 * The definition runs `toolhost mcp` in the workspace folder with the same
 * `toolhost` the sidecar runs; it attaches to this window's sidecar through its
 * lock file, so Copilot sees the whole catalogue (custom tools included, and
 * `notifications/tools/list_changed` when it changes) and every call gets this
 * window's buffers, review prompts and diagnostics. Only a trusted workspace gets
 * a definition; the static tools are then hidden (staticTools.ts), since they would
 * only repeat the same catalogue.
 */
import * as vscode from 'vscode';
import { traceInfo, traceWarn } from './common/logging';
import { ServerState } from './common/server';
import { offerStaticTools } from './staticTools';

export const PROVIDER_ID = 'toolhost.mcp';

interface McpApi {
  registerMcpServerDefinitionProvider(id: string, provider: unknown): vscode.Disposable;
}
type McpStdioDefinitionClass = new (
  label: string,
  command: string,
  args: string[],
  env?: Record<string, string | number | null>,
  version?: string,
) => { cwd?: vscode.Uri };

/** The MCP registration API of this VS Code, or undefined when it has none. */
export function mcpApi(): { lm: McpApi; Definition: McpStdioDefinitionClass } | undefined {
  // 1.100 has a proposed form of the API whose provider breaks the workbench's tool
  // list (seen in code-server 4.100.3): only the final API (1.101+) is used.
  const [major, minor] = vscode.version.split('.').map((part) => parseInt(part, 10));
  if (!(major > 1 || (major === 1 && minor >= 101))) {
    return undefined;
  }
  const lm = vscode.lm as unknown as Record<string, unknown> | undefined;
  const host = vscode as unknown as Record<string, unknown>;
  if (!lm || !('registerMcpServerDefinitionProvider' in lm) || !('McpStdioServerDefinition' in host)) {
    return undefined;
  }
  if (typeof lm.registerMcpServerDefinitionProvider !== 'function') {
    return undefined;
  }
  return {
    lm: lm as unknown as McpApi,
    Definition: host.McpStdioServerDefinition as McpStdioDefinitionClass,
  };
}

/** `toolhost mcp` for the sidecar's argv (`[…, 'serve']` becomes `[…, 'mcp']`). */
export function mcpCommand(sidecar: readonly string[], folder: string): { command: string; args: string[] } {
  const base = sidecar[sidecar.length - 1] === 'serve' ? sidecar.slice(0, -1) : [...sidecar];
  return { command: base[0], args: [...base.slice(1), 'mcp', '--cwd', folder] };
}

export interface McpServerSource {
  readonly state: ServerState;
  readonly onDidChangeState: vscode.Event<ServerState>;
}

export function registerMcpServer(server: McpServerSource): vscode.Disposable[] {
  const api = mcpApi();
  if (!api) {
    traceInfo('This VS Code has no MCP server definition API; Copilot gets the Language Model Tools.');
    return [offerStaticTools(false)];
  }
  const changed = new vscode.EventEmitter<void>();
  const provider = {
    onDidChangeMcpServerDefinitions: changed.event,
    provideMcpServerDefinitions: () => definitions(server.state, api.Definition),
    resolveMcpServerDefinition: (definition: unknown) => definition,
  };
  let registration: vscode.Disposable;
  try {
    registration = api.lm.registerMcpServerDefinitionProvider(PROVIDER_ID, provider);
  } catch (error) {
    // A VS Code where the API is still proposed refuses extensions that did not opt in.
    traceWarn(`The MCP server definition provider could not be registered: ${String(error)}`);
    changed.dispose();
    return [offerStaticTools(false)];
  }
  traceInfo('Registered toolhost as an MCP server for Copilot (toolhost mcp, attached to this window).');
  let command = JSON.stringify(runningCommand(server.state));
  return [
    registration,
    changed,
    offerStaticTools(true),
    vscode.workspace.onDidGrantWorkspaceTrust(() => changed.fire()),
    server.onDidChangeState((state) => {
      const now = JSON.stringify(runningCommand(state));
      if (now !== command) {
        command = now;
        changed.fire();
      }
    }),
  ];
}

function runningCommand(state: ServerState): string[] | undefined {
  return state.kind === 'running' ? state.command : undefined;
}

/** One definition while the sidecar runs in a trusted workspace; none otherwise. */
export function definitions(state: ServerState, Definition: McpStdioDefinitionClass): unknown[] {
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
  const argv = runningCommand(state);
  if (!vscode.workspace.isTrusted || !folder || !argv?.length) {
    return [];
  }
  const { command, args } = mcpCommand(argv, folder.fsPath);
  const version = state.kind === 'running' ? state.version : undefined;
  const definition = new Definition('toolhost', command, args, {}, version);
  definition.cwd = folder;
  return [definition];
}
