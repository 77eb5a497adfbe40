import {
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  log,
  patched,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { createConnectionActivities } from '../activities/connections.js';
import {
  CONNECTION_NOT_ACTIVE,
  CONNECTION_PAUSED,
  INVALID_GRANT,
  type ConnectionInput,
  type ConnectionStatus,
  type Credentials,
  credentialsRejectedUpdate,
  disconnectUpdate,
  getCredentialsUpdate,
  reconnectCommand,
  reconnectUpdate,
  setPausedUpdate,
  statusQuery,
} from './connection-types.js';
import { countLimit } from './rate-limit.js';
import { rateLimitedSignal, type LimitMinutes, type RateLimitSignal } from './rate-limit-types.js';

type ConnectionActivities = ReturnType<typeof createConnectionActivities>;

const { refreshConnectionTokens } = proxyActivities<ConnectionActivities>({
  startToCloseTimeout: '30 seconds',
  heartbeatTimeout: '10 seconds',
  retry: {
    initialInterval: '1 second',
    maximumInterval: '30 seconds',
    maximumAttempts: 8,
    nonRetryableErrorTypes: [INVALID_GRANT],
  },
});
const { revokeConnectionTokens } = proxyActivities<ConnectionActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 3 },
});

/** Refresh when this much of the token's life is left (at least 2 s, at most 5 min). */
function refreshLead(creds: { accessExpiresAt: number; accessIssuedAt: number }): number {
  const lifetime = Math.max(0, creds.accessExpiresAt - creds.accessIssuedAt);
  return Math.min(300_000, Math.max(2_000, lifetime * 0.2));
}

/**
 * The timer refreshes a token no sooner than this after it was issued: a service whose tokens
 * live 2 s or less had the timer refresh at once, again and again, ten times a second while
 * nothing used the connection. A sync that asks meanwhile still gets a refresh of its own.
 */
const MIN_REFRESH_GAP_MS = 2_000;

const HISTORY_EVENTS_LIMIT = 2_000;

/** How long a disconnect waits for a token refresh under way (the CLI waits 30 s in all). */
const REFRESH_WAIT = '15 seconds';
/** What a disconnect says while its revoke waits for a refresh (cli/connections.ts reads it). */
const REVOKE_PENDING =
  'revoke pending: a token refresh under way has not ended (is the authorization server answering?); the token it leaves is revoked when it does';

/**
 * One per connection, and the only code that refreshes its token (DESIGN decision 2).
 * Activities ask it for credentials through an Update; a workflow execution runs one
 * handler at a time, and concurrent askers await the same refresh, so exactly one refresh
 * happens per rotation across every worker. The rotated refresh token is part of workflow
 * state (sealed by the payload codec) before any new access token is handed out.
 */
export async function connectionWorkflow(input: ConnectionInput): Promise<ConnectionStatus> {
  const profile = { ...input.profile };
  let credentials: Credentials = input.credentials;
  let state = input.carried?.state ?? 'active';
  let lastError: string | null = input.carried?.lastError ?? null;
  let refreshCount = input.carried?.refreshCount ?? 0;
  let lastRateLimit: RateLimitSignal | null = input.carried?.lastRateLimit ?? null;
  let rateLimitedMinutes: LimitMinutes = input.carried?.rateLimitedMinutes ?? [];
  const connectedAt = input.carried?.connectedAt ?? Date.now();
  let refreshing: Promise<void> | undefined;
  /** An access token obtained because the service refused the one before it. */
  let issuedAfterRejection: string | undefined;
  let wake = false;

  /** What outlives continue-as-new, and what the status query shows beside the profile. */
  const carried = () => ({
    state,
    lastError,
    refreshCount,
    connectedAt,
    lastRateLimit,
    rateLimitedMinutes,
  });
  const status = (): ConnectionStatus => ({
    ...profile,
    ...carried(),
    ...(credentials.kind === 'oauth' ? { accessExpiresAt: credentials.accessExpiresAt } : {}),
  });

  const needsReauth = (reason: string): void => {
    state = 'needs_reauth';
    lastError = reason;
    wake = true;
    // Its syncs fail (paused is another state, whose syncs wait), and a bare `ebsync connect`
    // would connect another connection ('default'): the line names the command that helps.
    const command = reconnectCommand(profile.connectionId, profile.kind);
    log.warn(
      `connection ${profile.connectionId} needs re-authorization (${reason}): its syncs fail until '${command}' gives it new credentials`,
      { connectionId: profile.connectionId },
    );
  };

  /** The credentials the last refresh installed (state only: what refreshAfterRejection asks). */
  let refreshedTo: Credentials | undefined;

  const refresh = async (): Promise<void> => {
    if (credentials.kind !== 'oauth') return;
    const before = credentials;
    try {
      const tokens = await refreshConnectionTokens({
        connectionId: profile.connectionId,
        authUrl: profile.authUrl ?? '',
        clientId: profile.clientId ?? '',
        refreshToken: before.refreshToken,
      });
      // A reconnect while the activity ran replaced the grant it refreshed: the new
      // credentials stand (that grant is left live, as a reconnect leaves it). They used to be
      // overwritten by the old grant's tokens. Histories from before kept the refresh's.
      if (credentials !== before && patched('refresh-yields-to-reconnect')) return;
      const now = Date.now();
      credentials = {
        kind: 'oauth',
        accessToken: tokens.accessToken,
        refreshToken: tokens.refreshToken,
        accessIssuedAt: now,
        accessExpiresAt: now + tokens.expiresIn * 1000,
      };
      refreshedTo = credentials;
      refreshCount += 1;
      lastError = null;
    } catch (error) {
      const cause = error instanceof ActivityFailure ? error.cause : error;
      const message = cause instanceof Error ? cause.message : String(cause);
      // The grant a reconnect replaced was refused: nothing to say of the new credentials.
      if (credentials !== before && patched('refresh-yields-to-reconnect')) return;
      if (cause instanceof ApplicationFailure && cause.type === INVALID_GRANT) {
        needsReauth(message);
      } else {
        lastError = `refresh failed: ${message}`;
      }
      throw ApplicationFailure.create({
        type: CONNECTION_NOT_ACTIVE,
        message: `connection ${profile.connectionId}: ${lastError}`,
        nonRetryable: state === 'needs_reauth',
      });
    }
  };

  /** One refresh at a time: later callers wait for the one under way. */
  const refreshOnce = async (): Promise<void> => {
    refreshing ??= refresh().finally(() => {
      refreshing = undefined;
    });
    await refreshing;
  };

  /** Paused: retry later. Needs reauth or disconnected: never retry. */
  const assertActive = (): void => {
    if (state === 'paused') {
      throw ApplicationFailure.create({
        type: CONNECTION_PAUSED,
        message: `connection ${profile.connectionId} is paused; \`ebsync connections resume ${profile.connectionId}\` lets its syncs go on`,
        nonRetryable: false,
      });
    }
    if (state !== 'active') {
      throw ApplicationFailure.create({
        type: CONNECTION_NOT_ACTIVE,
        message: `connection ${profile.connectionId} is ${state}${lastError ? ` (${lastError})` : ''}`,
        nonRetryable: true,
      });
    }
  };

  /**
   * A refresh because the service refused the current access token. Only a token that refresh
   * issued counts as issued after a rejection: one a reconnect set while it ran (the refresh
   * then yields) gets its own refresh at its first refusal.
   */
  const refreshAfterRejection = async (): Promise<void> => {
    await refreshOnce();
    issuedAfterRejection =
      credentials.kind === 'oauth' && credentials === refreshedTo
        ? credentials.accessToken
        : undefined;
  };

  setHandler(statusQuery, status);
  // Recorded only: the pacing itself is the syncing workflow's (workflows/rate-limit.ts).
  setHandler(rateLimitedSignal, (signal) => {
    lastRateLimit = signal;
    rateLimitedMinutes = countLimit(rateLimitedMinutes, signal);
  });

  setHandler(getCredentialsUpdate, async ({ rejectedToken }) => {
    assertActive();
    if (credentials.kind === 'oauth') {
      const nearExpiry = Date.now() >= credentials.accessExpiresAt - refreshLead(credentials);
      if (rejectedToken === credentials.accessToken) await refreshAfterRejection();
      else if (nearExpiry || refreshing) await refreshOnce();
      assertActive();
      // A reconnect to a key while the refresh ran: the key is the answer (it used to fail
      // the asking activity for good).
      if (credentials.kind !== 'oauth') return credentials;
      return {
        kind: 'oauth',
        accessToken: credentials.accessToken,
        expiresAt: credentials.accessExpiresAt,
      };
    }
    return credentials;
  });

  setHandler(reconnectUpdate, ({ credentials: next, permissions, businessName, service }) => {
    if (state === 'disconnected')
      throw ApplicationFailure.nonRetryable('connection was disconnected; connect anew');
    credentials = next;
    if (permissions) profile.permissions = permissions;
    if (businessName) profile.businessName = businessName;
    if (service) {
      // The service the new credentials were checked against, and their kind, replace the old.
      profile.kind = service.kind;
      profile.baseUrl = service.baseUrl;
      delete profile.authUrl;
      delete profile.clientId;
      if (service.authUrl !== undefined) profile.authUrl = service.authUrl;
      if (service.clientId !== undefined) profile.clientId = service.clientId;
    }
    profile.credentialsVersion = (profile.credentialsVersion ?? 0) + 1;
    // Workflow time: the update's own, the same on replay.
    profile.reconnectedAt = Date.now();
    // A pause is the user's, and new credentials do not lift it (they used to, and the syncs
    // that 'pause' said wait until 'resume' went on at once): 'resume' does. Histories from
    // before reconnected to active.
    if (!(state === 'paused' && patched('reconnect-keeps-pause'))) state = 'active';
    lastError = null;
    wake = true;
    return status();
  });

  setHandler(setPausedUpdate, (paused) => {
    if (state === 'disconnected' || state === 'needs_reauth') return status();
    state = paused ? 'paused' : 'active';
    wake = true;
    return status();
  });

  setHandler(credentialsRejectedUpdate, async ({ rejected }) => {
    // Paused: a request made before the pause; the next one after resume finds out again.
    if (state !== 'active') return status();
    if (credentials.kind === 'oauth') {
      if (rejected !== credentials.accessToken) return status();
      // A token fresh from a refresh that a refusal asked for, refused too: refreshing again
      // would only repeat it. Otherwise one forced refresh; invalid_grant there ends in
      // needs_reauth on its own.
      if (rejected !== issuedAfterRejection) {
        await refreshAfterRejection().catch(() => undefined);
        return status();
      }
    } else {
      const current = credentials.kind === 'apiKey' ? credentials.apiKey : credentials.appSecret;
      if (rejected !== current) return status();
    }
    const what =
      credentials.kind === 'apiKey'
        ? 'integration key'
        : credentials.kind === 'legacyApp'
          ? 'app credentials'
          : 'access token just refreshed';
    needsReauth(`the service refused the ${what} (401)`);
    return status();
  });

  /** Why a revoke failed: the activity's own words ("Activity task failed" said nothing). */
  const revokeFailure = (error: unknown): string => {
    const cause = error instanceof ActivityFailure && error.cause ? error.cause : error;
    return `revoke failed: ${cause instanceof Error ? cause.message : String(cause)}`;
  };
  /** Set when a disconnect left the revoke to the end of a refresh that outlasted its wait. */
  let revokeAfterRefresh = false;

  setHandler(disconnectUpdate, async () => {
    if (state !== 'disconnected') {
      state = 'disconnected';
      // A refresh under way rotates the refresh token: revoking the one it replaces left the
      // grant live, and the refresh completed after "disconnected" (a black-box sweep, with
      // the auth server away). The token it leaves is the one revoked. The wait is short of
      // the CLI's 30 s; a refresh still retrying then is revoked after, as the workflow ends.
      // Histories from before revoked at once.
      if (refreshing && patched('disconnect-after-refresh')) {
        lastError = REVOKE_PENDING;
        const ended = await condition(() => refreshing === undefined, REFRESH_WAIT);
        // A refresh refused meanwhile said needs_reauth: the user asked for disconnected.
        state = 'disconnected';
        if (!ended) {
          revokeAfterRefresh = true;
          lastError = REVOKE_PENDING;
          wake = true;
          return status();
        }
      }
      // Inline, as before: an extra async layer here put the update's completion after the
      // main loop's next command, and recorded histories no longer replayed.
      if (credentials.kind === 'oauth' && profile.authUrl && profile.clientId) {
        lastError = null;
        await revokeConnectionTokens({
          authUrl: profile.authUrl,
          clientId: profile.clientId,
          refreshToken: credentials.refreshToken,
        }).catch((error: unknown) => {
          lastError = revokeFailure(error);
        });
      }
      wake = true;
    }
    return status();
  });

  const historyFull = (): boolean => {
    const info = workflowInfo();
    return (
      info.continueAsNewSuggested ||
      info.historyLength > (input.historyLimit ?? HISTORY_EVENTS_LIMIT)
    );
  };

  for (;;) {
    if (state === 'disconnected') break;
    if (historyFull()) {
      await condition(() => allHandlersFinished() && refreshing === undefined);
      await continueAsNew<typeof connectionWorkflow>({
        profile,
        credentials,
        carried: carried(),
        ...(input.historyLimit !== undefined ? { historyLimit: input.historyLimit } : {}),
      });
    }
    wake = false;
    if (state === 'active' && credentials.kind === 'oauth') {
      let dueIn = credentials.accessExpiresAt - refreshLead(credentials) - Date.now();
      const gapLeft = credentials.accessIssuedAt + MIN_REFRESH_GAP_MS - Date.now();
      // Histories from before refreshed at once.
      if (dueIn < gapLeft && patched('refresh-gap')) dueIn = gapLeft;
      if (dueIn <= 0) {
        const ok = await refreshOnce().then(
          () => true,
          () => false,
        );
        // A failed refresh already retried with backoff inside its activity; wait before the next round.
        if (!ok) await condition(() => wake || historyFull(), '1 minute');
        continue;
      }
      await condition(() => wake || historyFull(), dueIn);
    } else {
      await condition(() => wake || historyFull(), '1 day');
    }
  }
  // The revoke a disconnect left to the end of a refresh that outlasted its wait.
  if (revokeAfterRefresh && credentials.kind === 'oauth' && profile.authUrl && profile.clientId) {
    await condition(() => refreshing === undefined);
    lastError = null;
    await revokeConnectionTokens({
      authUrl: profile.authUrl,
      clientId: profile.clientId,
      refreshToken: credentials.refreshToken,
    }).catch((error: unknown) => {
      lastError = revokeFailure(error);
    });
  }
  await condition(allHandlersFinished);
  return status();
}
