/**
 * `Toolhost: Show Allowed Rules`: every "always" a person gave (this session, every
 * session of the sidecar, saved to the project's or the user's config) and every
 * `allow` rule in those config files, in words, each with a button that revokes it
 * (`permission/rules`, `permission/revoke`, docs/protocol.md).
 */
import * as vscode from 'vscode';
import { ResponseError } from 'vscode-languageclient/node';
import { COMMANDS } from './common/constants';
import { errorText } from './common/logging';
import { ServerManager } from './common/server';
import { plain } from './review/words';

/** One rule of `permission/rules`. */
export interface AllowedRule {
  id: string;
  permission: string;
  pattern: string;
  action: string;
  scope: 'session' | 'sidecar' | 'project' | 'user';
  label: string;
  sessionID?: string;
  source?: string;
}

const METHOD_NOT_FOUND = -32601;

const SCOPE_WORDS: Record<AllowedRule['scope'], string> = {
  session: 'this session',
  sidecar: 'until the sidecar restarts',
  project: 'saved in the project',
  user: 'saved in your user config',
};

interface RuleItem extends vscode.QuickPickItem {
  rule: AllowedRule;
}

const REVOKE = { iconPath: new vscode.ThemeIcon('trash'), tooltip: 'Revoke this rule' };
const OPEN = { iconPath: new vscode.ThemeIcon('go-to-file'), tooltip: 'Open the config file it is saved in' };

export function registerRulesCommand(server: ServerManager): vscode.Disposable {
  return vscode.commands.registerCommand(COMMANDS.showRules, () => showRules(server));
}

export async function listRules(server: ServerManager): Promise<AllowedRule[]> {
  const client = await server.ready();
  const answer = await client.sendRequest<{ rules: AllowedRule[] }>('permission/rules', {});
  return answer.rules;
}

export async function revokeRule(server: ServerManager, id: string): Promise<boolean> {
  const client = await server.ready();
  const answer = await client.sendRequest<{ revoked: boolean }>('permission/revoke', { id });
  return answer.revoked;
}

async function showRules(server: ServerManager): Promise<void> {
  const pick = vscode.window.createQuickPick<RuleItem>();
  pick.title = 'toolhost: allowed rules';
  pick.placeholder = 'Enter or the trash button revokes a rule; the agent is asked again next time';
  pick.matchOnDescription = true;
  pick.matchOnDetail = true;
  pick.busy = true;
  pick.show();
  const load = async () => {
    pick.busy = true;
    try {
      const rules = (await listRules(server)).filter((r) => r.action === 'allow');
      pick.items = rules.map(toItem);
      pick.placeholder = rules.length
        ? 'Enter or the trash button revokes a rule; the agent is asked again next time'
        : 'No rules allow anything without asking. “Always allow…” in a review adds one.';
    } catch (error) {
      pick.hide();
      const text =
        error instanceof ResponseError && error.code === METHOD_NOT_FOUND
          ? 'this sidecar cannot list its rules (update toolhost)'
          : errorText(error);
      void vscode.window.showErrorMessage(`toolhost: could not list the allowed rules: ${text}`);
    } finally {
      pick.busy = false;
    }
  };
  const revoke = async (item: RuleItem) => {
    pick.busy = true;
    try {
      const revoked = await revokeRule(server, item.rule.id);
      void vscode.window.showInformationMessage(
        revoked
          ? `toolhost: revoked the rule that allowed ${plain(item.rule.label)} (${SCOPE_WORDS[item.rule.scope]}).`
          : 'toolhost: that rule was already gone.',
      );
    } catch (error) {
      void vscode.window.showErrorMessage(`toolhost: could not revoke the rule: ${errorText(error)}`);
    }
    await load();
  };
  pick.onDidTriggerItemButton(async (event) => {
    if (event.button === OPEN && event.item.rule.source) {
      await vscode.window.showTextDocument(vscode.Uri.file(event.item.rule.source), { preview: true });
    } else {
      await revoke(event.item);
    }
  });
  pick.onDidAccept(async () => {
    const [item] = pick.selectedItems;
    if (item) await revoke(item);
  });
  pick.onDidHide(() => pick.dispose());
  await load();
}

function toItem(rule: AllowedRule): RuleItem {
  const where =
    rule.scope === 'session' && rule.sessionID ? `this session (${rule.sessionID})` : SCOPE_WORDS[rule.scope];
  return {
    label: `$(${rule.permission === 'bash' ? 'terminal' : rule.permission === 'edit' ? 'edit' : 'shield'}) ${plain(rule.label)}`,
    description: `${rule.permission}: ${rule.pattern} · ${where}`,
    detail: rule.source ? `in ${vscode.workspace.asRelativePath(rule.source)}` : undefined,
    buttons: rule.source ? [OPEN, REVOKE] : [REVOKE],
    rule,
  };
}
