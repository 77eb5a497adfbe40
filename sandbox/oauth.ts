import { randomBytes } from 'node:crypto';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { calculatePKCECodeChallenge } from 'oauth4webapi';
import { OAUTH_PATHS } from '../api/routes.js';
import { hashSecret, randomToken } from './auth.js';
import type { SandboxContext } from './context.js';

/**
 * The sandbox's OAuth 2.1 authorization server for installed apps: authorization code with
 * PKCE S256 (no client secret), rotating refresh tokens with reuse detection, RFC 7009
 * revocation. Only sha256 hashes of codes and tokens are stored.
 *
 * The installing business and user: `login_hint=<user id>` on the authorize request, else
 * the admin's "installing user" setting, else the default business's owner.
 */

/** Authorization codes live one minute; the spec does not say (RFC 6749 suggests ≤10). */
const CODE_TTL_SECONDS = 60;
/** How long the approve page may stay open before its request is forgotten. */
const PENDING_TTL_MS = 10 * 60 * 1000;
const CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

export interface OAuthAppRow {
  id: number;
  client_id: string;
  name: string;
  redirect_uris: string[];
  permissions: string[];
  legacy_app_id: string | null;
  created_at: string;
}

export interface GrantInfo {
  id: number;
  app_id: number;
  business_id: number;
  user_id: number;
  scope: string;
  created_at: string;
  revoked_at: string | null;
  revoked_reason: string | null;
}

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  scope: string;
}

export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unsupported_grant_type'
  | 'unauthorized_client';

/** An RFC 6749 §5.2 error; the token and revoke endpoints answer it as JSON. */
export class OAuthError extends Error {
  override readonly name = 'OAuthError';
  constructor(
    readonly error: OAuthErrorCode,
    readonly description: string,
    readonly statusCode = error === 'invalid_client' ? 401 : 400,
  ) {
    super(description);
  }
}

interface AppDbRow {
  id: number;
  client_id: string;
  name: string;
  redirect_uris: string;
  permissions: string;
  legacy_app_id: string | null;
  created_at: string;
}

interface PendingRequest {
  appId: number;
  redirectUri: string;
  challenge: string;
  state: string | undefined;
  businessId: number;
  userId: number;
  expiresAt: number;
}

export interface OAuthSettings {
  /** Skip the approve page and redirect straight back with a code. */
  autoApprove: boolean;
  /** Who installs when the authorize request has no login_hint; null: the default owner. */
  installingUserId: number | null;
}

function appFromRow(row: AppDbRow): OAuthAppRow {
  return {
    id: row.id,
    client_id: row.client_id,
    name: row.name,
    redirect_uris: JSON.parse(row.redirect_uris) as string[],
    permissions: JSON.parse(row.permissions) as string[],
    legacy_app_id: row.legacy_app_id,
    created_at: row.created_at,
  };
}

export class OAuthServer {
  readonly settings: OAuthSettings;
  private readonly pending = new Map<string, PendingRequest>();

  constructor(
    private readonly ctx: SandboxContext,
    private readonly defaultUserId: number,
    settings: Partial<OAuthSettings> = {},
  ) {
    this.settings = { autoApprove: false, installingUserId: null, ...settings };
  }

  /** Registers an app; the legacy App-Secret is returned here only. */
  createApp(input: {
    name: string;
    redirectUris: readonly string[];
    permissions: readonly string[];
  }): OAuthAppRow & { legacy_app_secret: string } {
    for (const uri of input.redirectUris) {
      // Redirects are built with URL: an unparsable registration would fail every consent.
      if (!URL.canParse(uri) || new URL(uri).hash !== '') {
        throw new Error(`redirect URI ${uri} must be an absolute URL without a fragment`);
      }
    }
    const clientId = randomToken('ebc_', 16);
    const legacyAppId = `app_${randomBytes(8).toString('hex')}`;
    const legacySecret = randomToken('eas_', 24);
    const info = this.ctx.db
      .prepare(
        `INSERT INTO oauth_apps (client_id, name, redirect_uris, permissions, legacy_app_id,
           legacy_secret_hash, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        clientId,
        input.name,
        JSON.stringify([...new Set(input.redirectUris)]),
        JSON.stringify([...new Set(input.permissions)]),
        legacyAppId,
        hashSecret(legacySecret),
        this.ctx.clock.iso(),
      );
    const app = this.app(Number(info.lastInsertRowid));
    if (!app) throw new Error('the app just created is missing');
    return { ...app, legacy_app_secret: legacySecret };
  }

  app(id: number): OAuthAppRow | undefined {
    const row = this.ctx.db.prepare('SELECT * FROM oauth_apps WHERE id = ?').get(id) as
      AppDbRow | undefined;
    return row ? appFromRow(row) : undefined;
  }

  appByClientId(clientId: string): OAuthAppRow | undefined {
    const row = this.ctx.db
      .prepare('SELECT * FROM oauth_apps WHERE client_id = ?')
      .get(clientId) as AppDbRow | undefined;
    return row ? appFromRow(row) : undefined;
  }

  apps(): OAuthAppRow[] {
    const rows = this.ctx.db.prepare('SELECT * FROM oauth_apps ORDER BY id').all() as AppDbRow[];
    return rows.map(appFromRow);
  }

  grant(id: number): GrantInfo | undefined {
    return this.ctx.db.prepare('SELECT * FROM oauth_grants WHERE id = ?').get(id) as
      GrantInfo | undefined;
  }

  grants(filter: { appId?: number; businessId?: number } = {}): GrantInfo[] {
    return this.ctx.db
      .prepare(
        `SELECT * FROM oauth_grants WHERE (@app IS NULL OR app_id = @app)
           AND (@business IS NULL OR business_id = @business) ORDER BY id`,
      )
      .all({ app: filter.appId ?? null, business: filter.businessId ?? null }) as GrantInfo[];
  }

  /** The customer approved: a grant covering the app's whole permission list. */
  createGrant(app: OAuthAppRow, userId: number): GrantInfo {
    const user = this.ctx.db.prepare('SELECT business_id FROM users WHERE id = ?').get(userId) as
      { business_id: number } | undefined;
    if (!user) throw new Error(`user ${userId} does not exist`);
    const info = this.ctx.db
      .prepare(
        'INSERT INTO oauth_grants (app_id, business_id, user_id, scope, created_at) VALUES (?, ?, ?, ?, ?)',
      )
      .run(app.id, user.business_id, userId, app.permissions.join(' '), this.ctx.clock.iso());
    const grant = this.grant(Number(info.lastInsertRowid));
    if (!grant) throw new Error('the grant just created is missing');
    return grant;
  }

  /** Kills a grant and with it every token issued under it. False when it was already dead. */
  revokeGrant(grantId: number, reason: string): boolean {
    const changed = this.ctx.db
      .prepare(
        'UPDATE oauth_grants SET revoked_at = ?, revoked_reason = ? WHERE id = ? AND revoked_at IS NULL',
      )
      .run(this.ctx.clock.iso(), reason, grantId).changes;
    if (changed > 0) this.ctx.counters.grantsRevoked += 1;
    return changed > 0;
  }

  /** A fresh access and refresh token pair under a live grant. */
  issueTokens(grant: GrantInfo): TokenResponse {
    const now = this.ctx.clock.nowSeconds();
    const ttl = this.ctx.accessTokenTtlSeconds;
    const accessToken = randomToken('eat_', 32);
    const refreshToken = randomToken('ert_', 32);
    const insert = this.ctx.db.prepare(
      'INSERT INTO oauth_tokens (token_hash, grant_id, kind, expires_at, created_at) VALUES (?, ?, ?, ?, ?)',
    );
    insert.run(hashSecret(accessToken), grant.id, 'access', now + ttl, now);
    // Refresh tokens do not expire by time: they die by rotation, revocation or disconnect.
    insert.run(hashSecret(refreshToken), grant.id, 'refresh', null, now);
    return {
      access_token: accessToken,
      token_type: 'Bearer',
      expires_in: ttl,
      refresh_token: refreshToken,
      scope: grant.scope,
    };
  }

  /** Who installs: an explicit user id, else the admin setting, else the default owner. */
  installingUser(loginHint: string | undefined): number | undefined {
    if (loginHint !== undefined) {
      if (!/^\d{1,15}$/.test(loginHint)) return undefined;
      const row = this.ctx.db.prepare('SELECT id FROM users WHERE id = ?').get(Number(loginHint));
      return row ? Number(loginHint) : undefined;
    }
    return this.settings.installingUserId ?? this.defaultUserId;
  }

  private issueCode(pending: Omit<PendingRequest, 'expiresAt'>): string {
    const app = this.app(pending.appId);
    if (!app) throw new Error(`app ${pending.appId} vanished`);
    const grant = this.createGrant(app, pending.userId);
    const code = randomToken('eac_', 32);
    this.ctx.db
      .prepare(
        'INSERT INTO oauth_codes (code_hash, grant_id, redirect_uri, code_challenge, expires_at) VALUES (?, ?, ?, ?, ?)',
      )
      .run(
        hashSecret(code),
        grant.id,
        pending.redirectUri,
        pending.challenge,
        this.ctx.clock.nowSeconds() + CODE_TTL_SECONDS,
      );
    return code;
  }

  private client(clientId: string | undefined): OAuthAppRow {
    if (!clientId) throw new OAuthError('invalid_request', 'client_id is required');
    const app = this.appByClientId(clientId);
    if (!app) throw new OAuthError('invalid_client', 'Unknown client_id');
    return app;
  }

  /** grant_type=authorization_code. The verifier is hashed first so the rest is one step. */
  async exchangeCode(params: Record<string, string | undefined>): Promise<TokenResponse> {
    const missing = ['code', 'redirect_uri', 'client_id', 'code_verifier'].filter(
      (name) => !params[name],
    );
    if (missing.length > 0) {
      throw new OAuthError('invalid_request', `Missing parameter(s): ${missing.join(', ')}`);
    }
    const verifier = params.code_verifier ?? '';
    const computed = VERIFIER.test(verifier) ? await calculatePKCECodeChallenge(verifier) : null;
    const app = this.client(params.client_id);
    const db = this.ctx.db;
    // Failures return rather than throw so that burning the code survives the transaction.
    const outcome = db.transaction((): TokenResponse | OAuthError => {
      const code = db
        .prepare('SELECT * FROM oauth_codes WHERE code_hash = ?')
        .get(hashSecret(params.code ?? '')) as
        | {
            grant_id: number;
            redirect_uri: string;
            code_challenge: string;
            expires_at: number;
            used_at: number | null;
          }
        | undefined;
      if (!code) return new OAuthError('invalid_grant', 'The authorization code is not valid');
      const grant = this.grant(code.grant_id);
      if (!grant || grant.app_id !== app.id) {
        return new OAuthError(
          'invalid_grant',
          'The authorization code was issued to another client',
        );
      }
      if (code.used_at !== null) {
        // RFC 6749 §4.1.2: a replayed code revokes what was issued under it.
        this.revokeGrant(grant.id, 'code_reuse');
        return new OAuthError('invalid_grant', 'The authorization code was already used');
      }
      db.prepare('UPDATE oauth_codes SET used_at = ? WHERE code_hash = ?').run(
        this.ctx.clock.nowSeconds(),
        hashSecret(params.code ?? ''),
      );
      if (code.expires_at <= this.ctx.clock.nowSeconds()) {
        return new OAuthError('invalid_grant', 'The authorization code has expired');
      }
      if (code.redirect_uri !== params.redirect_uri) {
        return new OAuthError(
          'invalid_grant',
          'redirect_uri does not match the one of the authorization request',
        );
      }
      if (computed === null || computed !== code.code_challenge) {
        return new OAuthError('invalid_grant', 'code_verifier does not match the code_challenge');
      }
      if (grant.revoked_at !== null) {
        return new OAuthError('invalid_grant', 'The authorization was revoked');
      }
      this.ctx.counters.tokenGrants += 1;
      return this.issueTokens(grant);
    })();
    if (outcome instanceof OAuthError) throw outcome;
    return outcome;
  }

  /** grant_type=refresh_token: rotate, and treat a rotated token coming back as theft. */
  refresh(params: Record<string, string | undefined>): TokenResponse {
    const missing = ['refresh_token', 'client_id'].filter((name) => !params[name]);
    if (missing.length > 0) {
      throw new OAuthError('invalid_request', `Missing parameter(s): ${missing.join(', ')}`);
    }
    const app = this.client(params.client_id);
    const db = this.ctx.db;
    const outcome = db.transaction((): TokenResponse | OAuthError => {
      const hash = hashSecret(params.refresh_token ?? '');
      const token = db
        .prepare("SELECT * FROM oauth_tokens WHERE token_hash = ? AND kind = 'refresh'")
        .get(hash) as
        { grant_id: number; used_at: number | null; revoked_at: number | null } | undefined;
      if (!token) return new OAuthError('invalid_grant', 'The refresh token is not valid');
      const grant = this.grant(token.grant_id);
      if (!grant || grant.app_id !== app.id) {
        return new OAuthError('invalid_grant', 'The refresh token was issued to another client');
      }
      if (token.used_at !== null) {
        this.ctx.counters.refreshReuse += 1;
        this.revokeGrant(grant.id, 'refresh_token_reuse');
        return new OAuthError(
          'invalid_grant',
          'The refresh token was already used; the authorization is revoked',
        );
      }
      if (token.revoked_at !== null || grant.revoked_at !== null) {
        return new OAuthError('invalid_grant', 'The authorization was revoked');
      }
      const now = this.ctx.clock.nowSeconds();
      db.prepare('UPDATE oauth_tokens SET used_at = ?, revoked_at = ? WHERE token_hash = ?').run(
        now,
        now,
        hash,
      );
      this.ctx.counters.tokenRefreshes += 1;
      return this.issueTokens(grant);
    })();
    if (outcome instanceof OAuthError) throw outcome;
    return outcome;
  }

  /** RFC 7009: unknown tokens are fine; a refresh token takes its whole grant with it. */
  revoke(params: Record<string, string | undefined>): void {
    if (!params.token) throw new OAuthError('invalid_request', 'token is required');
    const app = this.client(params.client_id);
    const hash = hashSecret(params.token);
    const token = this.ctx.db
      .prepare('SELECT grant_id, kind FROM oauth_tokens WHERE token_hash = ?')
      .get(hash) as { grant_id: number; kind: string } | undefined;
    if (!token) return;
    const grant = this.grant(token.grant_id);
    if (!grant) return;
    if (grant.app_id !== app.id) {
      throw new OAuthError('invalid_grant', 'The token was issued to another client');
    }
    if (token.kind === 'refresh') {
      this.revokeGrant(grant.id, 'revoked_by_app');
      return;
    }
    this.ctx.db
      .prepare('UPDATE oauth_tokens SET revoked_at = ? WHERE token_hash = ? AND revoked_at IS NULL')
      .run(this.ctx.clock.nowSeconds(), hash);
  }

  /** Mounts /oauth/authorize (GET page, POST decision), /oauth/token and /oauth/revoke. */
  plugin(): (app: FastifyInstance) => void {
    return (root) => {
      void root.register((app, _opts, done) => {
        app.setErrorHandler((error: FastifyError | OAuthError, _request, reply) => {
          if (error instanceof OAuthError) return sendOAuthError(reply, error);
          const status = error.statusCode ?? 500;
          if (status >= 400 && status < 500) {
            return sendOAuthError(reply, new OAuthError('invalid_request', error.message));
          }
          // Anything else is a sandbox bug: let the app's handler record it.
          throw error;
        });
        app.get(OAUTH_PATHS.authorize, (request, reply) => this.authorizePage(request, reply));
        app.post(OAUTH_PATHS.authorize, (request, reply) => this.authorizeDecision(request, reply));
        app.post(OAUTH_PATHS.token, async (request, reply) => {
          const params = formParams(request.body);
          const grantType = params.grant_type;
          let tokens: TokenResponse;
          if (!grantType) throw new OAuthError('invalid_request', 'grant_type is required');
          else if (grantType === 'authorization_code') tokens = await this.exchangeCode(params);
          else if (grantType === 'refresh_token') tokens = this.refresh(params);
          else {
            throw new OAuthError(
              'unsupported_grant_type',
              `grant_type ${grantType.slice(0, 40)} is not supported`,
            );
          }
          return reply.code(200).headers(NO_STORE).send(tokens);
        });
        app.post(OAUTH_PATHS.revoke, (request, reply) => {
          this.revoke(formParams(request.body));
          return reply.code(200).headers(NO_STORE).send();
        });
        done();
      });
    };
  }

  private authorizePage(request: FastifyRequest, reply: FastifyReply): FastifyReply {
    const query = request.query as Record<string, unknown>;
    const single = (name: string): string | undefined | null => {
      const value = query[name];
      if (Array.isArray(value)) return null;
      return typeof value === 'string' ? value : undefined;
    };
    // Before the app and its redirect are known, a bad request is answered here, never
    // redirected (RFC 6749 4.1.2.1): a repeat said as a repeat, not as an unknown value.
    const repeated = (['client_id', 'redirect_uri'] as const).find((n) => single(n) === null);
    if (repeated) {
      return htmlError(
        reply,
        'Invalid request',
        `The ${repeated} is given more than once; give it once.`,
      );
    }
    const clientId = single('client_id');
    const app = clientId ? this.appByClientId(clientId) : undefined;
    if (!app) {
      return htmlError(reply, 'Unknown app', 'The client_id does not name a registered app.');
    }
    const redirectUri = single('redirect_uri');
    if (!redirectUri || !redirectAllowed(app.redirect_uris, redirectUri)) {
      return htmlError(
        reply,
        'Redirect URI not registered',
        'The redirect_uri is missing or is not registered for this app.',
      );
    }
    const state = single('state');
    const back = (error: string, description: string): FastifyReply =>
      reply.redirect(
        redirectWith(redirectUri, {
          error,
          error_description: description,
          ...(typeof state === 'string' ? { state } : {}),
        }),
        302,
      );
    if (state === null) return back('invalid_request', 'state must not be repeated');
    const responseType = single('response_type');
    if (responseType !== 'code') {
      return back(
        responseType ? 'unsupported_response_type' : 'invalid_request',
        'response_type must be code',
      );
    }
    const method = single('code_challenge_method');
    if (method !== 'S256') {
      return back('invalid_request', 'code_challenge_method must be S256');
    }
    const challenge = single('code_challenge');
    if (!challenge || !CHALLENGE.test(challenge)) {
      return back('invalid_request', 'code_challenge must be a base64url SHA-256 (43 characters)');
    }
    const hint = single('login_hint');
    const userId = this.installingUser(hint === null ? '' : hint);
    if (userId === undefined) return back('invalid_request', 'login_hint names no known user');
    const user = this.ctx.db
      .prepare(
        'SELECT u.name AS user_name, u.business_id, b.name AS business_name FROM users u JOIN businesses b ON b.id = u.business_id WHERE u.id = ?',
      )
      .get(userId) as { user_name: string; business_id: number; business_name: string };
    const base = {
      appId: app.id,
      redirectUri,
      challenge,
      state: state ?? undefined,
      businessId: user.business_id,
      userId,
    };
    if (this.settings.autoApprove) {
      const code = this.issueCode(base);
      return reply.redirect(redirectWith(redirectUri, { code, ...(state ? { state } : {}) }), 302);
    }
    this.forgetExpired();
    const requestId = randomBytes(18).toString('base64url');
    this.pending.set(requestId, { ...base, expiresAt: this.ctx.clock.now() + PENDING_TTL_MS });
    return reply
      .code(200)
      .headers({ 'content-type': 'text/html; charset=utf-8', 'x-frame-options': 'DENY' })
      .send(approvePage(app, user.business_name, user.user_name, requestId));
  }

  private authorizeDecision(request: FastifyRequest, reply: FastifyReply): FastifyReply {
    const params = formParams(request.body);
    const requestId = params.request_id ?? '';
    const pending = this.pending.get(requestId);
    this.pending.delete(requestId);
    if (!pending || pending.expiresAt <= this.ctx.clock.now()) {
      return htmlError(
        reply,
        'Request expired',
        'This authorization request is unknown, was already answered or has expired.',
      );
    }
    const state = pending.state !== undefined ? { state: pending.state } : {};
    if (params.decision !== 'approve') {
      return reply.redirect(
        redirectWith(pending.redirectUri, {
          error: 'access_denied',
          error_description: 'The customer cancelled',
          ...state,
        }),
        303,
      );
    }
    const code = this.issueCode(pending);
    return reply.redirect(redirectWith(pending.redirectUri, { code, ...state }), 303);
  }

  private forgetExpired(): void {
    const now = this.ctx.clock.now();
    for (const [id, request] of this.pending) {
      if (request.expiresAt <= now) this.pending.delete(id);
    }
  }
}

const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' };

function sendOAuthError(reply: FastifyReply, error: OAuthError): FastifyReply {
  return reply
    .code(error.statusCode)
    .headers(NO_STORE)
    .send({ error: error.error, error_description: error.description });
}

/** Form (or JSON) body as single string values; repeated or non-string values are dropped. */
function formParams(body: unknown): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return out;
  for (const [name, value] of Object.entries(body as Record<string, unknown>)) {
    if (typeof value === 'string') out[name] = value;
  }
  return out;
}

/**
 * Exact match, except that a loopback IP redirect may use any port (RFC 8252 §7.3, OAuth 2.1
 * §8.4.2): native apps such as `ebsync connect` listen on whatever port is free.
 */
export function redirectAllowed(registered: readonly string[], requested: string): boolean {
  if (registered.includes(requested)) return true;
  let want: URL;
  try {
    want = new URL(requested);
  } catch {
    return false;
  }
  if (want.protocol !== 'http:' || !['127.0.0.1', '[::1]'].includes(want.hostname)) return false;
  return registered.some((uri) => {
    try {
      const have = new URL(uri);
      return (
        have.protocol === 'http:' &&
        have.hostname === want.hostname &&
        have.pathname === want.pathname &&
        have.search === want.search
      );
    } catch {
      return false;
    }
  });
}

function redirectWith(uri: string, params: Record<string, string>): string {
  const url = new URL(uri);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  return url.toString();
}

function escapeHtml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c,
  );
}

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem}
button{font-size:1rem;padding:.5rem 1.25rem;margin-right:.5rem}</style></head>
<body>${body}</body></html>`;
}

function htmlError(reply: FastifyReply, title: string, message: string): FastifyReply {
  return reply
    .code(400)
    .header('content-type', 'text/html; charset=utf-8')
    .send(page(title, `<h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p>`));
}

function approvePage(
  app: OAuthAppRow,
  businessName: string,
  userName: string,
  requestId: string,
): string {
  const permissions = app.permissions.map((p) => `<li><code>${escapeHtml(p)}</code></li>`).join('');
  return page(
    `Connect ${app.name}`,
    `<h1>Connect ${escapeHtml(app.name)}</h1>
<p>${escapeHtml(userName)}, ${escapeHtml(app.name)} asks to access <strong>${escapeHtml(
      businessName,
    )}</strong> with these permissions:</p>
<ul id="permissions">${permissions}</ul>
<form method="post" action="${OAUTH_PATHS.authorize}">
<input type="hidden" name="request_id" value="${escapeHtml(requestId)}">
<button type="submit" name="decision" value="approve">Approve</button>
<button type="submit" name="decision" value="cancel">Cancel</button>
</form>`,
  );
}
