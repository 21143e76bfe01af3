/**
 * `permission/ask`: the sidecar asks before a tool does something the rules say to
 * ask about. Every ask becomes a pending review (src/review/): the proposed change
 * in a diff editor, a notification, the status item and the Review view, answered
 * with `{reply, message?, hunks?, files?, edited?, scope?}`.
 *
 * Also what "review by default" sends: `initializationOptions.permissionDefaults`,
 * rules beneath every config file, so a user's own `permission` config still wins.
 */
import * as vscode from 'vscode';
import { CancellationToken, LanguageClient } from 'vscode-languageclient/node';
import { traceInfo } from './common/logging';
import { RequestFamily } from './common/server';
import { skipReview } from './confirmed';
import { ReviewController } from './review/controller';
import { ReviewFeatures } from './review/presenter';
import { RULE_SCOPES, RuleScope } from './review/review';
import { PermissionAsk, PermissionReply } from './types';

/** What the extension asks about unless the user's config says otherwise. */
export const REVIEW_DEFAULTS = { edit: 'ask', bash: 'ask' } as const;

/** `initializationOptions.permissionDefaults`: the review default, unless turned off. */
export function permissionDefaults(): Record<string, string> | undefined {
  const on = vscode.workspace.getConfiguration('toolhost').get<boolean>('review.byDefault', true);
  return on === false ? undefined : { ...REVIEW_DEFAULTS };
}

export class PermissionsFamily implements RequestFamily {
  readonly flags = ['permissionAsk'] as const;
  private client: LanguageClient | undefined;
  private readonly asked = new Set<string>(); // ids of the reviews open now

  constructor(private readonly reviews: ReviewController) {}

  register(client: LanguageClient): vscode.Disposable[] {
    this.client = client;
    const asked = this.asked;
    return [
      // The sidecar is stopped (a restart): nothing will read these answers any more.
      new vscode.Disposable(() => {
        for (const id of [...asked]) this.reviews.withdraw(id, 'because the sidecar was restarted');
        asked.clear();
      }),
      client.onRequest('permission/ask', (params: PermissionAsk, token: CancellationToken) =>
        this.ask(params, token),
      ),
      // Answered elsewhere, or the call was cancelled: drop the review.
      client.onNotification('permission/withdrawn', (params: { id?: unknown }) => {
        if (typeof params?.id === 'string') this.reviews.withdraw(params.id);
      }),
    ];
  }

  ask(params: PermissionAsk, token?: CancellationToken): Promise<PermissionReply> {
    if (skipReview(params.callID)) {
      traceInfo(`permission/ask ${params.tool}: VS Code confirmed this call already; allowed once`);
      return Promise.resolve({ reply: 'once' });
    }
    const id = params.id;
    if (typeof id !== 'string') {
      return this.reviews.ask(params, token);
    }
    this.asked.add(id);
    return this.reviews.ask(params, token).finally(() => this.asked.delete(id));
  }

  /**
   * What the running sidecar takes in a reply. A sidecar that sends `alwaysOptions` keeps
   * an "always" in any of the three scopes (docs/protocol.md); its `initialize` result may
   * narrow that with `experimental.toolhost.review.scopes`.
   */
  features(): ReviewFeatures {
    const review = this.client?.initializeResult?.capabilities?.experimental?.toolhost?.review;
    const scopes: RuleScope[] = Array.isArray(review?.scopes)
      ? RULE_SCOPES.filter((s) => (review.scopes as unknown[]).includes(s))
      : [...RULE_SCOPES];
    return { scopes: scopes.length ? scopes : [...RULE_SCOPES] };
  }
}
