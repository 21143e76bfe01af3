/** Names that appear in more than one module, kept in one place. */

/** The client id: vscode-languageclient reads `toolhost.trace.server` from it. */
export const CLIENT_ID = 'toolhost';
export const CLIENT_NAME = 'toolhost';
export const EXTENSION_ID = 'toolhost.toolhost';

/** The wire protocol version this client speaks (PROTOCOL.md). */
export const PROTOCOL_VERSION = 1;

/** Restarts asked for in quick succession (settings edits) collapse into one. */
export const RESTART_DELAY_MS = 500;

/** Default for `toolhost.diagnostics.waitMs`, and the most a request may ask for. */
export const DEFAULT_DIAGNOSTICS_WAIT_MS = 3000;
export const MAX_DIAGNOSTICS_WAIT_MS = 30000;

/** Scheme of the virtual documents that hold a proposed edit's text. */
export const PROPOSED_SCHEME = 'toolhost-proposed';
/** Scheme of the read-only documents that show a tool's result. */
export const RESULT_SCHEME = 'toolhost-result';

/** Prefix of the Language Model Tool names contributed in package.json. */
export const LM_TOOL_PREFIX = 'toolhost_';

export const COMMANDS = {
  listTools: 'toolhost.listTools',
  runTool: 'toolhost.runTool',
  showLog: 'toolhost.showLog',
  restart: 'toolhost.restart',
  stopCall: 'toolhost.stopCall',
  showRules: 'toolhost.showRules',
  install: 'toolhost.install',
} as const;
