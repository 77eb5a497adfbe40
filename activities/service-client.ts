import { createClient, type Client as ServiceClient } from '../api/client.js';
import { apiKeyAuth, bearerAuth, legacyAppAuth } from '../api/auth.js';
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
 * A service client whose credentials come from the connection workflow, through the
 * per-process token cache: an installed app's bearer token is asked for once per process and
 * re-asked once on a 401; keys are fetched once.
 */
export async function clientForConnection(
  tokens: ConnectionTokens,
  connectionId: string,
  baseUrl: string,
  options: ServiceClientOptions = {},
): Promise<ServiceClient> {
  const first = await tokens.get(connectionId);
  const common = {
    baseUrl,
    ...(options.ca ? { ca: options.ca } : {}),
    ...(options.allowInsecureLoopback ? { allowInsecureLoopback: true } : {}),
    ...(options.routeOverrides ? { routeOverrides: options.routeOverrides } : {}),
  };
  switch (first.kind) {
    case 'oauth':
      return createClient({
        ...common,
        auth: bearerAuth(async (request) => {
          const issued = await tokens.get(connectionId, request);
          if (issued.kind !== 'oauth')
            throw new Error(`connection ${connectionId} no longer uses OAuth`);
          return issued.accessToken;
        }),
      });
    case 'apiKey':
      return createClient({ ...common, auth: apiKeyAuth(first.apiKey) });
    case 'legacyApp':
      return createClient({
        ...common,
        auth: legacyAppAuth(first.appId, first.appSecret, first.franchiseId),
      });
  }
}
