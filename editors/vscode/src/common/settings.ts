/** The `toolhost.*` settings, read in one place with their defaults. */
import * as vscode from 'vscode';
import { DEFAULT_DIAGNOSTICS_WAIT_MS, MAX_DIAGNOSTICS_WAIT_MS } from './constants';

export type PromptStyle = 'diffAndNotification' | 'notification' | 'modal';

export interface Settings {
  /** The command (and arguments) that starts the sidecar; empty: find `toolhost`. */
  serverCommand: string[];
  diagnosticsWaitMs: number;
  prompts: PromptStyle;
  /** OpenCode-format config merged over the config files (initializationOptions.config). */
  config: Record<string, unknown>;
}

const PROMPT_STYLES: readonly PromptStyle[] = ['diffAndNotification', 'notification', 'modal'];

/** Settings whose change needs a new sidecar (they go into `initialize`). */
export const RESTART_SETTINGS = [
  'toolhost.serverCommand',
  'toolhost.diagnostics.waitMs',
  'toolhost.config',
  'toolhost.review.byDefault',
  'toolhost.task.enabled',
];

/** Fires with the name of a changed setting that needs a new sidecar. */
export function onDidChangeRestartSetting(listener: (setting: string) => void): vscode.Disposable {
  return vscode.workspace.onDidChangeConfiguration((event) => {
    const changed = RESTART_SETTINGS.find((setting) => event.affectsConfiguration(setting));
    if (changed) {
      listener(changed);
    }
  });
}

export function getSettings(scope?: vscode.ConfigurationScope): Settings {
  const config = vscode.workspace.getConfiguration('toolhost', scope);
  return {
    serverCommand: serverCommand(config),
    diagnosticsWaitMs: clamp(config.get<number>('diagnostics.waitMs'), DEFAULT_DIAGNOSTICS_WAIT_MS),
    prompts: PROMPT_STYLES.find((s) => s === config.get('prompts')) ?? 'diffAndNotification',
    config: trustedObject(config, 'config'),
  };
}

/**
 * `toolhost.serverCommand` as an argv. Both settings that run or widen what runs are
 * declared `restrictedConfigurations`, so VS Code ignores a workspace's value in an
 * untrusted workspace; reading only the user's value there makes that hold here too.
 */
function serverCommand(config: vscode.WorkspaceConfiguration): string[] {
  const raw = vscode.workspace.isTrusted
    ? config.get<unknown>('serverCommand')
    : config.inspect<unknown>('serverCommand')?.globalValue;
  if (typeof raw === 'string') {
    return raw.trim() ? [raw.trim()] : [];
  }
  return Array.isArray(raw) ? raw.filter((part): part is string => typeof part === 'string') : [];
}

function trustedObject(config: vscode.WorkspaceConfiguration, key: string): Record<string, unknown> {
  const raw = vscode.workspace.isTrusted
    ? config.get<unknown>(key)
    : config.inspect<unknown>(key)?.globalValue;
  return raw && typeof raw === 'object' && !Array.isArray(raw) ? (raw as Record<string, unknown>) : {};
}

function clamp(value: number | undefined, fallback: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    return fallback;
  }
  return Math.min(Math.round(value), MAX_DIAGNOSTICS_WAIT_MS);
}
