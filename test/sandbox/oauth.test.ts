import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSandbox, type RawResponse, type TestSandbox } from '../helpers/sandbox.js';

const REDIRECT = 'http://127.0.0.1:9/callback';

let t: TestSandbox;
beforeAll(async () => {
  t = await startTestSandbox();
});
afterAll(async () => {
  expect(t.internalErrors).toEqual([]);
  await t.close();
});

function newApp(permissions: string[] = ['offerings_read', 'lead_read']) {
  return t.sb.admin.createApp({ name: 'Booth Designer', redirectUris: [REDIRECT], permissions });
}

function form(path: string, params: Record<string, string>): Promise<RawResponse> {
  return t.request('POST', path, {
    key: null,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    text: new URLSearchParams(params).toString(),
  });
}

/** GET /oauth/authorize without following the redirect. */
async function authorize(params: Record<string, string>): Promise<Response> {
  return fetch(`${t.sb.authUrl}/oauth/authorize?${new URLSearchParams(params).toString()}`, {
    redirect: 'manual',
  });
}

function redirectParams(response: Response): URLSearchParams {
  const location = response.headers.get('location');
  if (!location) throw new Error(`no redirect (status ${response.status})`);
  expect(location.startsWith(REDIRECT)).toBe(true);
  return new URL(location).searchParams;
}

async function pkce() {
  const verifier = oauth.generateRandomCodeVerifier();
  return { verifier, challenge: await oauth.calculatePKCECodeChallenge(verifier) };
}

function authorizeParams(clientId: string, challenge: string, state = 'st-123') {
  return {
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state,
  };
}

async function withAutoApprove<T>(fn: () => Promise<T>): Promise<T> {
  t.sb.admin.setOAuthSettings({ autoApprove: true });
  try {
    return await fn();
  } finally {
    t.sb.admin.setOAuthSettings({ autoApprove: false });
  }
}

async function codeFor(clientId: string, challenge: string): Promise<string> {
  return withAutoApprove(async () => {
    const res = await authorize(authorizeParams(clientId, challenge));
    expect(res.status).toBe(302);
    const params = redirectParams(res);
    expect(params.get('state')).toBe('st-123');
    const code = params.get('code');
    if (!code) throw new Error('no code in redirect');
    return code;
  });
}

function exchange(clientId: string, code: string, verifier: string) {
  return form('/oauth/token', {
    grant_type: 'authorization_code',
    code,
    redirect_uri: REDIRECT,
    client_id: clientId,
    code_verifier: verifier,
  });
}

function refresh(clientId: string, refreshToken: string) {
  return form('/oauth/token', {
    grant_type: 'refresh_token',
    refresh_token: refreshToken,
    client_id: clientId,
  });
}

async function connect(permissions?: string[]) {
  const app = newApp(permissions);
  const { verifier, challenge } = await pkce();
  const code = await codeFor(app.client_id, challenge);
  const res = await exchange(app.client_id, code, verifier);
  expect(res.status).toBe(200);
  return { app, tokens: res.body as Record<string, any> };
}

describe('authorization code flow with PKCE', () => {
  it('accepts the RFC 7636 appendix B verifier for its challenge', async () => {
    // The appendix's verifier is the base64url of its 32 listed octets.
    const verifier = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
    const challenge = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';
    const app = newApp();
    const code = await codeFor(app.client_id, challenge);
    const res = await exchange(app.client_id, code, verifier);
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toEqual({
      access_token: expect.any(String),
      token_type: 'Bearer',
      expires_in: 3600,
      refresh_token: expect.any(String),
      scope: 'offerings_read lead_read',
    });
  });

  it('completes the flow with autoApprove and the token calls the API', async () => {
    const before = t.sb.ctx.counters.tokenGrants;
    const { tokens } = await connect();
    expect(t.sb.ctx.counters.tokenGrants).toBe(before + 1);
    const res = await t.request('GET', '/api/v1/services', { bearer: tokens.access_token });
    expect(res.status).toBe(200);
    expect(res.body.meta.status).toBe('ok');
  });

  it('shows an approve page listing the permissions, and Approve redirects with a code', async () => {
    const app = newApp(['offerings_read', 'expense_read']);
    const { verifier, challenge } = await pkce();
    const page = await authorize(authorizeParams(app.client_id, challenge, 'abc'));
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    const html = await page.text();
    expect(html).toContain('Booth Designer');
    expect(html).toContain('offerings_read');
    expect(html).toContain('expense_read');
    const requestId = /name="request_id" value="([^"]+)"/.exec(html)?.[1];
    expect(requestId).toBeTruthy();

    const approved = await fetch(`${t.sb.authUrl}/oauth/authorize`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ request_id: requestId ?? '', decision: 'approve' }).toString(),
    });
    expect(approved.status).toBe(303);
    const params = redirectParams(approved);
    expect(params.get('state')).toBe('abc');
    const res = await exchange(app.client_id, params.get('code') ?? '', verifier);
    expect(res.status).toBe(200);
    expect(res.body.scope).toBe('offerings_read expense_read');

    // The request id is single use.
    const again = await fetch(`${t.sb.authUrl}/oauth/authorize`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ request_id: requestId ?? '', decision: 'approve' }).toString(),
    });
    expect(again.status).toBe(400);
  });

  it('Cancel redirects with access_denied and the state', async () => {
    const app = newApp();
    const { challenge } = await pkce();
    const html = await (await authorize(authorizeParams(app.client_id, challenge, 'xyz'))).text();
    const requestId = /name="request_id" value="([^"]+)"/.exec(html)?.[1] ?? '';
    const res = await fetch(`${t.sb.authUrl}/oauth/authorize`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ request_id: requestId, decision: 'cancel' }).toString(),
    });
    const params = redirectParams(res);
    expect(params.get('error')).toBe('access_denied');
    expect(params.get('state')).toBe('xyz');
    expect(params.get('code')).toBeNull();
  });

  it('shows errors on the page for an unknown client or unregistered redirect_uri', async () => {
    const app = newApp();
    const { challenge } = await pkce();
    const badClient = await authorize({ ...authorizeParams('nope', challenge) });
    expect(badClient.status).toBe(400);
    expect(badClient.headers.get('location')).toBeNull();
    const badRedirect = await authorize({
      ...authorizeParams(app.client_id, challenge),
      redirect_uri: 'https://evil.example/cb',
    });
    expect(badRedirect.status).toBe(400);
    expect(badRedirect.headers.get('location')).toBeNull();
    expect(await badClient.text()).toContain('does not name a registered app');
  });

  it('says a repeated client_id or redirect_uri is repeated, not unknown, and redirects nowhere', async () => {
    const app = newApp();
    const { challenge } = await pkce();
    for (const name of ['client_id', 'redirect_uri'] as const) {
      const query = new URLSearchParams(authorizeParams(app.client_id, challenge));
      query.append(name, query.get(name)!);
      const res = await fetch(`${t.sb.authUrl}/oauth/authorize?${query.toString()}`, {
        redirect: 'manual',
      });
      expect(res.status).toBe(400);
      expect(res.headers.get('location')).toBeNull();
      const text = await res.text();
      expect(text).toContain(`The ${name} is given more than once; give it once.`);
      expect(text).not.toContain('registered');
    }
  });

  it('redirects other authorize errors with error and state', async () => {
    const app = newApp();
    const { challenge, verifier } = await pkce();
    const plain = redirectParams(
      await authorize({
        ...authorizeParams(app.client_id, verifier),
        code_challenge_method: 'plain',
      }),
    );
    expect(plain.get('error')).toBe('invalid_request');
    expect(plain.get('state')).toBe('st-123');
    for (const left of ['code_challenge_method', 'code_challenge']) {
      const params = Object.entries(authorizeParams(app.client_id, challenge)).filter(
        ([name]) => name !== left,
      );
      const res = await authorize(Object.fromEntries(params));
      expect(redirectParams(res).get('error')).toBe('invalid_request');
    }
    const token = redirectParams(
      await authorize({ ...authorizeParams(app.client_id, challenge), response_type: 'token' }),
    );
    expect(token.get('error')).toBe('unsupported_response_type');
  });

  it('installs for the user named by login_hint', async () => {
    const { business, owner } = t.sb.admin.createBusiness({ name: 'Other Booths' });
    const app = newApp();
    const { verifier, challenge } = await pkce();
    const code = await withAutoApprove(async () => {
      const res = await authorize({
        ...authorizeParams(app.client_id, challenge),
        login_hint: String(owner.id),
      });
      return redirectParams(res).get('code') ?? '';
    });
    expect((await exchange(app.client_id, code, verifier)).status).toBe(200);
    const grants = t.sb.admin.grants({ appId: app.id });
    expect(grants.map((g) => g.business_id)).toEqual([business.id]);
  });
});

describe('with a standard client (oauth4webapi)', () => {
  it('exchanges, refreshes and revokes through oauth4webapi requests', async () => {
    const registered = newApp(['offerings_read']);
    const as: oauth.AuthorizationServer = {
      issuer: t.sb.authUrl,
      authorization_endpoint: `${t.sb.authUrl}/oauth/authorize`,
      token_endpoint: `${t.sb.authUrl}/oauth/token`,
      revocation_endpoint: `${t.sb.authUrl}/oauth/revoke`,
    };
    const client: oauth.Client = { client_id: registered.client_id };
    const options = { [oauth.allowInsecureRequests]: true };
    const { verifier, challenge } = await pkce();
    const code = await codeFor(registered.client_id, challenge);
    const params = oauth.validateAuthResponse(
      as,
      client,
      new URLSearchParams({ code }),
      oauth.skipStateCheck,
    );
    const exchanged = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(
        as,
        client,
        oauth.None(),
        params,
        REDIRECT,
        verifier,
        options,
      ),
    );
    expect(exchanged.token_type).toBe('bearer');
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(
        as,
        client,
        oauth.None(),
        exchanged.refresh_token ?? '',
        options,
      ),
    );
    expect(refreshed.refresh_token).not.toBe(exchanged.refresh_token);
    await oauth.processRevocationResponse(
      await oauth.revocationRequest(
        as,
        client,
        oauth.None(),
        refreshed.refresh_token ?? '',
        options,
      ),
    );
    const res = await t.request('GET', '/api/v1/services', { bearer: refreshed.access_token });
    expect(res.body.reason).toBe('app_disconnected');
  });
});

describe('token endpoint errors', () => {
  it('rejects a wrong verifier with invalid_grant, and the code is then spent', async () => {
    const app = newApp();
    const { verifier, challenge } = await pkce();
    const code = await codeFor(app.client_id, challenge);
    const wrong = await exchange(app.client_id, code, oauth.generateRandomCodeVerifier());
    expect(wrong.status).toBe(400);
    expect(wrong.body).toEqual({ error: 'invalid_grant', error_description: expect.any(String) });
    expect((await exchange(app.client_id, code, verifier)).body.error).toBe('invalid_grant');
  });

  it('rejects a reused code with invalid_grant and revokes what it issued', async () => {
    const app = newApp();
    const { verifier, challenge } = await pkce();
    const code = await codeFor(app.client_id, challenge);
    const first = await exchange(app.client_id, code, verifier);
    expect(first.status).toBe(200);
    const second = await exchange(app.client_id, code, verifier);
    expect(second.status).toBe(400);
    expect(second.body.error).toBe('invalid_grant');
    const api = await t.request('GET', '/api/v1/services', { bearer: first.body.access_token });
    expect(api.status).toBe(401);
  });

  it('rejects an expired code', async () => {
    const app = newApp();
    const { verifier, challenge } = await pkce();
    const code = await codeFor(app.client_id, challenge);
    t.sb.ctx.clock.advance(61_000);
    expect((await exchange(app.client_id, code, verifier)).body.error).toBe('invalid_grant');
  });

  it('answers invalid_request, invalid_client and unsupported_grant_type', async () => {
    const app = newApp();
    const missing = await form('/oauth/token', { grant_type: 'authorization_code' });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toBe('invalid_request');
    expect((await form('/oauth/token', {})).body.error).toBe('invalid_request');
    const unknown = await form('/oauth/token', {
      grant_type: 'refresh_token',
      refresh_token: 'x',
      client_id: 'nope',
    });
    expect(unknown.status).toBe(401);
    expect(unknown.body.error).toBe('invalid_client');
    const password = await form('/oauth/token', {
      grant_type: 'password',
      client_id: app.client_id,
    });
    expect(password.status).toBe(400);
    expect(password.body.error).toBe('unsupported_grant_type');
    const badRefresh = await refresh(app.client_id, 'ert_unknown');
    expect(badRefresh.body.error).toBe('invalid_grant');
  });

  it('answers an RFC 6749 error for malformed JSON too', async () => {
    const res = await t.request('POST', '/oauth/token', {
      key: null,
      headers: { 'content-type': 'application/json' },
      text: '{bad',
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
  });
});

describe('refresh token rotation', () => {
  it('returns a new access and refresh token; the old refresh token dies', async () => {
    const { app, tokens } = await connect();
    const before = t.sb.ctx.counters.tokenRefreshes;
    const next = await refresh(app.client_id, tokens.refresh_token);
    expect(next.status).toBe(200);
    expect(next.body.refresh_token).not.toBe(tokens.refresh_token);
    expect(next.body.access_token).not.toBe(tokens.access_token);
    expect(t.sb.ctx.counters.tokenRefreshes).toBe(before + 1);
    const api = await t.request('GET', '/api/v1/services', { bearer: next.body.access_token });
    expect(api.status).toBe(200);
    const third = await refresh(app.client_id, next.body.refresh_token);
    expect(third.status).toBe(200);
  });

  it('revokes the whole grant when a rotated refresh token comes back', async () => {
    const { app, tokens } = await connect();
    const newest = await refresh(app.client_id, tokens.refresh_token);
    expect(newest.status).toBe(200);
    const counters = { ...t.sb.admin.counters() };
    const replay = await refresh(app.client_id, tokens.refresh_token);
    expect(replay.status).toBe(400);
    expect(replay.body.error).toBe('invalid_grant');
    const after = t.sb.admin.counters();
    expect(after.refresh_token_reuse).toBe(counters.refresh_token_reuse + 1);
    expect(after.grants_revoked).toBe(counters.grants_revoked + 1);
    const api = await t.request('GET', '/api/v1/services', { bearer: newest.body.access_token });
    expect(api.status).toBe(401);
    expect(api.body).toMatchObject({ meta: { status: 'error' }, reason: 'app_disconnected' });
    expect((await refresh(app.client_id, newest.body.refresh_token)).body.error).toBe(
      'invalid_grant',
    );
  });

  it('rejects a refresh token presented by another client', async () => {
    const { tokens } = await connect();
    const other = newApp();
    expect((await refresh(other.client_id, tokens.refresh_token)).body.error).toBe('invalid_grant');
  });
});

describe('token lifetime, disconnect and revocation', () => {
  it('expires the access token after expires_in (clock advanced), refresh still works', async () => {
    const { app, tokens } = await connect();
    t.sb.ctx.clock.advance(3600 * 1000);
    const res = await t.request('GET', '/api/v1/services', { bearer: tokens.access_token });
    expect(res.status).toBe(401);
    expect(res.body.reason).toBe('token_expired');
    const next = await refresh(app.client_id, tokens.refresh_token);
    expect(next.status).toBe(200);
    expect(
      (await t.request('GET', '/api/v1/services', { bearer: next.body.access_token })).status,
    ).toBe(200);
  });

  it('answers 401 app_disconnected after the customer disconnects', async () => {
    const { app, tokens } = await connect();
    expect(
      (await t.request('GET', '/api/v1/services', { bearer: tokens.access_token })).status,
    ).toBe(200);
    const [grant] = t.sb.admin.grants({ appId: app.id });
    t.sb.admin.disconnect(grant?.id ?? 0);
    const res = await t.request('GET', '/api/v1/services', { bearer: tokens.access_token });
    expect(res.status).toBe(401);
    expect(res.body.reason).toBe('app_disconnected');
    expect((await refresh(app.client_id, tokens.refresh_token)).body.error).toBe('invalid_grant');
  });

  it('revokes per RFC 7009: 200 for unknown tokens, access token alone, refresh token all', async () => {
    const { app, tokens } = await connect();
    expect((await form('/oauth/revoke', { token: 'nope', client_id: app.client_id })).status).toBe(
      200,
    );
    expect(
      (await form('/oauth/revoke', { token: tokens.access_token, client_id: app.client_id }))
        .status,
    ).toBe(200);
    const revoked = await t.request('GET', '/api/v1/services', { bearer: tokens.access_token });
    expect(revoked.status).toBe(401);
    expect(revoked.body.reason).toBe('token_revoked');
    const next = await refresh(app.client_id, tokens.refresh_token);
    expect(next.status).toBe(200);
    await form('/oauth/revoke', { token: next.body.refresh_token, client_id: app.client_id });
    const gone = await t.request('GET', '/api/v1/services', { bearer: next.body.access_token });
    expect(gone.body.reason).toBe('app_disconnected');
    expect((await form('/oauth/revoke', { client_id: app.client_id })).body.error).toBe(
      'invalid_request',
    );
  });

  it('limits a bearer token to the granted scope (403 outside it)', async () => {
    const narrow = await connect(['lead_read']);
    const res = await t.request('GET', '/api/v1/services', { bearer: narrow.tokens.access_token });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ meta: { status: 'error' }, reason: 'permission_denied' });
    const wide = await connect(['offerings_read']);
    expect(
      (await t.request('GET', '/api/v1/services', { bearer: wide.tokens.access_token })).status,
    ).toBe(200);
  });

  it('accepts the legacy App-Id/App-Secret of an installed app', async () => {
    const app = newApp(['offerings_read']);
    const headers = {
      'app-id': app.legacy_app_id ?? '',
      'app-secret': app.legacy_app_secret,
      'franchise-id': String(t.sb.businessId),
    };
    const before = await t.request('GET', '/api/v1/services', { key: null, headers });
    expect(before.status).toBe(401);
    expect(before.body.reason).toBe('app_not_installed');
    t.sb.admin.install({ appId: app.id });
    expect((await t.request('GET', '/api/v1/services', { key: null, headers })).status).toBe(200);
  });
});
