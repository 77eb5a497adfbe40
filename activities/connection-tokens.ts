import { WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import {
  CONNECTION_NOT_ACTIVE,
  connectionWorkflowId,
  type IssuedCredentials,
  type TokenRequestArgs,
} from '../workflows/connection-types.js';

/**
 * The connection cannot be used now (needs reauth, paused, disconnected): a non-retryable
 * failure, so Temporal does not retry the activity into a storm of refused requests.
 */
export function connectionNotActive(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: CONNECTION_NOT_ACTIVE, message, nonRetryable: true });
}

/** Hand out tokens this long before they expire at the latest (matches the workflow's lead). */
const EXPIRY_MARGIN_MS = 2_000;
/** How long a "not active" verdict is kept before the workflow is asked again. */
const INACTIVE_TTL_MS = 15_000;

/**
 * Per worker process: the access token of each connection, cached until near expiry, and
 * one Update in flight per connection however many activities ask at once. Only the
 * connection workflow refreshes; this cache only asks it.
 */
export class ConnectionTokens {
  private readonly cache = new Map<string, IssuedCredentials>();
  private readonly inflight = new Map<string, Promise<IssuedCredentials>>();
  private readonly inactive = new Map<string, { until: number; message: string }>();
  /** Updates sent to connection workflows (tests count them). */
  updatesSent = 0;

  constructor(private readonly client: Client) {}

  async get(connectionId: string, request: TokenRequestArgs = {}): Promise<IssuedCredentials> {
    const verdict = this.inactive.get(connectionId);
    if (verdict && verdict.until > Date.now()) throw connectionNotActive(verdict.message);
    const cached = this.cache.get(connectionId);
    const rejected =
      request.rejectedToken !== undefined &&
      cached?.kind === 'oauth' &&
      cached.accessToken === request.rejectedToken;
    if (
      cached &&
      !rejected &&
      (cached.kind !== 'oauth' || cached.expiresAt - EXPIRY_MARGIN_MS > Date.now())
    ) {
      return cached;
    }
    if (rejected) this.cache.delete(connectionId);
    let pending = this.inflight.get(connectionId);
    if (!pending) {
      pending = this.ask(connectionId, rejected ? request : {}).finally(() =>
        this.inflight.delete(connectionId),
      );
      this.inflight.set(connectionId, pending);
    }
    return pending;
  }

  /** Forget a connection's cached state (after reconnect). */
  forget(connectionId: string): void {
    this.cache.delete(connectionId);
    this.inactive.delete(connectionId);
  }

  private async ask(connectionId: string, request: TokenRequestArgs): Promise<IssuedCredentials> {
    this.updatesSent += 1;
    try {
      const issued = await this.client.workflow
        .getHandle(connectionWorkflowId(connectionId))
        .executeUpdate<IssuedCredentials, [TokenRequestArgs]>('getCredentials', {
          args: [request],
        });
      this.cache.set(connectionId, issued);
      this.inactive.delete(connectionId);
      return issued;
    } catch (error) {
      const cause = error instanceof WorkflowUpdateFailedError ? error.cause : undefined;
      if (cause instanceof ApplicationFailure && cause.type === CONNECTION_NOT_ACTIVE) {
        this.cache.delete(connectionId);
        if (cause.nonRetryable)
          this.inactive.set(connectionId, {
            until: Date.now() + INACTIVE_TTL_MS,
            message: cause.message,
          });
        throw connectionNotActive(cause.message);
      }
      throw error;
    }
  }
}
