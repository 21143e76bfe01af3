/**
 * The `toolhost` LanguageStatusItem: the sidecar's state and the number of tools,
 * busy while a call runs; clicking it opens the log (as ruff-vscode's does).
 */
import * as vscode from 'vscode';
import { COMMANDS } from './constants';
import { ServerState } from './server';

export class StatusItem implements vscode.Disposable {
  private readonly item: vscode.LanguageStatusItem;
  private state: ServerState = { kind: 'stopped' };
  private toolCount: number | undefined;
  private running = 0;
  private jsRuntime: string | undefined;
  private sandbox: { summary: string; ok: boolean; detail: string } | undefined;

  constructor() {
    this.item = vscode.languages.createLanguageStatusItem('toolhost.status', [
      { scheme: 'file' },
      { scheme: 'untitled' },
    ]);
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
  }

  private render(): void {
    const item = this.item;
    item.busy = this.state.kind === 'starting' || this.running > 0;
    item.severity = vscode.LanguageStatusSeverity.Information;
    item.command = { title: 'Show Log', command: COMMANDS.showLog };
    switch (this.state.kind) {
      case 'starting':
        item.text = '$(sync~spin) toolhost';
        item.detail = 'starting';
        break;
      case 'running': {
        const tools = this.toolCount === undefined ? '' : ` · ${this.toolCount} tools`;
        const calls = this.running ? ` · ${this.running} running` : '';
        const js = this.jsRuntime ? ` · JS/TS tools: ${this.jsRuntime}` : '';
        const bash = this.sandbox ? ` · bash: ${this.sandbox.summary}` : '';
        item.text = this.sandbox?.ok === false ? '$(warning) toolhost' : '$(tools) toolhost';
        item.detail = `ready${tools}${calls}${bash}${js}${vscode.workspace.isTrusted ? '' : ' · read-only (Restricted Mode)'}`;
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
        item.command = { title: 'Install toolhost', command: COMMANDS.install };
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
