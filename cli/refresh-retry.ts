import type { Client } from '@temporalio/client';
import { connectionWorkflowId, type ConnectionStatus } from '../workflows/connection-types.js';
import { retryOf } from './pass-retry.js';

/**
 * A refresh is due this long before its token expires at the latest (the connection
 * workflow's lead is at most 5 min): from then on, a failing refresh is worth a look.
 */
const REFRESH_DUE_MS = 5 * 60_000;

/**
 * A connection whose refresh keeps failing (the authorization server away) stays `active`
 * while the refresh activity retries, about 90 s, before the workflow says "refresh failed":
 * the listing showed an expired token and no error meanwhile. Its workflow's description has
 * the retries (attempt, last failure), so a connection whose refresh is due is shown with
 * them as its last error. Only those are described: one call each, none for the rest.
 */
export async function withRefreshRetry(
  client: Client,
  status: ConnectionStatus,
  now = Date.now(),
): Promise<ConnectionStatus> {
  const expiresAt = status.accessExpiresAt;
  if (status.state !== 'active' || expiresAt === undefined || expiresAt - now > REFRESH_DUE_MS) {
    return status;
  }
  const description = await client.workflow
    .getHandle(connectionWorkflowId(status.connectionId))
    .describe()
    .catch(() => undefined);
  const retry = description && (await retryOf(description, client.options.loadedDataConverter));
  if (!retry || retry.activity !== 'refreshConnectionTokens') return status;
  const token =
    expiresAt <= now
      ? `its access token expired at ${new Date(expiresAt).toISOString()}`
      : `its access token expires at ${new Date(expiresAt).toISOString()}`;
  return {
    ...status,
    lastError: `refresh failed ${retry.attempt - 1} ${retry.attempt === 2 ? 'time' : 'times'} in a row, retrying: ${retry.reason}; ${token}`,
  };
}
