/**
 * Notices for a person that are read whole. VS Code draws a notification without a
 * button collapsed to one line, cut with an ellipsis ("toolhost: this folder is not
 * trusted (the editor does not trust t…"); one with a button is drawn whole. So these
 * carry "Show Log", where the details are anyway. The sidecar's window/showMessage
 * notices come here too (vscode-languageclient would show them without a button).
 */
import * as vscode from 'vscode';
import { COMMANDS } from './constants';

type Severity = 'info' | 'warning' | 'error';

const SHOW_LOG = 'Show Log';

export async function showWhole(severity: Severity, message: string): Promise<void> {
  const show =
    severity === 'error'
      ? vscode.window.showErrorMessage
      : severity === 'warning'
        ? vscode.window.showWarningMessage
        : vscode.window.showInformationMessage;
  if ((await show(message, SHOW_LOG)) === SHOW_LOG) {
    await vscode.commands.executeCommand(COMMANDS.showLog);
  }
}

/** window/showMessage from the sidecar (LSP MessageType: 1 error, 2 warning, 3+ info). */
export function showSidecarMessage(params: { type?: number; message?: unknown }): void {
  if (typeof params?.message !== 'string') {
    return;
  }
  const severity = params.type === 1 ? 'error' : params.type === 2 ? 'warning' : 'info';
  void showWhole(severity, params.message);
}
