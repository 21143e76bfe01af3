/**
 * `agent/task` (docs/protocol.md): the sidecar's `task` tool starts a sub-agent and
 * VS Code runs its loop on the user's own chat models through `vscode.lm`, so a
 * Copilot user needs no API key. The model is `toolhost.task.model` (a model id, a
 * family, or `vendor/family`; empty: the first chat model that can call tools).
 *
 * Each step sends the conversation with the child session's tools (`tools/list
 * {sessionID}`), runs the tool calls it answers with through the sidecar in the child
 * session (`tools/execute {sessionID}`, where the child's rules apply), and feeds the
 * results back; the first answer without tool calls is the result. The conversation
 * is kept per child session, so `task_id` resumes it. Cancelling the task (the
 * sidecar withdraws the request) cancels the model request and the tool calls.
 */
import * as vscode from 'vscode';
import { CancellationToken, LanguageClient, ResponseError } from 'vscode-languageclient/node';
import { errorText, traceInfo, traceWarn } from './common/logging';
import { RequestFamily } from './common/server';
import { ModelRef, ToolInfo, ToolResult } from './types';

/** JSON-RPC error code for a failed sub-agent (the sidecar words it for the model). */
const SUBAGENT_FAILED = -32001;
const DEFAULT_MAX_STEPS = 50;
const LAST_STEP =
  'You have reached the maximum number of steps for this task. Do not call any more tools: answer now with what you found or did, and what is left undone.';

export interface TaskParams {
  sessionID: string;
  parentSessionID?: string;
  callID?: string;
  description: string;
  prompt: string;
  subagentType: string;
  resume?: boolean;
  agent?: {
    name: string;
    description?: string | null;
    prompt?: string | null;
    model?: ModelRef | null;
    steps?: number | null;
    temperature?: number | null;
  };
  model?: ModelRef | null;
}

type Message = vscode.LanguageModelChatMessage;

/** The `vscode.lm` calls the runner makes (a test may hand in its own). */
export interface ChatModels {
  select(selector: vscode.LanguageModelChatSelector): Thenable<vscode.LanguageModelChat[]>;
}

export class TaskFamily implements RequestFamily {
  private readonly conversations = new Map<string, Message[]>();

  constructor(private readonly models: ChatModels = { select: (s) => vscode.lm.selectChatModels(s) }) {}

  /** Advertised only where VS Code has the Language Model API and the setting is on. */
  get flags(): readonly 'task'[] {
    const enabled = vscode.workspace.getConfiguration('toolhost').get<boolean>('task.enabled', true);
    return enabled && typeof vscode.lm?.selectChatModels === 'function' ? ['task'] : [];
  }

  register(client: LanguageClient): vscode.Disposable[] {
    if (!this.flags.length) {
      return [];
    }
    return [client.onRequest('agent/task', (params: TaskParams, token) => this.run(client, params, token))];
  }

  async run(
    client: LanguageClient,
    params: TaskParams,
    token: CancellationToken,
  ): Promise<{ output: string }> {
    const model = await this.chooseModel();
    traceInfo(`agent/task ${params.subagentType} (${params.sessionID}) on ${model.vendor}/${model.id}`);
    const known = params.resume ? this.conversations.get(params.sessionID) : undefined;
    const messages: Message[] = known ?? [vscode.LanguageModelChatMessage.User(systemPrompt(params))];
    this.conversations.set(params.sessionID, messages);
    messages.push(vscode.LanguageModelChatMessage.User(params.prompt));
    const steps = params.agent?.steps || DEFAULT_MAX_STEPS;
    for (let step = 0; step < steps; step++) {
      const last = step === steps - 1;
      if (last) {
        messages.push(vscode.LanguageModelChatMessage.User(LAST_STEP));
      }
      const tools = last ? [] : await childTools(client, params.sessionID);
      const { text, calls } = await this.complete(model, messages, tools, params, token);
      const parts: (vscode.LanguageModelTextPart | vscode.LanguageModelToolCallPart)[] = [];
      if (text) parts.push(new vscode.LanguageModelTextPart(text));
      parts.push(...calls);
      messages.push(vscode.LanguageModelChatMessage.Assistant(parts));
      if (!calls.length) {
        return { output: text };
      }
      const results: vscode.LanguageModelToolResultPart[] = [];
      let stop: string | undefined;
      for (const call of calls) {
        const result = await runInChild(client, params.sessionID, call, token);
        results.push(
          new vscode.LanguageModelToolResultPart(call.callId, [
            new vscode.LanguageModelTextPart(result.output),
          ]),
        );
        if (stopsTheLoop(result)) {
          stop = result.output;
          break;
        }
      }
      messages.push(vscode.LanguageModelChatMessage.User(results));
      if (stop !== undefined) {
        throw new ResponseError(SUBAGENT_FAILED, stop);
      }
    }
    throw new ResponseError(SUBAGENT_FAILED, `it did not finish within ${steps} steps`);
  }

  private async complete(
    model: vscode.LanguageModelChat,
    messages: Message[],
    tools: vscode.LanguageModelChatTool[],
    params: TaskParams,
    token: CancellationToken,
  ): Promise<{ text: string; calls: vscode.LanguageModelToolCallPart[] }> {
    const options: vscode.LanguageModelChatRequestOptions = {
      justification: `toolhost runs the ${params.subagentType} sub-agent an agent started: ${params.description}`,
    };
    if (tools.length) {
      options.tools = tools;
    }
    let response: vscode.LanguageModelChatResponse;
    try {
      response = await model.sendRequest(messages, options, token);
    } catch (error) {
      if (token.isCancellationRequested) throw error;
      throw new ResponseError(
        SUBAGENT_FAILED,
        `the chat model ${model.id} refused the request: ${errorText(error)}`,
      );
    }
    let text = '';
    const calls: vscode.LanguageModelToolCallPart[] = [];
    for await (const part of response.stream) {
      if (part instanceof vscode.LanguageModelTextPart) {
        text += part.value;
      } else if (part instanceof vscode.LanguageModelToolCallPart) {
        calls.push(part);
      }
    }
    return { text, calls };
  }

  private async chooseModel(): Promise<vscode.LanguageModelChat> {
    const wanted = vscode.workspace.getConfiguration('toolhost').get<string>('task.model', '').trim();
    for (const selector of selectors(wanted)) {
      const found = await this.models.select(selector);
      const usable = found.filter(
        (m) =>
          (m as { capabilities?: { supportsToolCalling?: boolean } }).capabilities?.supportsToolCalling !==
          false,
      );
      if (usable.length) {
        return usable[0];
      }
    }
    const which = wanted
      ? `no chat model matches toolhost.task.model "${wanted}"`
      : 'VS Code has no chat model that can call tools';
    traceWarn(`agent/task: ${which}`);
    throw new ResponseError(
      SUBAGENT_FAILED,
      `${which} (install or sign in to a model provider such as GitHub Copilot, or set toolhost.task.model)`,
    );
  }
}

/** `toolhost.task.model` as selectors to try in order: an id, a family, `vendor/family`. */
export function selectors(wanted: string): vscode.LanguageModelChatSelector[] {
  if (!wanted) return [{}];
  const slash = wanted.indexOf('/');
  if (slash > 0) {
    return [
      { vendor: wanted.slice(0, slash), family: wanted.slice(slash + 1) },
      { vendor: wanted.slice(0, slash), id: wanted.slice(slash + 1) },
    ];
  }
  return [{ id: wanted }, { family: wanted }];
}

async function childTools(
  client: LanguageClient,
  sessionID: string,
): Promise<vscode.LanguageModelChatTool[]> {
  const listed = await client.sendRequest<{ tools: ToolInfo[] }>('tools/list', { sessionID });
  return listed.tools.map((tool) => ({
    name: tool.id,
    description: tool.description,
    inputSchema: tool.parameters,
  }));
}

async function runInChild(
  client: LanguageClient,
  sessionID: string,
  call: vscode.LanguageModelToolCallPart,
  token: CancellationToken,
): Promise<ToolResult> {
  const params = { tool: call.name, args: call.input ?? {}, sessionID, callID: call.callId };
  const result = await client.sendRequest<ToolResult>('tools/execute', params, token);
  return result ?? { title: call.name, output: `${call.name} returned nothing`, metadata: {}, isError: true };
}

/** As OpenCode: a rule's deny, or a rejection without feedback, stops the sub-agent. */
export function stopsTheLoop(result: ToolResult): boolean {
  if (!result.isError) return false;
  const kind = result.metadata?.error;
  return kind === 'permission_denied' || (kind === 'permission_rejected' && !result.metadata?.feedback);
}

function systemPrompt(params: TaskParams): string {
  const name = params.agent?.name ?? params.subagentType;
  const intro =
    params.agent?.prompt ||
    `You are the ${name} sub-agent, started by another agent to do one task. Work autonomously with the tools you have. When you are done, answer with one final message that reports what you found or did: it is all the agent that started you will see.`;
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  return folder ? `${intro}\n\nProject root: ${folder}` : intro;
}
