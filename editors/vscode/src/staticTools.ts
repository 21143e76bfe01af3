/**
 * Which of the static Language Model Tools (package.json's `languageModelTools`)
 * VS Code offers, as one context key the extension computes:
 *
 * - `all`: a trusted workspace where no MCP server definition serves the catalogue
 *   (VS Code 1.100 and older, or the provider could not be registered);
 * - `readOnly`: Restricted Mode, where only read-only tools run;
 * - `none`: a trusted workspace where toolhost's MCP server (mcpServer.ts) serves the
 *   whole catalogue, which the static tools would only repeat.
 *
 * Each tool's `when` clause is then a single comparison with this key
 * (scripts/generate-tools.mjs). It must stay one term: VS Code 1.100 parses `a && b`
 * and `a || b` into expressions that cache their negation with a pointer back, and it
 * sends the tools' data, `when` included, to every extension host as JSON; a circular
 * `when` makes that fail, and then `vscode.lm.tools` is empty for every extension and
 * the workbench logs `TypeError: i is not iterable`. Later releases send tools without
 * their `when` clauses.
 */
import * as vscode from 'vscode';

export const STATIC_TOOLS_KEY = 'toolhost.staticTools';
export type StaticTools = 'all' | 'readOnly' | 'none';

export function staticTools(trusted: boolean, mcpServer: boolean): StaticTools {
  if (!trusted) {
    return 'readOnly';
  }
  return mcpServer ? 'none' : 'all';
}

/** Keeps the key up to date with workspace trust; `mcpServer`: a provider is registered. */
export function offerStaticTools(mcpServer: boolean): vscode.Disposable {
  const update = () =>
    void vscode.commands.executeCommand(
      'setContext',
      STATIC_TOOLS_KEY,
      staticTools(vscode.workspace.isTrusted, mcpServer),
    );
  update();
  return vscode.workspace.onDidGrantWorkspaceTrust(update);
}
