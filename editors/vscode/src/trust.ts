/**
 * Restricted Mode (an untrusted workspace): only read-only tools are offered.
 *
 * Two layers, so neither alone has to be perfect:
 * - the sidecar is started with `initializationOptions.config.tools` switching off
 *   every built-in tool whose `readOnlyHint` is false (the catalogue generated into
 *   package.json at build time), and `external_directory` denied, so that a
 *   workspace's own config cannot widen reads beyond the folder;
 * - the exported API and the Language Model Tools run only tools that the live
 *   `tools/list` marks `readOnlyHint: true` (this also covers custom tools).
 *
 * A folder with its own custom tool files (`.opencode/tool/`, `.opencode/tools/`)
 * is different: the sidecar imports them when it starts, which runs the folder's
 * code. There the sidecar does not start until the workspace is trusted, and a tool
 * file that appears later stops it.
 */
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import { LM_TOOL_PREFIX } from './common/constants';
import { ToolInfo, ToolResult } from './types';

/** A built-in tool as generated into package.json's `languageModelTools`. */
export interface ContributedTool {
  id: string;
  name: string;
  readOnly: boolean;
  /** Reaches outside this machine (webfetch): confirmed in chat even when read-only. */
  openWorld: boolean;
}

interface LmToolContribution {
  name: string;
  tags?: string[];
}

export const READ_ONLY_TAG = 'read-only';
export const OPEN_WORLD_TAG = 'open-world';

export function contributedTools(packageJSON: unknown): ContributedTool[] {
  const json = packageJSON as { contributes?: { languageModelTools?: LmToolContribution[] } };
  return (json.contributes?.languageModelTools ?? [])
    .filter((tool) => tool.name.startsWith(LM_TOOL_PREFIX))
    .map((tool) => ({
      id: tool.name.slice(LM_TOOL_PREFIX.length),
      name: tool.name,
      readOnly: (tool.tags ?? []).includes(READ_ONLY_TAG),
      openWorld: (tool.tags ?? []).includes(OPEN_WORLD_TAG),
    }));
}

/** The config the sidecar starts with in Restricted Mode; `{}` when trusted. */
export function restrictedConfig(tools: readonly ContributedTool[]): Record<string, unknown> {
  if (vscode.workspace.isTrusted) {
    return {};
  }
  const off = Object.fromEntries(tools.filter((t) => !t.readOnly).map((t) => [t.id, false]));
  return { tools: off, permission: { external_directory: 'deny' } };
}

export function isOffered(tool: ToolInfo): boolean {
  return vscode.workspace.isTrusted || tool.annotations?.readOnlyHint === true;
}

export function restrictedResult(tool: string): ToolResult {
  return {
    title: tool,
    output:
      `The tool "${tool}" is not available: this VS Code workspace is not trusted (Restricted Mode), ` +
      'so only read-only tools can run. Continue with read-only tools, or ask the user to trust the workspace.',
    metadata: { error: 'permission_denied' },
    isError: true,
  };
}

/**
 * Restarts the sidecar when trust is granted (every tool), and at once when a
 * custom tool file appears in an untrusted folder (the sidecar must not load it).
 */
export function watchTrust(server: {
  restart(reason: string): void;
  restartNow(): unknown;
}): vscode.Disposable[] {
  const subscriptions = [
    vscode.workspace.onDidGrantWorkspaceTrust(() => server.restart('the workspace is now trusted')),
  ];
  const folder = vscode.workspace.workspaceFolders?.[0];
  if (!vscode.workspace.isTrusted && folder) {
    // Everything under .opencode: a folder moved in (`mv tools .opencode/`) is one
    // event for the folder, none for the files it brings. What is there now decides.
    const watcher = vscode.workspace.createFileSystemWatcher(
      new vscode.RelativePattern(folder, CUSTOM_TOOL_WATCH),
    );
    subscriptions.push(
      watcher,
      watcher.onDidCreate(() => {
        if (startBlocker() !== undefined) {
          void server.restartNow();
        }
      }),
    );
  }
  return subscriptions;
}

/** What the Restricted Mode watcher sees: .opencode itself and all below it (the
 * sidecar loads .opencode/{tool,tools}/*.{py,js,ts} as custom tools, and so runs them). */
export const CUSTOM_TOOL_WATCH = '{.opencode,.opencode/**}';
const CUSTOM_TOOL_FILE = /\.(py|js|ts)$/;

/** Why the sidecar must not start in this workspace now, or undefined. */
export function startBlocker(): string | undefined {
  if (vscode.workspace.isTrusted) {
    return undefined;
  }
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const files = folder ? customToolFiles(folder) : [];
  if (!files.length) {
    return undefined;
  }
  return (
    `this workspace is not trusted (Restricted Mode) and has its own tool code (${files[0]}), ` +
    'which the sidecar would run; trust the workspace to use toolhost here.'
  );
}

function customToolFiles(folder: string): string[] {
  const found: string[] = [];
  for (const name of ['tool', 'tools']) {
    const dir = path.join(folder, '.opencode', name);
    try {
      found.push(
        ...fs
          .readdirSync(dir)
          .filter((file) => CUSTOM_TOOL_FILE.test(file))
          .map((file) => path.join('.opencode', name, file)),
      );
    } catch {
      // no such folder
    }
  }
  return found;
}
