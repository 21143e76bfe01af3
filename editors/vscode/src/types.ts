/** The wire shapes of PROTOCOL.md that the extension reads or returns. */

export interface ModelRef {
  providerID: string;
  modelID: string;
}

export interface ToolAnnotations {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/** One entry of `tools/list`. */
export interface ToolInfo {
  id: string;
  description: string;
  parameters: Record<string, unknown>;
  kind: string;
  annotations: ToolAnnotations;
}

export interface ToolAttachment {
  type: 'file';
  mime: string;
  url: string;
  filename?: string;
}

/** The result of `tools/execute`. */
export interface ToolResult {
  title: string;
  output: string;
  metadata: Record<string, unknown>;
  attachments?: ToolAttachment[];
  isError: boolean;
}

/** What an "always" may cover (docs/protocol.md): the first is the default. */
export interface AlwaysOption {
  id: string;
  patterns: string[];
  /** In words: "files in src/ (and its subfolders)". */
  label: string;
}

/** `permission/ask` params. */
export interface PermissionAsk {
  /** The ask's id; `permission/withdrawn` names it. */
  id?: string;
  alwaysOptions?: AlwaysOption[];
  /** The config file an "always" of each scope is saved to (absolute paths). */
  ruleFiles?: { project?: string; user?: string };
  sessionID: string;
  callID: string;
  messageID?: string;
  tool: string;
  permission: string;
  patterns: string[];
  always?: string[];
  title: string;
  metadata: Record<string, unknown>;
}

export type PermissionReplyKind = 'once' | 'always' | 'reject';

/** The reply to `permission/ask` (docs/protocol.md, "Review replies"). */
export interface PermissionReply {
  reply: PermissionReplyKind;
  message?: string;
  /** Hunk ids to accept; only those are applied. */
  hunks?: string[];
  /** Relative paths of the files to accept whole. */
  files?: string[];
  /** Relative path → the full proposed text as the person corrected it. */
  edited?: Record<string, string>;
  /** Where an `always` is kept. */
  scope?: 'session' | 'project' | 'user';
  /** With `always`: which of the ask's `alwaysOptions` (default: the first). */
  alwaysOption?: string;
  /** Where the change overlaps unsaved lines: apply in the editor only, or save those too. */
  unsaved?: 'editor' | 'save';
}
