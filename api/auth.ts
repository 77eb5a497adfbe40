/**
 * The three credentials of the spec. A bearer token comes from a provider function, so the
 * connection's token owner (one per connection) can hand out and refresh tokens; on a 401
 * the client asks it once for a newer token, naming the one that was refused.
 */
export interface TokenRequest {
  /** The token the service just refused (401); the provider must not hand it out again. */
  rejectedToken?: string;
}

export type ClientAuth =
  | { kind: 'apiKey'; apiKey: string }
  | { kind: 'bearer'; getToken: (request: TokenRequest) => Promise<string> }
  | { kind: 'legacyApp'; appId: string; appSecret: string; franchiseId?: string | number };

export function apiKeyAuth(apiKey: string): ClientAuth {
  return { kind: 'apiKey', apiKey };
}

export function bearerAuth(getToken: (request: TokenRequest) => Promise<string>): ClientAuth {
  return { kind: 'bearer', getToken };
}

export function legacyAppAuth(
  appId: string,
  appSecret: string,
  franchiseId?: string | number,
): ClientAuth {
  return franchiseId === undefined
    ? { kind: 'legacyApp', appId, appSecret }
    : { kind: 'legacyApp', appId, appSecret, franchiseId };
}

/** Headers carrying the credential; the bearer token is returned to recognise a refusal. */
export async function authHeaders(
  auth: ClientAuth,
  request: TokenRequest = {},
): Promise<{ headers: Record<string, string>; token?: string }> {
  switch (auth.kind) {
    case 'apiKey':
      return { headers: { 'api-key': auth.apiKey } };
    case 'bearer': {
      const token = await auth.getToken(request);
      return { headers: { authorization: `Bearer ${token}` }, token };
    }
    case 'legacyApp': {
      const headers: Record<string, string> = {
        'app-id': auth.appId,
        'app-secret': auth.appSecret,
      };
      if (auth.franchiseId !== undefined) headers['franchise-id'] = String(auth.franchiseId);
      return { headers };
    }
  }
}
