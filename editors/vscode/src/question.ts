/**
 * `editor/question` (docs/protocol.md): the `question` tool asks the user in a quick
 * pick, one question after another: its options with their descriptions, several
 * picks at once when the question allows `multiple` (`canPickMany`), and "Type your
 * own answer…", which opens an input box. Answers `{answers: [[label, …], …]}`;
 * closing a pick (Escape) answers `{dismissed: true}`. When the sidecar withdraws the
 * request (the call was cancelled) the open pick closes.
 */
import * as vscode from 'vscode';
import { CancellationToken, LanguageClient } from 'vscode-languageclient/node';
import { traceInfo } from './common/logging';
import { RequestFamily } from './common/server';

export const TYPE_OWN_ANSWER = 'Type your own answer…';

export interface QuestionOption {
  label: string;
  description?: string;
}

export interface Question {
  header?: string;
  question: string;
  options?: QuestionOption[];
  multiple?: boolean;
  custom?: boolean;
}

export interface QuestionParams {
  sessionID?: string;
  callID?: string;
  questions: Question[];
}

export type QuestionAnswer = { answers: string[][] } | { dismissed: true };

interface Item extends vscode.QuickPickItem {
  own?: boolean;
}

export class QuestionFamily implements RequestFamily {
  readonly flags = ['question'] as const;

  register(client: LanguageClient): vscode.Disposable[] {
    return [client.onRequest('editor/question', (params: QuestionParams, token) => ask(params, token))];
  }
}

export async function ask(params: QuestionParams, token?: CancellationToken): Promise<QuestionAnswer> {
  const questions = Array.isArray(params?.questions) ? params.questions : [];
  const answers: string[][] = [];
  for (const [index, question] of questions.entries()) {
    const answer = await askOne(question, index, questions.length, token);
    if (answer === undefined) {
      traceInfo(`editor/question: dismissed at question ${index + 1} of ${questions.length}`);
      return { dismissed: true };
    }
    answers.push(answer);
  }
  return { answers };
}

async function askOne(
  question: Question,
  index: number,
  count: number,
  token?: CancellationToken,
): Promise<string[] | undefined> {
  const items: Item[] = (question.options ?? []).map((option) => ({
    label: option.label,
    detail: option.description || undefined,
  }));
  if (question.custom !== false) {
    items.push({ label: TYPE_OWN_ANSWER, own: true, alwaysShow: true });
  }
  const header = question.header ? `${question.header}: ` : '';
  const title = `toolhost: ${header}${question.question}${count > 1 ? ` (${index + 1}/${count})` : ''}`;
  const options = {
    title,
    placeHolder: question.multiple ? 'Pick one or more, then press Enter' : 'Pick one',
    ignoreFocusOut: true,
    matchOnDetail: true,
  };
  let picked: Item[];
  if (question.multiple) {
    const chosen = await vscode.window.showQuickPick(items, { ...options, canPickMany: true }, token);
    if (chosen === undefined) {
      return undefined;
    }
    picked = chosen;
  } else {
    const chosen = await vscode.window.showQuickPick(items, options, token);
    if (chosen === undefined) {
      return undefined;
    }
    picked = [chosen];
  }
  const labels = picked.filter((item) => !item.own).map((item) => item.label);
  if (picked.some((item) => item.own)) {
    const typed = await vscode.window.showInputBox(
      { title, prompt: question.question, placeHolder: 'Your answer', ignoreFocusOut: true },
      token,
    );
    if (typed === undefined) {
      return undefined;
    }
    if (typed.trim()) {
      labels.push(typed.trim());
    }
  }
  return labels;
}
