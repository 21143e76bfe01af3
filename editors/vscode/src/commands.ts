/**
 * The palette commands: `Toolhost: List Tools`, `Toolhost: Run Tool…`,
 * `Toolhost: Show Log`, `Toolhost: Restart`. A tool run by hand shows its result
 * in a read-only document beside the editor.
 */
import * as vscode from 'vscode';
import { ToolCaller } from './api';
import { COMMANDS, RESULT_SCHEME } from './common/constants';
import { errorText, log } from './common/logging';
import { ServerManager } from './common/server';
import { ToolInfo, ToolResult } from './types';

/** Read-only documents holding the results of tools run from the palette. */
export class ResultDocuments implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly texts = new Map<string, string>();
  private readonly registration = vscode.workspace.registerTextDocumentContentProvider(RESULT_SCHEME, this);
  private count = 0;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? '';
  }

  add(tool: string, result: ToolResult): vscode.Uri {
    const uri = vscode.Uri.from({ scheme: RESULT_SCHEME, path: `/${tool} result ${++this.count}` });
    const status = result.isError ? ` (error: ${String(result.metadata?.error ?? 'failed')})` : '';
    this.texts.set(uri.toString(), `${result.title}${status}\n\n${result.output}\n`);
    return uri;
  }

  dispose(): void {
    this.registration.dispose();
  }
}

export function registerCommands(
  server: ServerManager,
  api: ToolCaller,
  results: ResultDocuments,
): vscode.Disposable[] {
  return [
    vscode.commands.registerCommand(COMMANDS.listTools, () => listTools(server, api, results)),
    vscode.commands.registerCommand(COMMANDS.runTool, (tool?: string, args?: Record<string, unknown>) =>
      runTool(server, api, results, tool, args),
    ),
    vscode.commands.registerCommand(COMMANDS.showLog, () => log().show()),
    vscode.commands.registerCommand(COMMANDS.restart, () => server.restartNow()),
    vscode.commands.registerCommand(COMMANDS.install, (options?: { ifMissing?: boolean }) =>
      server.installAndStart(options),
    ),
  ];
}

/** An error for a person; while toolhost is not installed, with the button that installs it. */
async function showUnavailable(server: ServerManager, message: string): Promise<void> {
  if (server.state.kind !== 'missing' || !server.canInstall()) {
    void vscode.window.showErrorMessage(message);
    return;
  }
  const install = 'Install toolhost';
  if ((await vscode.window.showErrorMessage(message, install)) === install) {
    await server.installAndStart({ ifMissing: true });
  }
}

interface ToolPick extends vscode.QuickPickItem {
  tool: ToolInfo;
}

async function pickTool(
  server: ServerManager,
  api: ToolCaller,
  title: string,
): Promise<ToolInfo | undefined> {
  let tools: ToolInfo[];
  try {
    tools = await api.listTools();
  } catch (error) {
    void showUnavailable(server, errorText(error));
    return undefined;
  }
  const picks: ToolPick[] = tools.map((tool) => ({
    label: tool.id,
    description: `${tool.kind}${tool.annotations?.readOnlyHint ? ' · read-only' : ''}`,
    detail: tool.description.split('\n')[0],
    tool,
  }));
  const picked = await vscode.window.showQuickPick(picks, { title, matchOnDetail: true });
  return picked?.tool;
}

async function listTools(server: ServerManager, api: ToolCaller, results: ResultDocuments): Promise<void> {
  const tool = await pickTool(server, api, 'toolhost: tools (pick one to run it)');
  if (tool) {
    await runTool(server, api, results, tool.id);
  }
}

/** Runs a tool: picked and given JSON arguments in the UI unless passed in. */
export async function runTool(
  server: ServerManager,
  api: ToolCaller,
  results: ResultDocuments,
  toolId?: string,
  args?: Record<string, unknown>,
): Promise<ToolResult | undefined> {
  let id = toolId;
  let template = '{}';
  if (!id) {
    const tool = await pickTool(server, api, 'toolhost: run a tool');
    if (!tool) {
      return undefined;
    }
    id = tool.id;
    template = argumentTemplate(tool);
  }
  if (!args) {
    const text = await vscode.window.showInputBox({
      title: `toolhost: arguments for ${id}`,
      prompt: 'A JSON object of named arguments',
      value: template,
      ignoreFocusOut: true,
      validateInput: (value) =>
        parseArgs(value) ? undefined : 'Enter a JSON object, e.g. {"filePath": "README.md"}',
    });
    args = text === undefined ? undefined : parseArgs(text);
    if (!args) {
      return undefined;
    }
  }
  const tool = id;
  const input = args;
  try {
    const result = await vscode.window.withProgress(
      {
        location: vscode.ProgressLocation.Notification,
        title: `toolhost: running ${tool}`,
        cancellable: true,
      },
      (progress, token) =>
        api.executeTool(tool, input, { token }, { report: (line) => progress.report({ message: line }) }),
    );
    const uri = results.add(tool, result);
    await vscode.window.showTextDocument(uri, { preview: true, viewColumn: vscode.ViewColumn.Beside });
    if (result.isError) {
      void vscode.window.showWarningMessage(`toolhost: ${tool} failed: ${result.output.split('\n')[0]}`);
    }
    return result;
  } catch (error) {
    if (!(error instanceof vscode.CancellationError)) {
      void showUnavailable(server, `toolhost: ${tool} could not run: ${errorText(error)}`);
    }
    return undefined;
  }
}

function parseArgs(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** `{"filePath": ""}`: the required parameters, to fill in. */
export function argumentTemplate(tool: ToolInfo): string {
  const required = Array.isArray(tool.parameters.required) ? (tool.parameters.required as string[]) : [];
  const properties = (tool.parameters.properties ?? {}) as Record<string, { type?: string }>;
  const template = Object.fromEntries(
    required.map((name) => {
      const type = properties[name]?.type;
      return [
        name,
        type === 'number' || type === 'integer' ? 0 : type === 'boolean' ? false : type === 'array' ? [] : '',
      ];
    }),
  );
  return JSON.stringify(template);
}
