import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { CONNECTIONS_SUBCOMMANDS } from '../config/connection-names.js';
import {
  CONNECTION_NOT_ACTIVE,
  CONNECTION_PAUSED,
  connectionWorkflowId,
  type ConnectionStatus,
  type IssuedCredentials,
  type TokenRequestArgs,
  credentialsRejectedUpdate,
  getCredentialsUpdate,
  statusQuery,
} from '../workflows/connection-types.js';

/**
 * The connection cannot be used now (needs reauth, disconnected): a non-retryable failure, so
 * Temporal does not retry the activity into a storm of refused requests.
 */
export function connectionNotActive(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: CONNECTION_NOT_ACTIVE, message, nonRetryable: true });
}

/**
 * The connection is paused: the activity waits by failing retryably, with the next attempt
 * this far off, and makes no request to the service meanwhile.
 */
export function connectionPaused(message: string, retryInMs: number): ApplicationFailure {
  return ApplicationFailure.create({
    type: CONNECTION_PAUSED,
    message,
    nonRetryable: false,
    nextRetryDelay: retryInMs,
  });
}

/**
 * The connection's workflow does not exist, or it has ended (disconnected, terminated): no
 * retry brings it back, only `ebsync connect` does, so an activity that needs it fails for good
 * (activities/failures.ts makes it non-retryable under this name) instead of asking again
 * forever.
 */
export class ConnectionNotFoundError extends Error {
  override readonly name = 'ConnectionNotFoundError';
  readonly retryable = false;
}

/**
 * Why connection `connectionId` cannot be used, in one line, when its workflow does not exist
 * or has ended (disconnected, terminated); null while it runs, or is between two runs of
 * continue-as-new. Errors other than "not found" are thrown as they are.
 */
export async function connectionGone(client: Client, connectionId: string): Promise<string | null> {
  let status: string;
  try {
    status = (await client.workflow.getHandle(connectionWorkflowId(connectionId)).describe()).status
      .name;
  } catch (error) {
    if (!(error instanceof WorkflowNotFoundError)) throw error;
    return `no connection named '${connectionId}': ${connectAdvice(connectionId, 'connects it')}`;
  }
  if (status === 'RUNNING' || status === 'CONTINUED_AS_NEW') return null;
  return status === 'COMPLETED'
    ? `connection '${connectionId}' was disconnected; ${connectAdvice(connectionId, 'connects it anew')}`
    : `connection '${connectionId}' has ended (${status.toLowerCase()}); ${connectAdvice(connectionId, 'connects it anew')}`;
}

/**
 * What connects `connectionId`: `ebsync connect --name` with it, unless it is a name connect
 * gives no connection (`ebsync connections` reads it as a subcommand): then another name.
 */
function connectAdvice(connectionId: string, does: string): string {
  return (CONNECTIONS_SUBCOMMANDS as readonly string[]).includes(connectionId)
    ? `'ebsync connect' gives no connection that name ('ebsync connections ${connectionId}' is a command): connect under another --name`
    : `'ebsync connect --name ${connectionId}' ${does}`;
}

/**
 * `error` from a call to connection `connectionId`'s workflow, as the caller should throw it: a
 * "not found" becomes ConnectionNotFoundError when describing the workflow confirms it is gone.
 * A workflow that is running after all (the call fell between two runs of continue-as-new), or
 * that cannot be described now, keeps the original error, which Temporal retries.
 */
export async function connectionFailure(
  client: Client,
  connectionId: string,
  error: unknown,
): Promise<unknown> {
  if (!(error instanceof WorkflowNotFoundError)) return error;
  const gone = await connectionGone(client, connectionId).catch(() => null);
  return gone === null ? error : new ConnectionNotFoundError(gone);
}

/** Hand out tokens this long before they expire at the latest (matches the workflow's lead). */
const EXPIRY_MARGIN_MS = 2_000;
/** How long a "not active" verdict is kept before the workflow is asked again. */
const INACTIVE_TTL_MS = 15_000;

export interface ConnectionTokensOptions {
  /** How long an activity of a paused connection waits before asking again (default 30 s). */
  pausedRetryDelayMs?: number;
  /**
   * A cached credential is used this long before the workflow's state is checked again (a
   * query: nothing in its history), so a pause reaches every worker within it (default 10 s).
   */
  stateCheckMs?: number;
}

interface Cached {
  issued: IssuedCredentials;
  checkedAt: number;
  /** The connection's credentialsVersion when they were issued (a reconnect raises it). */
  version: number;
  /** The highest version current() was asked to make sure of (see there). */
  checkedFor?: number;
}

interface Verdict {
  until: number;
  message: string;
  paused: boolean;
  /** When the workflow was last asked whether it still holds (a reconnect ends it early). */
  checkedAt: number;
  /** That question while it is under way: whoever asks meanwhile waits for its answer. */
  checking?: Promise<boolean>;
}

/** A kept "not active" verdict is checked against the workflow's state at most this often. */
const VERDICT_CHECK_MS = 1_000;

/**
 * Per worker process: the access token of each connection, cached until near expiry, and
 * one Update in flight per connection however many activities ask at once. Only the
 * connection workflow refreshes; this cache only asks it. A paused connection's activities
 * fail retryably (they wait); one that needs reauthorization fails for good.
 */
export class ConnectionTokens {
  private readonly cache = new Map<string, Cached>();
  private readonly inflight = new Map<string, Promise<IssuedCredentials>>();
  private readonly verdicts = new Map<string, Verdict>();
  private readonly pausedRetryDelayMs: number;
  private readonly stateCheckMs: number;
  /** Updates sent to connection workflows (tests count them). */
  updatesSent = 0;
  /** Status queries sent to connection workflows (tests count them). */
  queriesSent = 0;

  constructor(
    private readonly client: Client,
    options: ConnectionTokensOptions = {},
  ) {
    this.pausedRetryDelayMs = options.pausedRetryDelayMs ?? 30_000;
    this.stateCheckMs = options.stateCheckMs ?? 10_000;
  }

  async get(connectionId: string, request: TokenRequestArgs = {}): Promise<IssuedCredentials> {
    const verdict = this.verdicts.get(connectionId);
    if (verdict && verdict.until > Date.now()) {
      if (await this.stillHolds(connectionId, verdict)) throw this.failure(verdict);
      if (this.verdicts.get(connectionId) === verdict) this.verdicts.delete(connectionId);
    }
    const cached = this.cache.get(connectionId);
    const rejected =
      request.rejectedToken !== undefined &&
      cached?.issued.kind === 'oauth' &&
      cached.issued.accessToken === request.rejectedToken;
    const usable =
      cached &&
      !rejected &&
      (cached.issued.kind !== 'oauth' || cached.issued.expiresAt - EXPIRY_MARGIN_MS > Date.now());
    if (usable && Date.now() - cached.checkedAt < this.stateCheckMs) return cached.issued;
    if (rejected) this.cache.delete(connectionId);
    let pending = this.inflight.get(connectionId);
    if (!pending) {
      pending = (
        usable
          ? this.recheck(connectionId, cached)
          : this.ask(connectionId, rejected ? request : {})
      ).finally(() => this.inflight.delete(connectionId));
      this.inflight.set(connectionId, pending);
    }
    return pending;
  }

  /**
   * The service still refused `secret` (401) after one fresh token: the workflow decides
   * whether the connection needs reauthorization. Afterwards no activity of this process
   * sends the refused secret again.
   */
  async reject(connectionId: string, secret: string): Promise<ConnectionStatus> {
    this.updatesSent += 1;
    this.cache.delete(connectionId);
    const status = await this.client.workflow
      .getHandle(connectionWorkflowId(connectionId))
      .executeUpdate(credentialsRejectedUpdate, { args: [{ rejected: secret }] })
      .catch(async (error: unknown) => {
        throw await connectionFailure(this.client, connectionId, error);
      });
    if (status.state !== 'active') {
      this.remember(connectionId, {
        paused: status.state === 'paused',
        message: `connection ${connectionId} is ${status.state}${status.lastError ? ` (${status.lastError})` : ''}`,
      });
    }
    return status;
  }

  /**
   * Makes sure what this process holds for a connection was checked against its workflow in
   * the last `maxAgeMs` (a query when it was not): a reconnect or pause made since is then seen.
   * Credentials older than `atLeastVersion` (a version the caller knows the connection reached)
   * are checked now, however recently. Throws as get() does for a connection that is not active.
   */
  async current(connectionId: string, maxAgeMs: number, atLeastVersion?: number): Promise<void> {
    const stale = (): Cached | undefined => {
      const cached = this.cache.get(connectionId);
      // Checked once per version asked for: a connection made anew since (its versions start
      // again) would otherwise cost a query on every call.
      return atLeastVersion !== undefined &&
        cached !== undefined &&
        cached.version < atLeastVersion &&
        (cached.checkedFor ?? -1) < atLeastVersion
        ? cached
        : undefined;
    };
    if (stale() !== undefined) {
      // A check under way may have been asked before the connection reached that version:
      // its answer cannot settle it. Once it is in, still older credentials are asked anew.
      await this.inflight.get(connectionId)?.catch(() => undefined);
      const older = stale();
      if (older !== undefined) {
        older.checkedAt = 0;
        await this.get(connectionId);
        const now = this.cache.get(connectionId);
        if (now) now.checkedFor = Math.max(now.checkedFor ?? -1, atLeastVersion ?? -1);
        return;
      }
    }
    const cached = this.cache.get(connectionId);
    if (cached && Date.now() - cached.checkedAt >= maxAgeMs) cached.checkedAt = 0;
    await this.get(connectionId);
  }

  /**
   * The credentialsVersion of the credentials this process holds for a connection (undefined
   * before it asked): a service client built with other credentials than these is stale.
   */
  versionOf(connectionId: string): number | undefined {
    return this.cache.get(connectionId)?.version;
  }

  private stateOf(connectionId: string): Promise<ConnectionStatus> {
    this.queriesSent += 1;
    return this.client.workflow
      .getHandle(connectionWorkflowId(connectionId))
      .query(statusQuery)
      .catch(async (error: unknown) => {
        throw await connectionFailure(this.client, connectionId, error);
      });
  }

  /**
   * Whether a kept verdict still holds. A reconnect (or resume) made since is seen within a
   * second, not after the verdict's TTL. The activities of a sync start together: those that
   * ask while one of them re-checks wait for its answer, since the verdict they would otherwise
   * take is the very one being checked, and after a reconnect it fails them for good.
   */
  private stillHolds(connectionId: string, verdict: Verdict): Promise<boolean> {
    if (verdict.checking) return verdict.checking;
    if (Date.now() - verdict.checkedAt < VERDICT_CHECK_MS) return Promise.resolve(true);
    // When asked, not when answered: a reconnect made during the query is seen a second on.
    verdict.checkedAt = Date.now();
    const checking = this.stateOf(connectionId)
      .then(({ state }) => state !== 'active')
      .finally(() => {
        delete verdict.checking;
      });
    verdict.checking = checking;
    return checking;
  }

  private failure(verdict: Verdict): ApplicationFailure {
    return verdict.paused
      ? connectionPaused(verdict.message, this.pausedRetryDelayMs)
      : connectionNotActive(verdict.message);
  }

  /** Kept briefly so many activities asking at once cost one Update; a pause only as long as one wait. */
  private remember(connectionId: string, verdict: { paused: boolean; message: string }): Verdict {
    const ttl = verdict.paused
      ? Math.min(INACTIVE_TTL_MS, this.pausedRetryDelayMs)
      : INACTIVE_TTL_MS;
    const kept = { ...verdict, until: Date.now() + ttl, checkedAt: Date.now() };
    this.verdicts.set(connectionId, kept);
    return kept;
  }

  /**
   * Still active and not reconnected since: keep the cached credential; reconnected: ask for
   * the new one; otherwise the workflow says why not.
   */
  private async recheck(connectionId: string, cached: Cached): Promise<IssuedCredentials> {
    const { state, credentialsVersion = 0 } = await this.stateOf(connectionId);
    if (state === 'active' && credentialsVersion === cached.version) {
      cached.checkedAt = Date.now();
      return cached.issued;
    }
    this.cache.delete(connectionId);
    return this.ask(connectionId, {});
  }

  private async ask(connectionId: string, request: TokenRequestArgs): Promise<IssuedCredentials> {
    // The version first: a reconnect between the two makes the next recheck ask once more.
    const { credentialsVersion: version = 0 } = await this.stateOf(connectionId);
    this.updatesSent += 1;
    try {
      const issued = await this.client.workflow
        .getHandle(connectionWorkflowId(connectionId))
        .executeUpdate(getCredentialsUpdate, { args: [request] });
      this.cache.set(connectionId, { issued, checkedAt: Date.now(), version });
      this.verdicts.delete(connectionId);
      return issued;
    } catch (error) {
      const cause = error instanceof WorkflowUpdateFailedError ? error.cause : undefined;
      if (
        cause instanceof ApplicationFailure &&
        (cause.type === CONNECTION_NOT_ACTIVE || cause.type === CONNECTION_PAUSED)
      ) {
        this.cache.delete(connectionId);
        const paused = cause.type === CONNECTION_PAUSED;
        // A lasting verdict of the workflow is kept; a refresh that failed for now is not.
        if (paused || cause.nonRetryable)
          throw this.failure(this.remember(connectionId, { paused, message: cause.message }));
        throw ApplicationFailure.create({
          type: CONNECTION_NOT_ACTIVE,
          message: cause.message,
          nonRetryable: false,
        });
      }
      throw await connectionFailure(this.client, connectionId, error);
    }
  }
}
