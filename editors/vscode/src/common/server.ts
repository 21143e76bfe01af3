/**
 * The sidecar's lifecycle: find the `toolhost` command, start a LanguageClient over
 * stdio with the request families registered, restart (debounced) and stop.
 *
 * One client serves the window: the first workspace folder is the worktree. Each
 * request family registers its handlers on every new client and is counted in the
 * `initializationOptions.editor` flags, so the flags are exactly what is answered.
 */
import * as vscode from 'vscode';
import {
  LanguageClient,
  LanguageClientOptions,
  RevealOutputChannelOn,
  ServerOptions,
  State,
  TransportKind,
} from 'vscode-languageclient/node';
import { CLIENT_ID, CLIENT_NAME, COMMANDS, PROTOCOL_VERSION, RESTART_DELAY_MS } from './constants';
import { clientChannel, errorText, log, traceError, traceInfo, traceWarn } from './logging';
import { showSidecarMessage, showWhole } from './notices';
import {
  bundledWheel,
  findPython,
  installPrivate,
  scriptBeside,
  scriptInPrivateVenv,
  scriptOnPath,
  selectedInterpreter,
} from './python';
import { getSettings } from './settings';

/** The server-to-client requests of PROTOCOL.md that a client can answer. */
export type EditorFlag =
  'permissionAsk' | 'applyEdit' | 'diagnostics' | 'openDocument' | 'lsp' | 'question' | 'task';

/** One module per request family (permissions, edits, diagnostics, lsp, progress). */
export interface RequestFamily {
  /** The `initializationOptions.editor` flags this family answers. */
  readonly flags: readonly EditorFlag[];
  /** Registers its handlers on a client before it starts; disposed when it stops. */
  register(client: LanguageClient): vscode.Disposable[];
}

export type ServerState =
  | { kind: 'starting' }
  | { kind: 'running'; command: string[]; version?: string }
  | { kind: 'stopped' }
  | { kind: 'missing' }
  | { kind: 'blocked'; message: string }
  | { kind: 'failed'; message: string };

export interface ServerCommand {
  argv: string[];
  /** Where it was found, for the log and the status item. */
  source: 'setting' | 'interpreter' | 'PATH' | 'private environment';
}

export interface ServerManagerOptions {
  context: vscode.ExtensionContext;
  families: readonly RequestFamily[];
  /** Extra `initializationOptions.config`, e.g. the restricted-mode limits. */
  configOverrides: () => Record<string, unknown>;
  /** Why the sidecar must not start now (Restricted Mode), or undefined. */
  blocked?: () => string | undefined;
  /** More `initializationOptions` (e.g. `permissionDefaults`); undefined values are left out. */
  initializationOptions?: () => Record<string, unknown>;
}

export class ServerManager implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private readonly stopped = new WeakSet<LanguageClient>();
  private clientDisposables: vscode.Disposable[] = [];
  private starting: Promise<LanguageClient | undefined> | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  /** The start blocker last written to the log (said once while it holds). */
  private blockedWarned: string | undefined;
  private missingNotified = false;
  private installing: Promise<LanguageClient | undefined> | undefined;
  private disposed = false;
  private _state: ServerState = { kind: 'stopped' };
  private readonly stateEmitter = new vscode.EventEmitter<ServerState>();
  private readonly listChangedEmitter = new vscode.EventEmitter<void>();

  /** Fires on every state change (the status item listens). */
  readonly onDidChangeState = this.stateEmitter.event;
  /** Fires on `tools/listChanged` and whenever a new sidecar has started. */
  readonly onDidChangeTools = this.listChangedEmitter.event;

  constructor(private readonly options: ServerManagerOptions) {}

  get state(): ServerState {
    return this._state;
  }

  /** The flags sent in `initializationOptions.editor`: what the families answer. */
  editorFlags(): Record<EditorFlag, boolean> {
    const flags: Partial<Record<EditorFlag, boolean>> = {};
    for (const family of this.options.families) {
      for (const flag of family.flags) {
        flags[flag] = true;
      }
    }
    return flags as Record<EditorFlag, boolean>;
  }

  /** The running client; starts the sidecar when none runs. Throws when it cannot. */
  async ready(): Promise<LanguageClient> {
    const current = this.client;
    if (current?.state === State.Running) {
      return current;
    }
    if (current?.state === State.Starting && !this.starting) {
      // vscode-languageclient is restarting a sidecar that exited: wait for it.
      if (await runningWithin(current, CLIENT_RESTART_WAIT_MS)) {
        return current;
      }
    }
    const client = await (this.starting ?? this.start());
    if (!client) {
      throw new Error(this.unavailableReason());
    }
    return client;
  }

  start(): Promise<LanguageClient | undefined> {
    if (!this.starting) {
      this.starting = this.doStart().finally(() => (this.starting = undefined));
    }
    return this.starting;
  }

  /** Restarts after RESTART_DELAY_MS; calls in between collapse into one. */
  restart(reason: string): void {
    traceInfo(`Restarting the sidecar: ${reason}`);
    clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(() => void this.restartNow(), RESTART_DELAY_MS);
  }

  async restartNow(): Promise<LanguageClient | undefined> {
    clearTimeout(this.restartTimer);
    this.missingNotified = false;
    await this.starting?.catch(() => undefined);
    await this.stop();
    return this.start();
  }

  /** Whether this extension stopped `client` (a restart, a setting, deactivation). */
  wasStopped(client: LanguageClient): boolean {
    return this.stopped.has(client);
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) this.stopped.add(client);
    this.clientDisposables.forEach((d) => d.dispose());
    this.clientDisposables = [];
    if (client) {
      try {
        await client.stop(2000);
      } catch (error) {
        traceWarn(`The sidecar did not stop cleanly: ${errorText(error)}`);
      }
      await client.dispose(2000).catch(() => undefined);
    }
    this.setState({ kind: 'stopped' });
  }

  dispose(): void {
    this.disposed = true;
    clearTimeout(this.restartTimer);
    void this.stop();
    this.stateEmitter.dispose();
    this.listChangedEmitter.dispose();
  }

  private async doStart(): Promise<LanguageClient | undefined> {
    if (this.disposed) {
      return undefined;
    }
    if (this.client) {
      await this.stop(); // one that vscode-languageclient gave up restarting
    }
    const blocked = this.options.blocked?.();
    if (blocked) {
      // Every start attempt meets the same block (one mv is several watcher events, and
      // each API call tries to start): the log says it once, until it changes or lifts.
      if (blocked !== this.blockedWarned) traceWarn(blocked);
      this.blockedWarned = blocked;
      this.setState({ kind: 'blocked', message: blocked });
      return undefined;
    }
    this.blockedWarned = undefined;
    this.setState({ kind: 'starting' });
    const command = await resolveServerCommand(this.options.context);
    if (!command) {
      this.setState({ kind: 'missing' });
      void this.offerInstall();
      return undefined;
    }
    traceInfo(`Starting the sidecar (${command.source}): ${command.argv.join(' ')} --stdio`);
    const client = this.createClient(command.argv);
    this.clientDisposables = this.options.families.flatMap((family) => family.register(client));
    this.clientDisposables.push(
      client.onNotification('tools/listChanged', () => this.listChangedEmitter.fire()),
      // Shown whole, with Show Log (vscode-languageclient's own would cut a long one).
      client.onNotification('window/showMessage', showSidecarMessage),
      client.onDidChangeState((event) => {
        // After a crash vscode-languageclient restarts the sidecar itself (a few times).
        if (this.client !== client || this.starting) {
          return;
        }
        if (event.newState === State.Stopped) {
          this.setState({ kind: 'stopped' });
        } else if (event.newState === State.Starting) {
          this.setState({ kind: 'starting' });
        } else {
          this.setState({
            kind: 'running',
            command: command.argv,
            version: client.initializeResult?.serverInfo?.version,
          });
          this.listChangedEmitter.fire();
        }
      }),
    );
    this.client = client;
    try {
      await client.start();
    } catch (error) {
      const message = `The sidecar (${command.argv.join(' ')}) did not start: ${errorText(error)}`;
      traceError(message);
      this.setState({ kind: 'failed', message });
      this.clientDisposables.forEach((d) => d.dispose());
      this.clientDisposables = [];
      this.client = undefined;
      await client.dispose(1000).catch(() => undefined);
      return undefined;
    }
    const info = client.initializeResult;
    const protocol = info?.capabilities.experimental?.toolhost?.protocol;
    if (protocol !== PROTOCOL_VERSION) {
      traceWarn(
        `The sidecar speaks toolhost protocol ${protocol}; this extension speaks ${PROTOCOL_VERSION}`,
      );
    }
    this.setState({ kind: 'running', command: command.argv, version: info?.serverInfo?.version });
    this.listChangedEmitter.fire();
    return client;
  }

  private createClient(argv: string[]): LanguageClient {
    const settings = getSettings();
    const folder = vscode.workspace.workspaceFolders?.[0];
    const serverOptions: ServerOptions = {
      command: argv[0],
      args: argv.slice(1),
      transport: TransportKind.stdio, // appends --stdio
      options: { cwd: folder?.uri.fsPath, env: { ...process.env, PYTHONIOENCODING: 'utf-8' } },
    };
    const clientOptions: LanguageClientOptions = {
      // Every file the editor opens is synced, so a read serves unsaved buffers.
      documentSelector: [{ scheme: 'file' }],
      // Each sidecar line once, and a clean stop is not an error (common/logging.ts).
      outputChannel: clientChannel(log(), () => this.client?.initializeResult !== undefined),
      traceOutputChannel: log(),
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: {
        // Workspace trust: in Restricted Mode the sidecar lets the folder's own config
        // only restrict and never loads its custom tools (docs/protocol.md, Trust).
        trusted: vscode.workspace.isTrusted,
        editor: this.editorFlags(),
        diagnostics: { waitMs: settings.diagnosticsWaitMs },
        config: mergeConfig(settings.config, this.options.configOverrides()),
        ...definedOnly(this.options.initializationOptions?.() ?? {}),
      },
      initializationFailedHandler: (error) => {
        traceError(`initialize failed: ${errorText(error)}`);
        return false;
      },
    };
    return new LanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions, clientOptions);
  }

  private unavailableReason(): string {
    switch (this._state.kind) {
      case 'missing':
        return this.canInstall()
          ? 'toolhost: toolhost is not installed (no `toolhost` command was found). Click Install toolhost, or run "Toolhost: Install toolhost" (also on the toolhost status item), or set toolhost.serverCommand.'
          : 'toolhost: no `toolhost` command was found. Install it from a toolhost checkout (pip install -e <checkout>; the PyPI package named toolhost is not ours) or set toolhost.serverCommand.';
      case 'failed':
      case 'blocked':
        return `toolhost: ${this._state.message}`;
      default:
        return 'toolhost: the sidecar is not running.';
    }
  }

  private setState(state: ServerState): void {
    this._state = state;
    this.stateEmitter.fire(state);
  }

  /** Whether this build carries the wheel "Install toolhost" installs. */
  canInstall(): boolean {
    return !!bundledWheel(this.options.context.extensionPath);
  }

  /** No `toolhost` found: say so once, with a button that installs a private copy. */
  private async offerInstall(): Promise<void> {
    if (this.missingNotified) {
      return;
    }
    this.missingNotified = true;
    const install = 'Install toolhost';
    const settings = 'Open Settings';
    const hasWheel = !!bundledWheel(this.options.context.extensionPath);
    const choice = await vscode.window.showWarningMessage(
      'toolhost: no `toolhost` command was found on PATH or in the selected Python environment. ' +
        (hasWheel
          ? 'Install it into a private environment for this extension (needs Python 3.11+ and access to the package index)? Install stays on the toolhost status item and in "Toolhost: Install toolhost".'
          : 'Install it from a toolhost checkout (pip install -e <checkout>; the PyPI package named toolhost is not ours) or set toolhost.serverCommand.'),
      ...(hasWheel ? [install, settings] : [settings]),
    );
    if (choice === install) {
      await this.installAndStart({ ifMissing: true });
    } else if (choice === settings) {
      await vscode.commands.executeCommand('workbench.action.openSettings', 'toolhost.serverCommand');
    }
  }

  /**
   * Creates the private venv from the bundled wheel, then starts the sidecar. One install
   * at a time: a second click joins the running one. `ifMissing`: the button of a "not
   * installed" message, which may be clicked long after it was shown; once toolhost is
   * found or installed it says so instead of installing again over the running sidecar.
   */
  installAndStart(options: { ifMissing?: boolean } = {}): Promise<LanguageClient | undefined> {
    if (this.installing) {
      void vscode.window.showInformationMessage('toolhost: the install is already running.');
      return this.installing;
    }
    if (options.ifMissing && this._state.kind !== 'missing') {
      void vscode.window.showInformationMessage(
        this._state.kind === 'running'
          ? `toolhost is installed and running (${this._state.command.join(' ')}); there is nothing to install.`
          : 'toolhost is installed; there is nothing to install.',
      );
      return Promise.resolve(this.client);
    }
    this.installing = this.install().finally(() => (this.installing = undefined));
    return this.installing;
  }

  private async install(): Promise<LanguageClient | undefined> {
    const context = this.options.context;
    const wheel = bundledWheel(context.extensionPath);
    if (!wheel) {
      void vscode.window.showErrorMessage('toolhost: this build of the extension carries no toolhost wheel.');
      return undefined;
    }
    const python = await findPython(
      vscode.workspace.isTrusted ? await selectedInterpreter(folderUri()) : undefined,
    );
    if (!python) {
      void vscode.window.showErrorMessage(
        'toolhost: no Python 3.11 or newer was found (selected interpreter, python3 on PATH). Install one, then run "Toolhost: Restart".',
      );
      return undefined;
    }
    try {
      await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: 'toolhost: installing' },
        async (progress) => {
          await installPrivate(python, wheel, context.globalStorageUri, (line) => {
            log().info(`[pip] ${line}`);
            progress.report({ message: line.slice(0, 80) });
          });
        },
      );
    } catch (error) {
      traceError(errorText(error));
      const showLog = 'Show Log';
      const choice = await vscode.window.showErrorMessage(`toolhost: ${errorText(error)}`, showLog);
      if (choice === showLog) {
        await vscode.commands.executeCommand(COMMANDS.showLog);
      }
      return undefined;
    }
    const client = await this.restartNow();
    if (client) {
      // The progress toast closes by itself: say that it worked, where it went.
      void showWhole(
        'info',
        `toolhost: installed into this extension's private environment (${context.globalStorageUri.fsPath}); the sidecar is running.`,
      );
    }
    return client;
  }
}

/** How long a call waits for vscode-languageclient to restart a sidecar that exited. */
const CLIENT_RESTART_WAIT_MS = 20000;

function runningWithin(client: LanguageClient, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => finish(false), ms);
    const listener = client.onDidChangeState((event) => {
      if (event.newState !== State.Starting) {
        finish(event.newState === State.Running);
      }
    });
    function finish(running: boolean) {
      clearTimeout(timer);
      listener.dispose();
      resolve(running);
    }
  });
}

function folderUri(): vscode.Uri | undefined {
  return vscode.workspace.workspaceFolders?.[0]?.uri;
}

/**
 * The command that starts the sidecar, in order: `toolhost.serverCommand`; the
 * `toolhost` beside the selected Python interpreter (trusted workspaces only: an
 * untrusted folder may ship its own venv); `toolhost` on PATH; the private venv.
 */
export async function resolveServerCommand(
  context: vscode.ExtensionContext,
): Promise<ServerCommand | undefined> {
  const configured = getSettings().serverCommand;
  if (configured.length) {
    return { argv: configured, source: 'setting' };
  }
  if (vscode.workspace.isTrusted) {
    const interpreter = await selectedInterpreter(folderUri());
    const beside = interpreter && scriptBeside(interpreter);
    if (beside) {
      return { argv: [beside, 'serve'], source: 'interpreter' };
    }
  }
  const onPath = scriptOnPath();
  if (onPath) {
    return { argv: [onPath, 'serve'], source: 'PATH' };
  }
  const installed = scriptInPrivateVenv(context.globalStorageUri);
  return installed ? { argv: [installed, 'serve'], source: 'private environment' } : undefined;
}

/**
 * The user's config with overrides on top. `tools` entries and `permission`
 * entries of the overrides replace the user's; a `permission` entry is moved to
 * the end so that no earlier wildcard (`"*": "allow"`) can win over it.
 */
export function mergeConfig(
  user: Record<string, unknown>,
  overrides: Record<string, unknown>,
): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...user };
  for (const [key, value] of Object.entries(overrides)) {
    const mine = merged[key];
    if (key === 'permission' && isObject(value)) {
      const base: Record<string, unknown> = isObject(mine)
        ? { ...mine }
        : typeof mine === 'string'
          ? { '*': mine }
          : {};
      for (const [name, action] of Object.entries(value)) {
        delete base[name];
        base[name] = action;
      }
      merged[key] = base;
    } else if (isObject(value) && isObject(mine)) {
      merged[key] = { ...mine, ...value };
    } else {
      merged[key] = value;
    }
  }
  return merged;
}

function definedOnly(values: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined));
}

function isObject(value: unknown): value is Record<string, unknown> {
  return !!value && typeof value === 'object' && !Array.isArray(value);
}
