/**
 * Wiring only: the log, the request families, the sidecar, the status item, the
 * commands, the Language Model Tools, and the API returned to other extensions.
 */
import * as vscode from 'vscode';
import { ToolCaller, ToolhostApi } from './api';
import { registerCommands, ResultDocuments } from './commands';
import { jsRuntimeCheck } from './common/doctor';
import { createLog, errorText, traceInfo } from './common/logging';
import { onDidChangeInterpreter } from './common/python';
import { ServerManager } from './common/server';
import { onDidChangeRestartSetting } from './common/settings';
import { StatusItem } from './common/status';
import { DiagnosticsFamily } from './diagnostics';
import { EditsFamily } from './edits';
import { registerLanguageModelTools } from './lmTools';
import { LspFamily } from './lsp';
import { PermissionsFamily, ProposedDocuments } from './permissions';
import { ProgressFamily } from './progress';
import { contributedTools, restrictedConfig, startBlocker, watchTrust } from './trust';

export type { ExecuteToolOptions, ListToolsOptions, ToolhostApi } from './api';
export type { ToolInfo, ToolResult } from './types';

let server: ServerManager | undefined;

export function activate(context: vscode.ExtensionContext): ToolhostApi {
  const subscriptions = context.subscriptions;
  subscriptions.push(createLog());
  const contributed = contributedTools(context.extension.packageJSON);

  const proposed = new ProposedDocuments();
  const diagnostics = new DiagnosticsFamily(context.globalState);
  const progress = new ProgressFamily();
  const families = [
    new PermissionsFamily(proposed),
    new EditsFamily(),
    diagnostics,
    new LspFamily(),
    progress,
  ];
  server = new ServerManager({
    context,
    families,
    configOverrides: () => restrictedConfig(contributed),
    blocked: startBlocker,
  });
  const status = new StatusItem();
  const api = new ToolCaller(server, progress, status);
  const results = new ResultDocuments();
  subscriptions.push(proposed, diagnostics, server, status, results);

  const manager = server;
  subscriptions.push(
    manager.onDidChangeState((state) => {
      status.setState(state);
      if (state.kind === 'running') {
        const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
        void jsRuntimeCheck(state.command, folder).then((check) => status.setJsRuntime(check?.summary));
      }
    }),
    manager.onDidChangeTools(() => void api.listTools().catch(() => undefined)),
    ...registerCommands(manager, api, results),
    ...registerLanguageModelTools(api, contributed),
    onDidChangeRestartSetting((setting) => manager.restart(`${setting} changed`)),
    ...watchTrust(manager),
  );
  void onDidChangeInterpreter(() => {
    if (manager.state.kind === 'running' || manager.state.kind === 'missing') {
      manager.restart('the selected Python interpreter changed');
    }
  }).then((listener) => listener && subscriptions.push(listener));

  void manager.start().catch((error) => traceInfo(`The sidecar did not start: ${errorText(error)}`));
  // A plain object: other extensions see the API, not the objects behind it.
  return {
    listTools: (options) => api.listTools(options),
    executeTool: (tool, args, options) => api.executeTool(tool, args, options),
    onDidChangeTools: api.onDidChangeTools,
  };
}

export async function deactivate(): Promise<void> {
  await server?.stop();
  server = undefined;
}
