/**
 * The `toolhost` LanguageStatusItem: the sidecar's state and the number of tools,
 * busy while a call runs; clicking it opens the log (as ruff-vscode's does).
 */
import * as vscode from 'vscode';
import { COMMANDS } from './constants';
import { ServerState } from './server';

const SELECTOR = [{ scheme: 'file' }, { scheme: 'untitled' }];

export class StatusItem implements vscode.Disposable {
  private readonly item: vscode.LanguageStatusItem;
  private state: ServerState = { kind: 'stopped' };
  private toolCount: number | undefined;
  private running = 0;
  private jsRuntime: string | undefined;
  private sandbox: { summary: string; ok: boolean; detail: string } | undefined;

  /** One short line each in the hover (a long detail was cut off there), shown only
   * while there is something to say. */
  private readonly facts = new Map<string, vscode.LanguageStatusItem>();

  constructor() {
    this.item = vscode.languages.createLanguageStatusItem('toolhost.status', SELECTOR);
    this.item.name = 'toolhost';
    this.item.command = { title: 'Show Log', command: COMMANDS.showLog };
    this.render();
  }

  setState(state: ServerState): void {
    this.state = state;
    if (state.kind !== 'running') {
      this.toolCount = undefined;
    }
    this.render();
  }

  setToolCount(count: number): void {
    this.toolCount = count;
    this.render();
  }

  /** Which runtime serves JS/TS custom tools (from `toolhost doctor`), shown in the detail. */
  setJsRuntime(summary: string | undefined): void {
    this.jsRuntime = summary;
    this.render();
  }

  /** Whether bash runs in the kernel sandbox (from `toolhost doctor`); a warning when not. */
  setSandbox(check: { summary?: string; ok: boolean; detail: string } | undefined): void {
    this.sandbox = check && { summary: check.summary ?? '', ok: check.ok, detail: check.detail };
    this.render();
  }

  /** A tool call started (+1) or ended (-1). */
  trackCall(delta: 1 | -1): void {
    this.running = Math.max(0, this.running + delta);
    this.render();
  }

  /** What the item shows; exposed for tests. */
  get text(): string {
    return `${this.item.text} · ${this.item.detail ?? ''}`;
  }

  dispose(): void {
    this.item.dispose();
    this.facts.forEach((item) => item.dispose());
  }

  /** The bash sandbox, the JS/TS runtime and Restricted Mode, each on its own line. */
  private renderFacts(running: boolean): void {
    const unsandboxed = this.sandbox?.ok === false;
    this.fact(
      'bash',
      'toolhost: bash sandbox',
      running && this.sandbox ? `bash: ${this.sandbox.summary}` : '',
      {
        detail: unsandboxed ? 'commands run without the kernel sandbox' : undefined,
        severity: unsandboxed
          ? vscode.LanguageStatusSeverity.Warning
          : vscode.LanguageStatusSeverity.Information,
        command: unsandboxed ? { title: 'Why unsandboxed?', command: COMMANDS.showLog } : undefined,
      },
    );
    this.fact(
      'js',
      'toolhost: JS/TS tools',
      running && this.jsRuntime ? `JS/TS tools: ${this.jsRuntime}` : '',
    );
    this.fact(
      'restricted',
      'toolhost: Restricted Mode',
      running && !vscode.workspace.isTrusted ? 'read-only (Restricted Mode)' : '',
      {
        detail: 'the other tools are switched off',
      },
    );
  }

  private fact(
    key: string,
    name: string,
    text: string,
    more: Partial<Pick<vscode.LanguageStatusItem, 'detail' | 'severity' | 'command'>> = {},
  ): void {
    let item = this.facts.get(key);
    if (!text) {
      item?.dispose();
      this.facts.delete(key);
      return;
    }
    if (!item) {
      item = vscode.languages.createLanguageStatusItem(`toolhost.${key}`, SELECTOR);
      item.name = name;
      this.facts.set(key, item);
    }
    item.text = text;
    item.detail = more.detail;
    item.severity = more.severity ?? vscode.LanguageStatusSeverity.Information;
    item.command = more.command;
  }

  private render(): void {
    const item = this.item;
    item.busy = this.state.kind === 'starting' || this.running > 0;
    item.severity = vscode.LanguageStatusSeverity.Information;
    item.command = { title: 'Show Log', command: COMMANDS.showLog };
    this.renderFacts(this.state.kind === 'running');
    switch (this.state.kind) {
      case 'starting':
        item.text = '$(sync~spin) toolhost';
        item.detail = 'starting';
        break;
      case 'running': {
        const tools = this.toolCount === undefined ? '' : ` · ${this.toolCount} tools`;
        const calls = this.running ? ` · ${this.running} running` : '';
        item.text = this.sandbox?.ok === false ? '$(warning) toolhost' : '$(tools) toolhost';
        item.detail = `ready${tools}${calls}`;
        if (this.sandbox?.ok === false) {
          // Said where the person looks: commands run without the kernel's boundary.
          item.severity = vscode.LanguageStatusSeverity.Warning;
          item.command = { title: 'Why unsandboxed?', command: COMMANDS.showLog };
        }
        break;
      }
      case 'missing':
        item.text = '$(warning) toolhost';
        item.detail = 'not installed';
        item.severity = vscode.LanguageStatusSeverity.Warning;
        // A missed install offer is found again here (and in "Toolhost: Install toolhost").
        // A hover left open may be clicked after the install: then it says so.
        item.command = {
          title: 'Install toolhost',
          command: COMMANDS.install,
          arguments: [{ ifMissing: true }],
        };
        break;
      case 'blocked':
        item.text = '$(shield) toolhost';
        item.detail = 'off in Restricted Mode';
        item.severity = vscode.LanguageStatusSeverity.Warning;
        break;
      case 'failed':
        item.text = '$(error) toolhost';
        item.detail = 'failed to start';
        item.severity = vscode.LanguageStatusSeverity.Error;
        break;
      case 'stopped':
        item.text = '$(debug-stop) toolhost';
        item.detail = 'stopped';
        break;
    }
  }
}
