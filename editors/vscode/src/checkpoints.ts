/**
 * Undo of an agent's turn: `Toolhost: Undo Last Agent Turn` and the Checkpoints view
 * (every turn with its files; a file opens as a diff from before the turn to now; a
 * turn's inline button undoes it). Every undo shows its dry run first and asks
 * (`checkpoints/list`, `checkpoints/restore`, `checkpoints/diff`, docs/protocol.md).
 */
import * as vscode from 'vscode';
import { showWhole } from './common/notices';
import { LanguageClient } from 'vscode-languageclient/node';
import { errorText } from './common/logging';
import { RequestFamily, ServerManager } from './common/server';

export const CHECKPOINT_COMMANDS = {
  undoLast: 'toolhost.undoLastTurn',
  undo: 'toolhost.checkpoints.undo',
  refresh: 'toolhost.checkpoints.refresh',
  diff: 'toolhost.checkpoints.diff',
} as const;
export const CHECKPOINTS_VIEW = 'toolhost.checkpoints';
const BEFORE_SCHEME = 'toolhost-checkpoint';

export interface CheckpointFile {
  path: string;
  action: string;
  by: string[];
  undoable?: boolean;
}

export interface Checkpoint {
  id: string;
  turnID: string;
  sessionID: string;
  title: string;
  time: string;
  client: string;
  kind: 'turn' | 'restore';
  open: boolean;
  files: CheckpointFile[];
  outside: CheckpointFile[];
  git?: { before: string | null; after: string | null };
}

export interface RestoreResult {
  restored: string[];
  skipped: { path: string; reason: string }[];
  undoID: string | null;
}

type Node =
  | { kind: 'turn'; checkpoint: Checkpoint }
  | { kind: 'file'; checkpoint: Checkpoint; file: CheckpointFile; outside: boolean };

/** `checkpoints/changed`: a turn's checkpoint appeared or ended; the view lists again. */
export class CheckpointsChangedFamily implements RequestFamily {
  readonly flags = [] as const;
  private readonly emitter = new vscode.EventEmitter<void>();
  readonly onDidChange = this.emitter.event;

  register(client: LanguageClient): vscode.Disposable[] {
    return [client.onNotification('checkpoints/changed', () => this.emitter.fire())];
  }

  dispose(): void {
    this.emitter.dispose();
  }
}

export function registerCheckpoints(
  server: ServerManager,
  changes: CheckpointsChangedFamily,
): vscode.Disposable[] {
  const tree = new CheckpointsTree(server);
  const before = new BeforeTexts(server);
  return [
    changes.onDidChange(() => tree.refresh()),
    vscode.window.createTreeView(CHECKPOINTS_VIEW, { treeDataProvider: tree }),
    vscode.workspace.registerTextDocumentContentProvider(BEFORE_SCHEME, before),
    vscode.commands.registerCommand(CHECKPOINT_COMMANDS.undoLast, async () => {
      const listed = await list(server);
      const last = listed.at(-1);
      if (!last) {
        void vscode.window.showInformationMessage(
          'toolhost: nothing to undo: no agent turn changed files here',
        );
        return undefined;
      }
      const result = await undo(server, last);
      tree.refresh();
      return result;
    }),
    vscode.commands.registerCommand(CHECKPOINT_COMMANDS.undo, async (node?: Node) => {
      if (!node) {
        return undefined;
      }
      const result = await undo(server, node.checkpoint);
      tree.refresh();
      return result;
    }),
    vscode.commands.registerCommand(CHECKPOINT_COMMANDS.refresh, () => tree.refresh()),
    vscode.commands.registerCommand(CHECKPOINT_COMMANDS.diff, (id: string, path: string) =>
      showDiff(id, path),
    ),
  ];
}

export async function list(server: ServerManager): Promise<Checkpoint[]> {
  const client = await server.ready();
  const answer = await client.sendRequest<{ checkpoints: Checkpoint[] }>('checkpoints/list', {});
  return answer.checkpoints;
}

/** The lines a restore (or its dry run) is told in. */
export function describe(result: RestoreResult, verb: string): string[] {
  return [
    ...result.restored.map((path) => `${verb}: ${path}`),
    ...result.skipped.map((s) => `skipped: ${s.path} (${s.reason})`),
  ];
}

/** The dry run in a modal warning; on "Undo", the restore. */
export async function undo(
  server: ServerManager,
  checkpoint: Checkpoint,
): Promise<RestoreResult | undefined> {
  const title = checkpoint.title || checkpoint.id;
  try {
    const client = await server.ready();
    const dry = await client.sendRequest<RestoreResult>('checkpoints/restore', {
      id: checkpoint.id,
      dryRun: true,
    });
    if (!dry.restored.length) {
      const why = describe(dry, 'would put back').join('\n');
      void showWhole('info', `toolhost: nothing to put back for “${title}”${why ? `: ${why}` : ''}`);
      return dry;
    }
    const choice = await vscode.window.showWarningMessage(
      `Undo “${title}” (${checkpoint.time})?`,
      { modal: true, detail: describe(dry, 'put back').join('\n') },
      'Undo',
    );
    if (choice !== 'Undo') {
      return undefined;
    }
    const result = await client.sendRequest<RestoreResult>('checkpoints/restore', { id: checkpoint.id });
    const skipped = result.skipped.length ? `; skipped ${result.skipped.map((s) => s.path).join(', ')}` : '';
    void showWhole(
      'info',
      `toolhost: undid “${title}”: put back ${result.restored.join(', ')}${skipped}. The Checkpoints view can undo this undo.`,
    );
    return result;
  } catch (error) {
    void vscode.window.showErrorMessage(`toolhost: the undo failed: ${errorText(error)}`);
    return undefined;
  }
}

async function showDiff(id: string, path: string): Promise<void> {
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
  if (!folder) {
    return;
  }
  const now = vscode.Uri.joinPath(folder, path);
  const before = vscode.Uri.from({ scheme: BEFORE_SCHEME, path: `/${path}`, query: id });
  await vscode.commands.executeCommand('vscode.diff', before, now, `${path} (before the agent's turn ↔ now)`);
}

/** `toolhost-checkpoint:/<path>?<checkpoint id>`: the file as it was before that turn. */
class BeforeTexts implements vscode.TextDocumentContentProvider {
  constructor(private readonly server: ServerManager) {}

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const client = await this.server.ready();
    const answer = await client.sendRequest<{ before: string | null }>('checkpoints/diff', {
      id: uri.query,
      path: uri.path.replace(/^\//, ''),
    });
    return answer.before ?? '';
  }
}

class CheckpointsTree implements vscode.TreeDataProvider<Node> {
  private readonly changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changed.event;

  constructor(private readonly server: ServerManager) {}

  refresh(): void {
    this.changed.fire(undefined);
  }

  async getChildren(node?: Node): Promise<Node[]> {
    if (!node) {
      try {
        return (await list(this.server)).reverse().map((checkpoint) => ({ kind: 'turn', checkpoint }));
      } catch {
        return [];
      }
    }
    if (node.kind === 'file') {
      return [];
    }
    const c = node.checkpoint;
    return [
      ...c.files.map((file) => ({ kind: 'file' as const, checkpoint: c, file, outside: false })),
      ...c.outside.map((file) => ({ kind: 'file' as const, checkpoint: c, file, outside: true })),
    ];
  }

  getTreeItem(node: Node): vscode.TreeItem {
    if (node.kind === 'turn') {
      const c = node.checkpoint;
      const item = new vscode.TreeItem(
        c.kind === 'restore' ? `Undo: ${c.title}` : c.title || '(untitled turn)',
        vscode.TreeItemCollapsibleState.Collapsed,
      );
      item.description = `${c.time} · ${c.client}${c.open ? ' · running' : ''}`;
      item.tooltip = `${c.id}\n${c.files.length + c.outside.length} file(s)${c.git ? `\ngit: HEAD moved ${c.git.before} → ${c.git.after} (undo a commit with git)` : ''}`;
      item.contextValue = 'toolhost.checkpoint';
      item.iconPath = new vscode.ThemeIcon(c.kind === 'restore' ? 'discard' : 'history');
      return item;
    }
    const item = new vscode.TreeItem(node.file.path, vscode.TreeItemCollapsibleState.None);
    item.description = `${node.file.action}${node.outside ? ' · changed outside review' : ` · ${node.file.by.join(', ')}`}`;
    item.command = {
      command: CHECKPOINT_COMMANDS.diff,
      title: 'Show the diff',
      arguments: [node.checkpoint.id, node.file.path],
    };
    return item;
  }
}
