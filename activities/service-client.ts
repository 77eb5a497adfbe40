import { createClient, type Client as ServiceClient } from '../api/client.js';
import { apiKeyAuth, bearerAuth, legacyAppAuth, type ClientAuth } from '../api/auth.js';
import { AuthenticationError } from '../api/errors.js';
import type { IssuedCredentials } from '../workflows/connection-types.js';
import type { ConnectionTokens } from './connection-tokens.js';

export interface ServiceClientOptions {
  /** Extra certificate authority of the service (the sandbox's). */
  ca?: string | Buffer;
  /** Allow http:// to loopback (the sandbox with --http, development only). */
  allowInsecureLoopback?: boolean;
  /** EBS_ROUTE_OVERRIDES: assumed routes re-pointed. */
  routeOverrides?: Readonly<Record<string, string>>;
}

/**
 * The connection was reconnected (new credentials, perhaps another service address) since
 * this client was made: nothing more is sent with it, and the activity's next attempt gets a
 * client made with the new ones (worker/mirror-deps.ts).
 */
export class ConnectionChangedError extends Error {
  readonly retryable = true;
  constructor(connectionId: string) {
    super(
      `connection ${connectionId} was reconnected while this request was made; the next attempt uses its new credentials`,
    );
    this.name = 'ConnectionChangedError';
  }
}

/**
 * The service refused the connection's token, and the connection, still active, holds another
 * one now: the activity's next attempt uses it.
 */
export class TokenReplacedError extends Error {
  readonly retryable = true;
  constructor(connectionId: string) {
    super(
      `the service refused the access token of connection ${connectionId} and the connection has refreshed it since; the next attempt uses the new one`,
    );
    this.name = 'TokenReplacedError';
  }
}

/** The secret a 401 refused: what the workflow compares with the connection's current one. */
function secretOf(issued: IssuedCredentials): string {
  switch (issued.kind) {
    case 'oauth':
      return issued.accessToken;
    case 'apiKey':
      return issued.apiKey;
    case 'legacyApp':
      return issued.appSecret;
  }
}

/**
 * A service client whose credentials come from the connection workflow, through the
 * per-process token cache: an installed app's bearer token is asked for once per process and
 * re-asked once on a 401; keys are fetched once. A 401 that survives that fresh token (a key
 * has none) is reported to the connection workflow, which marks the connection
 * needs_reauth, so no sync of it sends a refused credential again. The original error is
 * then thrown on, for the activity's own failure handling.
 */
export async function clientForConnection(
  tokens: ConnectionTokens,
  connectionId: string,
  baseUrl: string,
  options: ServiceClientOptions = {},
): Promise<ServiceClient> {
  const first = await tokens.get(connectionId);
  const version = tokens.versionOf(connectionId);
  let lastIssued = first;
  let auth: ClientAuth;
  switch (first.kind) {
    case 'oauth':
      auth = bearerAuth(async (request) => {
        const issued = await tokens.get(connectionId, request);
        if (issued.kind !== 'oauth')
          throw new Error(`connection ${connectionId} no longer uses OAuth`);
        lastIssued = issued;
        return issued.accessToken;
      });
      break;
    case 'apiKey':
      auth = apiKeyAuth(first.apiKey);
      break;
    case 'legacyApp':
      auth = legacyAppAuth(first.appId, first.appSecret, first.franchiseId);
      break;
  }
  const client = createClient({
    baseUrl,
    auth,
    ...(options.ca ? { ca: options.ca } : {}),
    ...(options.allowInsecureLoopback ? { allowInsecureLoopback: true } : {}),
    ...(options.routeOverrides ? { routeOverrides: options.routeOverrides } : {}),
  });
  // Every operation goes through transport.call, and the client has no hook of its own for
  // "refused after the fresh token": wrapping the one method sees every call.
  const { transport } = client;
  const call = transport.call.bind(transport);
  transport.call = async (operation, callOptions) => {
    // A key's client is kept for a while (worker/mirror-deps.ts) and never asks for its key
    // again: before each call it asks the cache, which checks the connection's state every
    // 10 s, so a pause stops its requests as it stops a bearer token's. Nothing is sent while
    // paused: the activity waits, as one started paused does.
    // The same check sees a reconnect (within the cache's 10 s), and then nothing more goes
    // out with the old key or to the old address.
    await tokens.get(connectionId);
    if (tokens.versionOf(connectionId) !== version) throw new ConnectionChangedError(connectionId);
    try {
      return await call(operation, callOptions);
    } catch (error) {
      if (error instanceof AuthenticationError) {
        // If the report itself fails, the refusal still reaches the activity below.
        const status = await tokens
          .reject(connectionId, secretOf(lastIssued))
          .catch(() => undefined);
        // Refused, yet the connection is active: its credentials were replaced (a reconnect),
        // or its token was (a refresh ahead of expiry that a service with a clock ahead of
        // ours already calls expired, then the refresh this refusal asked for). Nothing for a
        // person to do: the next attempt uses what the connection holds now. A token that was
        // itself fresh from such a refresh and refused too makes the workflow mark the
        // connection needs_reauth instead, so this is never a loop.
        if (status?.state === 'active') {
          throw (status.credentialsVersion ?? 0) !== (version ?? 0)
            ? new ConnectionChangedError(connectionId)
            : new TokenReplacedError(connectionId);
        }
      }
      throw error;
    }
  };
  return client;
}
