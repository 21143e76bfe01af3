/**
 * Wiring only: the log, the request families, the sidecar, the status item, the
 * commands, the Language Model Tools, and the API returned to other extensions.
 */
import * as vscode from 'vscode';
import { ToolCaller, ToolhostApi } from './api';
import { registerCommands, ResultDocuments } from './commands';
import { doctorChecks, jsRuntimeCheck, sandboxCheck } from './common/doctor';
import { createLog, errorText, traceInfo, traceWarn } from './common/logging';
import { onDidChangeInterpreter } from './common/python';
import { ServerManager } from './common/server';
import { onDidChangeRestartSetting } from './common/settings';
import { StatusItem } from './common/status';
import { DiagnosticsFamily } from './diagnostics';
import { DiskWritesFamily } from './diskWritten';
import { EditsFamily } from './edits';
import { registerLanguageModelTools } from './lmTools';
import { registerMcpServer } from './mcpServer';
import { LspFamily } from './lsp';
import { permissionDefaults, PermissionsFamily } from './permissions';
import { ProgressFamily } from './progress';
import { QuestionFamily } from './question';
import { ReviewApi, Reviews } from './review';
import { registerRulesCommand } from './rules';
import { CheckpointsChangedFamily, registerCheckpoints } from './checkpoints';
import { ReviewFeatures } from './review/presenter';
import { TaskFamily } from './task';
import { contributedTools, restrictedConfig, startBlocker, watchTrust } from './trust';

export type { ExecuteToolOptions, ListToolsOptions, ToolhostApi } from './api';
export type { PendingReview, ReviewAnswer, ReviewApi, ReviewHunk } from './review';
export type { ToolInfo, ToolResult } from './types';

let server: ServerManager | undefined;

export function activate(context: vscode.ExtensionContext): ToolhostApi & ReviewApi {
  const subscriptions = context.subscriptions;
  subscriptions.push(createLog());
  const contributed = contributedTools(context.extension.packageJSON);

  // Review: every permission ask is a pending review until a person (or a panel) answers.
  const reviews: Reviews = new Reviews((): ReviewFeatures => permissions.features());
  const permissions: PermissionsFamily = new PermissionsFamily(reviews.controller);
  const diagnostics = new DiagnosticsFamily(context.globalState);
  // A call waiting for a review says so in the status bar (and in Stop's list).
  const progress = new ProgressFamily(
    (callID) => reviews.controller.reviews.find((r) => r.params.callID === callID)?.params.title,
  );
  const diskWrites = new DiskWritesFamily();
  const checkpointChanges = new CheckpointsChangedFamily();
  const families = [
    permissions,
    new EditsFamily(),
    diagnostics,
    new LspFamily(),
    progress,
    diskWrites,
    new QuestionFamily(),
    new TaskFamily(),
    checkpointChanges,
  ];
  server = new ServerManager({
    context,
    families,
    configOverrides: () => restrictedConfig(contributed),
    blocked: startBlocker,
    initializationOptions: () => ({ permissionDefaults: permissionDefaults() }),
  });
  const status = new StatusItem();
  const api = new ToolCaller(server, progress, status);
  const results = new ResultDocuments();
  subscriptions.push(reviews, diagnostics, server, status, results, progress, diskWrites);
  subscriptions.push(checkpointChanges);
  subscriptions.push(reviews.controller.onDidChange(() => progress.refresh()));

  const manager = server;
  subscriptions.push(
    manager.onDidChangeState((state) => {
      status.setState(state);
      if (state.kind === 'running') {
        const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
        void doctorChecks(state.command, folder).then((checks) => {
          status.setJsRuntime(jsRuntimeCheck(checks)?.summary);
          const sandbox = sandboxCheck(checks);
          status.setSandbox(sandbox);
          if (sandbox && !sandbox.ok) {
            traceWarn(`toolhost doctor: ${sandbox.detail}`);
          }
        });
      }
    }),
    manager.onDidChangeTools(() => void api.listTools().catch(() => undefined)),
    ...registerCommands(manager, api, results),
    registerRulesCommand(manager),
    ...registerCheckpoints(manager, checkpointChanges),
    ...registerLanguageModelTools(api, contributed, (ask, token) => reviews.controller.ask(ask, token)),
    ...registerMcpServer(manager),
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
    pendingReviews: () => reviews.pendingReviews(),
    answerReview: (id, answer) => reviews.answerReview(id, answer),
    onDidChangePendingReviews: reviews.onDidChangePendingReviews,
  };
}

export async function deactivate(): Promise<void> {
  await server?.stop();
  server = undefined;
}
