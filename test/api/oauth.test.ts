import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import got from 'got';
import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  apiKeyAuth,
  AuthorizationCallbackError,
  authorizationRequest,
  bearerAuth,
  createClient,
  exchangeCode,
  InvalidGrantError,
  OAuthError,
  OAuthUnavailableError,
  refreshTokens,
  revokeToken,
  validateCallback,
  AuthenticationError,
} from '../../api/index.js';
import { startSandbox, type Sandbox } from '../../sandbox/server.js';

describe('PKCE and the authorize URL', () => {
  it('computes the RFC 7636 appendix B challenge through oauth4webapi', async () => {
    // Appendix B's verifier is the base64url of these 32 octets.
    const octets = [
      116, 24, 223, 180, 151, 153, 224, 37, 79, 250, 96, 125, 216, 173, 187, 186, 22, 212, 37, 77,
      105, 214, 191, 240, 91, 88, 5, 88, 83, 132, 141, 121,
    ];
    const verifier = Buffer.from(octets).toString('base64url');
    expect(verifier).toBe('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk');
    expect(await oauth.calculatePKCECodeChallenge(verifier)).toBe(
      'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    );
  });

  it('builds the authorize URL with every parameter of the spec, S256 and a random state', async () => {
    const request = await authorizationRequest({
      authUrl: 'https://auth.example.com',
      clientId: 'client-1',
      redirectUri: 'https://app.example/callback',
      scope: ['lead_read', 'lead_write'],
    });
    expect(request.url.origin + request.url.pathname).toBe(
      'https://auth.example.com/oauth/authorize',
    );
    const p = request.url.searchParams;
    expect(p.get('response_type')).toBe('code');
    expect(p.get('client_id')).toBe('client-1');
    expect(p.get('redirect_uri')).toBe('https://app.example/callback');
    expect(p.get('code_challenge_method')).toBe('S256');
    expect(p.get('code_challenge')).toBe(
      await oauth.calculatePKCECodeChallenge(request.codeVerifier),
    );
    expect(p.get('state')).toBe(request.state);
    expect(p.get('scope')).toBe('lead_read lead_write');
    expect(request.codeVerifier).toMatch(/^[A-Za-z0-9_-]{43,128}$/);
    // The verifier is a secret: it never goes into the URL.
    expect(request.url.toString()).not.toContain(request.codeVerifier);
    const other = await authorizationRequest({
      authUrl: 'https://auth.example.com',
      clientId: 'c',
      redirectUri: 'https://a/cb',
    });
    expect(other.state).not.toBe(request.state);
    expect(other.codeVerifier).not.toBe(request.codeVerifier);
  });

  it('refuses plain http except on loopback', async () => {
    await expect(
      authorizationRequest({
        authUrl: 'http://auth.example.com',
        clientId: 'c',
        redirectUri: 'https://a/cb',
      }),
    ).rejects.toBeInstanceOf(OAuthError);
    await expect(
      authorizationRequest({
        authUrl: 'http://127.0.0.1:9',
        clientId: 'c',
        redirectUri: 'https://a/cb',
      }),
    ).resolves.toBeDefined();
  });

  it('validates the callback: state must match, error parameters are typed', () => {
    const authUrl = 'https://auth.example.com';
    expect(
      validateCallback({
        authUrl,
        clientId: 'c',
        callback: 'https://a/cb?code=abc&state=s1',
        expectedState: 's1',
      }),
    ).toEqual({
      code: 'abc',
    });
    const mismatch = (() => {
      try {
        validateCallback({
          authUrl,
          clientId: 'c',
          callback: 'https://a/cb?code=abc&state=evil',
          expectedState: 's1',
        });
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(mismatch).toBeInstanceOf(AuthorizationCallbackError);
    expect((mismatch as Error).message).not.toContain('abc');
    let denied: unknown;
    try {
      validateCallback({
        authUrl,
        clientId: 'c',
        callback: new URLSearchParams({
          error: 'access_denied',
          error_description: 'The customer cancelled',
          state: 's1',
        }),
        expectedState: 's1',
      });
    } catch (e) {
      denied = e;
    }
    expect(denied).toBeInstanceOf(AuthorizationCallbackError);
    expect((denied as AuthorizationCallbackError).error).toBe('access_denied');
  });
});

describe('token endpoint failures', () => {
  let server: Server;
  let base = '';
  let answer: { status: number; body: string; type: string } = {
    status: 503,
    body: '',
    type: 'text/html',
  };
  beforeAll(async () => {
    server = createServer((_req, res) => {
      res.writeHead(answer.status, { 'content-type': answer.type, 'retry-after': '4' });
      res.end(answer.body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('5xx (with or without an OAuth body) is retryable; invalid_grant is not; no secret in messages', async () => {
    answer = { status: 503, body: '<h1>down</h1>', type: 'text/html' };
    const down = await refreshTokens({
      authUrl: base,
      clientId: 'c',
      refreshToken: 'ert_secret_value',
    }).catch((e: unknown) => e);
    expect(down).toBeInstanceOf(OAuthUnavailableError);
    expect((down as OAuthUnavailableError).retryable).toBe(true);
    expect((down as Error).message).not.toContain('ert_secret_value');

    answer = {
      status: 503,
      body: JSON.stringify({ error: 'temporarily_unavailable' }),
      type: 'application/json',
    };
    const busy = await refreshTokens({
      authUrl: base,
      clientId: 'c',
      refreshToken: 'ert_secret_value',
    }).catch((e: unknown) => e);
    expect(busy).toBeInstanceOf(OAuthUnavailableError);
    expect((busy as OAuthUnavailableError).retryAfterMs).toBe(4000);

    answer = {
      status: 400,
      body: JSON.stringify({ error: 'invalid_grant', error_description: 'gone' }),
      type: 'application/json',
    };
    const dead = await refreshTokens({
      authUrl: base,
      clientId: 'c',
      refreshToken: 'ert_secret_value',
    }).catch((e: unknown) => e);
    expect(dead).toBeInstanceOf(InvalidGrantError);
    expect((dead as InvalidGrantError).retryable).toBe(false);
    expect((dead as Error).message).not.toContain('ert_secret_value');

    answer = {
      status: 400,
      body: JSON.stringify({ error: 'invalid_request' }),
      type: 'application/json',
    };
    const bad = await revokeToken({ authUrl: base, clientId: 'c', token: 'eat_x' }).catch(
      (e: unknown) => e,
    );
    expect(bad).toBeInstanceOf(OAuthError);
    expect(bad).not.toBeInstanceOf(InvalidGrantError);
    expect((bad as OAuthError).retryable).toBe(false);
  });

  it('a closed port is a retryable OAuthUnavailableError', async () => {
    const closed = await exchangeCode({
      authUrl: 'http://127.0.0.1:9',
      clientId: 'c',
      code: 'eac_code',
      redirectUri: 'https://a/cb',
      codeVerifier: 'v'.repeat(43),
    }).catch((e: unknown) => e);
    expect(closed).toBeInstanceOf(OAuthUnavailableError);
    expect((closed as Error).message).not.toContain('eac_code');
  });
});

describe('against the sandbox OAuth server', () => {
  let sb: Sandbox;
  let ca: Buffer;
  const redirectUri = 'https://studio.example/callback';
  beforeAll(async () => {
    sb = await startSandbox({ autoApprove: true });
    ca = readFileSync(sb.caFile ?? '');
  });
  afterAll(async () => {
    await sb?.close();
  });

  async function connect(clientId: string) {
    const request = await authorizationRequest({ authUrl: sb.authUrl, clientId, redirectUri });
    const redirect = await got(request.url, {
      https: { certificateAuthority: ca },
      followRedirect: false,
      throwHttpErrors: false,
    });
    expect(redirect.statusCode).toBe(302);
    const location = redirect.headers.location ?? '';
    const { code } = validateCallback({
      authUrl: sb.authUrl,
      clientId,
      callback: location,
      expectedState: request.state,
    });
    return { request, code };
  }

  it('exchanges a code, calls the API with the token, refreshes with rotation and revokes', async () => {
    const app = sb.admin.createApp({
      name: 'Studio',
      redirectUris: [redirectUri],
      permissions: ['lead_read', 'lead_create'],
    });
    const { request, code } = await connect(app.client_id);
    const before = Date.now();
    const tokens = await exchangeCode({
      authUrl: sb.authUrl,
      clientId: app.client_id,
      code,
      redirectUri,
      codeVerifier: request.codeVerifier,
      ca,
    });
    expect(tokens.scope.sort()).toEqual(['lead_create', 'lead_read']);
    expect(tokens.expiresAt).toBeGreaterThanOrEqual(before + 3600_000 - 1000);
    expect(tokens.expiresAt).toBeLessThanOrEqual(Date.now() + 3600_000);

    let accessToken = tokens.accessToken;
    const client = createClient({
      baseUrl: sb.baseUrl,
      auth: bearerAuth(() => Promise.resolve(accessToken)),
      ca,
    });
    expect((await client.leads.list()).meta.status).toBe('ok');

    // A code works once.
    const replay = await exchangeCode({
      authUrl: sb.authUrl,
      clientId: app.client_id,
      code,
      redirectUri,
      codeVerifier: request.codeVerifier,
      ca,
    }).catch((e: unknown) => e);
    expect(replay).toBeInstanceOf(InvalidGrantError);

    const app2 = sb.admin.createApp({
      name: 'Studio 2',
      redirectUris: [redirectUri],
      permissions: ['lead_read'],
    });
    const second = await connect(app2.client_id);
    const first = await exchangeCode({
      authUrl: sb.authUrl,
      clientId: app2.client_id,
      code: second.code,
      redirectUri,
      codeVerifier: second.request.codeVerifier,
      ca,
    });
    const rotated = await refreshTokens({
      authUrl: sb.authUrl,
      clientId: app2.client_id,
      refreshToken: first.refreshToken,
      ca,
    });
    expect(rotated.refreshToken).not.toBe(first.refreshToken);
    expect(rotated.accessToken).not.toBe(first.accessToken);
    accessToken = rotated.accessToken;
    // The old refresh token stops working: invalid_grant, the error the connection workflow acts on.
    const reused = await refreshTokens({
      authUrl: sb.authUrl,
      clientId: app2.client_id,
      refreshToken: first.refreshToken,
      ca,
    }).catch((e: unknown) => e);
    expect(reused).toBeInstanceOf(InvalidGrantError);

    // Revoking the first app's access token: the next call is 401.
    await revokeToken({
      authUrl: sb.authUrl,
      clientId: app.client_id,
      token: tokens.accessToken,
      ca,
    });
    const revokedClient = createClient({
      baseUrl: sb.baseUrl,
      auth: bearerAuth(() => Promise.resolve(tokens.accessToken)),
      ca,
    });
    expect(await revokedClient.leads.list().catch((e: unknown) => e)).toBeInstanceOf(
      AuthenticationError,
    );
    // Revoking its refresh token disconnects the app: refreshing is invalid_grant.
    await revokeToken({
      authUrl: sb.authUrl,
      clientId: app.client_id,
      token: tokens.refreshToken,
      tokenTypeHint: 'refresh_token',
      ca,
    });
    const afterRevoke = await refreshTokens({
      authUrl: sb.authUrl,
      clientId: app.client_id,
      refreshToken: tokens.refreshToken,
      ca,
    }).catch((e: unknown) => e);
    expect(afterRevoke).toBeInstanceOf(InvalidGrantError);
    // Revoking an unknown token is fine (RFC 7009).
    await expect(
      revokeToken({ authUrl: sb.authUrl, clientId: app.client_id, token: 'eat_unknown', ca }),
    ).resolves.toBeUndefined();
  });

  it('a wrong code verifier is invalid_grant, an unknown client is a non-retryable OAuthError', async () => {
    const app = sb.admin.createApp({
      name: 'Verifier',
      redirectUris: [redirectUri],
      permissions: ['lead_read'],
    });
    const { code } = await connect(app.client_id);
    const wrong = await exchangeCode({
      authUrl: sb.authUrl,
      clientId: app.client_id,
      code,
      redirectUri,
      codeVerifier: oauth.generateRandomCodeVerifier(),
      ca,
    }).catch((e: unknown) => e);
    expect(wrong).toBeInstanceOf(InvalidGrantError);

    const unknown = await refreshTokens({
      authUrl: sb.authUrl,
      clientId: 'ebc_nobody',
      refreshToken: 'ert_x',
      ca,
    }).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(OAuthError);
    expect(unknown).not.toBeInstanceOf(InvalidGrantError);
    expect((unknown as OAuthError).retryable).toBe(false);
    expect((unknown as OAuthError).error).toBe('invalid_client');
  });

  it('without the sandbox CA the TLS handshake fails, retryably for a refresh, naming EBS_CA_FILE', async () => {
    const failed = await refreshTokens({
      authUrl: sb.authUrl,
      clientId: 'c',
      refreshToken: 'ert_x',
    }).catch((e: unknown) => e);
    // A refresh keeps being retried (the grant is not given up for a setting that may be
    // fixed), but says what to set.
    expect(failed).toBeInstanceOf(OAuthUnavailableError);
    expect((failed as OAuthUnavailableError).message).toMatch(
      /^token refresh failed: the service's certificate is not trusted by this process \(\w+\): set EBS_CA_FILE /,
    );
    // And the API client refuses too, at once: the key works only with the CA.
    const noCa = createClient({ baseUrl: sb.baseUrl, auth: apiKeyAuth(sb.apiKey) });
    await expect(noCa.leads.list()).rejects.toMatchObject({
      name: 'TlsTrustError',
      retryable: false,
    });
  });
});
