import { createPrivateKey, sign } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Connection, HttpRequest, HttpResponse } from '@jsforce/jsforce-node';
import got from 'got';
import type { Config } from '../config/index.js';
import { isLoopbackHost } from '../config/loopback.js';
import { REDIRECT_POLICY, redirectRefusal } from '../config/redirect-policy.js';
import {
  DestinationAuthError,
  DestinationPausedError,
  DestinationTargetError,
  DestinationUnavailableError,
  DestinationWriteError,
} from './errors.js';
import { networkCode } from './network-code.js';
import {
  jsonBody,
  locationOf,
  serverNow,
  unusableAnswer,
  type VendorAnswer,
} from './vendor-answer.js';

/**
 * Salesforce REST through jsforce (`@jsforce/jsforce-node`): a Connection on the token
 * answer's `instance_url`, with the API version set (jsforce's default, 50.0, is older than
 * the sObject Collections upsert ebsync uses), builds each call's URL and sends its session.
 *
 * `conn.request()` resolves to the body alone and throws for a 300 or any status from 400 on
 * with only Salesforce's errorCode: 5xx and 4xx, 300 and 400 cannot be told apart, and the
 * Date header the pause is timed by is lost (it does parse Sforce-Limit-Info into
 * `conn.limitInfo`). So each call passes jsforce a transport that records the raw answer
 * jsforce received (status, headers, body), and the client reads that, as before.
 *
 * The token request stays on got: jsforce's OAuth2 throws the token endpoint's refusals as
 * plain Errors without the status, so a 5xx (retry) and a refused grant (fix the settings)
 * would look the same.
 */

const NAMES = {
  vendor: 'Salesforce',
  token: 'session',
  setting: 'EBSYNC_SALESFORCE_REFRESH_TOKEN',
  urlSetting: 'EBSYNC_SALESFORCE_URL',
};

// https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_versions.htm —
// the version is named in every path; v62.0 is the oldest the sObject Collections upsert and
// ebsync are checked against.
export const SALESFORCE_API_VERSION = 'v62.0';

/**
 * Share of the org's daily API allocation ebsync leaves to the org's people and other
 * integrations: at `1 - RESERVE` used, the destination pauses instead of spending the rest.
 */
export const SALESFORCE_API_RESERVE = 0.05;
/**
 * Salesforce counts the allocation over a rolling 24 hours and does not say when calls age
 * out, so a paused mirror is run again after an hour, when some may have.
 */
export const SALESFORCE_PAUSE_MS = 60 * 60 * 1000;

export interface SalesforceClientOptions {
  /** Login URL (https://login.salesforce.com, a My Domain, or the fake's). */
  loginUrl: string;
  clientId: string;
  /** Consumer secret (a secret: only in the token request's body, never in messages). */
  clientSecret?: string;
  /** Refresh token (a secret: only in the token request's body, never in messages). */
  refreshToken?: string;
  /** The JWT bearer flow instead: the pre-authorized user and the PEM key of the app's certificate. */
  jwt?: { username: string; privateKey: string };
  /** Where a refresh token Salesforce rotates is kept, so the next run presents the new one. */
  refreshTokens?: RotatedRefreshTokens;
}

/** Rotated refresh tokens, kept sealed across runs (store/crm-refresh-tokens.ts). */
export interface RotatedRefreshTokens {
  /** The token to present in place of `configured`, when it was rotated. */
  latest(account: string, configured: string): Promise<string | undefined>;
  /** Keeps `next` as the token to present in place of `configured`. */
  keep(account: string, configured: string, next: string): Promise<void>;
}

/**
 * The client's credentials from settings: a connected app with a refresh token, or with a
 * user and the private key of its certificate (JWT bearer). Names what is missing otherwise.
 */
export function salesforceClientOptions(
  settings: Partial<Config['crm']['salesforce']> | undefined,
): SalesforceClientOptions {
  const s = settings ?? {};
  const base = {
    loginUrl: s.baseUrl ?? 'https://login.salesforce.com',
    clientId: s.clientId ?? '',
    ...(s.clientSecret ? { clientSecret: s.clientSecret } : {}),
  };
  if (s.clientId && s.refreshToken) return { ...base, refreshToken: s.refreshToken };
  if (s.clientId && s.username && s.privateKeyFile) {
    let privateKey: string;
    try {
      privateKey = readFileSync(s.privateKeyFile, 'utf8');
      createPrivateKey(privateKey);
    } catch {
      throw new DestinationTargetError(
        `EBSYNC_SALESFORCE_PRIVATE_KEY_FILE='${s.privateKeyFile}' is not a readable PEM private key`,
      );
    }
    return { ...base, jwt: { username: s.username, privateKey } };
  }
  throw new DestinationTargetError(
    'Salesforce needs a connected app: set EBSYNC_SALESFORCE_CLIENT_ID and EBSYNC_SALESFORCE_REFRESH_TOKEN, or EBSYNC_SALESFORCE_USERNAME and EBSYNC_SALESFORCE_PRIVATE_KEY_FILE for the JWT bearer flow (see docs/crm.md)',
  );
}

/**
 * https://help.salesforce.com/s/articleView?id=sf.remoteaccess_oauth_jwt_flow.htm — the
 * audience is the login server: login.salesforce.com for production My Domains,
 * test.salesforce.com for sandbox ones, else the login URL itself.
 */
function audience(loginUrl: string): string {
  const url = new URL(loginUrl);
  if (url.hostname.endsWith('.sandbox.my.salesforce.com')) return 'https://test.salesforce.com';
  if (url.hostname.endsWith('.my.salesforce.com')) return 'https://login.salesforce.com';
  return url.origin;
}

/** An RS256 JWT bearer assertion, valid for three minutes. */
function assertion(
  options: SalesforceClientOptions,
  jwt: { username: string; privateKey: string },
): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const head = part({ alg: 'RS256' });
  const body = part({
    iss: options.clientId,
    sub: jwt.username,
    aud: audience(options.loginUrl),
    exp: Math.floor(Date.now() / 1000) + 180,
  });
  const signature = sign('RSA-SHA256', Buffer.from(`${head}.${body}`), jwt.privateKey);
  return `${head}.${body}.${signature.toString('base64url')}`;
}

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

interface Session {
  conn: Connection;
}

/** What jsforce's per-request options take: its retries off (Temporal retries), a timeout. */
const REQUEST_OPTIONS = { retry: { maxRetries: 0 }, timeout: 120_000 };

/**
 * One of Salesforce's errors: an error answer names its code `errorCode`, an item of an
 * sObject Collections answer `statusCode` (errorCodeOf reads either).
 */
export interface SalesforceErrorItem {
  message?: string | undefined;
  errorCode?: string | undefined;
  statusCode?: string | undefined;
  fields?: string[] | undefined;
}

/** The code of one of Salesforce's errors, as either kind of answer names it. */
export const errorCodeOf = (e: SalesforceErrorItem | undefined): string | undefined =>
  e?.errorCode ?? e?.statusCode;

/** Salesforce's error list as one line: `CODE: message; …`. */
export function errorLine(body: unknown): string {
  const list = Array.isArray(body) ? (body as SalesforceErrorItem[]) : [];
  const line = list
    .slice(0, 3)
    .map((e) => `${errorCodeOf(e) ?? 'ERROR'}: ${e.message ?? ''}`.trim())
    .join('; ');
  return (line || 'no message').slice(0, 300);
}

/** `api-usage=N/M` of the Sforce-Limit-Info header, or undefined. */
export function apiUsage(
  headers: Record<string, unknown>,
): { used: number; max: number } | undefined {
  const value = headers['sforce-limit-info'];
  const m = typeof value === 'string' ? /api-usage=(\d+)\/(\d+)/.exec(value) : null;
  return m ? { used: Number(m[1]), max: Number(m[2]) } : undefined;
}

export class SalesforceClient {
  /** The org's API usage as the last answer gave it. */
  usage: { used: number; max: number; at: number; serverAt: number } | undefined;
  private session: Promise<Session> | undefined;

  constructor(private readonly options: SalesforceClientOptions) {}

  /** Set once Salesforce rotated the refresh token in this process, store or not. */
  private rotatedRefreshToken: string | undefined;

  /**
   * One call to the org's instance. A refused session is renewed once; the org's spent
   * allocation (or the reserve ebsync keeps) pauses the destination; 5xx is retryable.
   */
  async call(
    method: Method,
    resource: string,
    options: { json?: unknown; searchParams?: Record<string, string> } = {},
  ): Promise<VendorAnswer> {
    this.checkReserve();
    for (let attempt = 0; ; attempt += 1) {
      const session = await this.currentSession();
      const response = await this.send(session.conn, method, resource, options);
      const headers = response.headers as Record<string, unknown>;
      const status = response.statusCode;
      const body = jsonBody(response.body);
      // https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/headers_api_usage.htm
      // — the org's calls in the last 24 hours and its allocation, on every answer.
      const usage = apiUsage(headers);
      if (usage) this.usage = { ...usage, at: Date.now(), serverAt: serverNow(headers) };
      const code = Array.isArray(body)
        ? (body[0] as SalesforceErrorItem | undefined)?.errorCode
        : undefined;
      if (status === 401 && attempt === 0) {
        // https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/errorcodes.htm
        // — INVALID_SESSION_ID: the access token expired or was revoked; a new one may do.
        this.session = undefined;
        continue;
      }
      if (status === 403 && code === 'REQUEST_LIMIT_EXCEEDED') {
        const paused = this.paused(
          serverNow(headers),
          'the org has spent its daily API allocation',
        );
        // The pass stops on this; when it is run again, the org itself says whether it
        // takes calls (the 24-hour window may have moved on), not this answer's count.
        this.usage = undefined;
        throw paused;
      }
      const unusable = unusableAnswer(
        NAMES,
        { status, body },
        `${method} ${resource}`,
        errorLine(body),
        { url: session.conn.instanceUrl, location: locationOf(headers) },
      );
      if (unusable) throw unusable;
      return { status, body };
    }
  }

  /** A call that must answer 2xx; anything else is a write error naming Salesforce's reason. */
  async ok(
    method: Method,
    resource: string,
    options: { json?: unknown; searchParams?: Record<string, string> } = {},
  ): Promise<VendorAnswer> {
    const answer = await this.call(method, resource, options);
    if (answer.status < 200 || answer.status >= 300) {
      throw new DestinationWriteError(
        `Salesforce answered ${answer.status} to ${method} ${resource}: ${errorLine(answer.body)}`,
      );
    }
    return answer;
  }

  /**
   * One request through jsforce, answered with what jsforce received. A relative resource
   * is put under the instance's `/services/data/vNN.N` by jsforce itself.
   */
  private async send(
    conn: Connection,
    method: Method,
    resource: string,
    options: { json?: unknown; searchParams?: Record<string, string> },
  ): Promise<HttpResponse> {
    const query = options.searchParams
      ? `?${new URLSearchParams(options.searchParams).toString()}`
      : '';
    const request: HttpRequest = {
      method,
      url: `${resource}${query}`,
      ...(options.json === undefined
        ? {}
        : { body: JSON.stringify(options.json), headers: { 'content-type': 'application/json' } }),
    };
    let received: HttpResponse | undefined;
    const transport = conn._transport;
    const recording = {
      httpRequest(req: HttpRequest, opts?: object) {
        // jsforce follows any redirect with the same headers, the session among them, so
        // it follows none here: the REST API does not redirect, and a 3xx is read as the
        // answer it is (config/redirect-policy.ts).
        const answer = transport.httpRequest(req, { ...opts, followRedirect: false });
        answer.then(
          (r) => (received = r),
          () => undefined,
        );
        return answer;
      },
    };
    try {
      await conn.request(request, { ...REQUEST_OPTIONS, transport: recording });
    } catch (error) {
      // A status jsforce throws for (300, 4xx, 5xx) is an answer; no answer is a lost call.
      // Only the code is kept: jsforce's errors may carry the request, with its session.
      if (!received) {
        throw new DestinationUnavailableError(
          `Salesforce could not be reached (${method} ${resource}): ${networkCode(error)}`,
        );
      }
    }
    if (!received) {
      throw new DestinationUnavailableError(`Salesforce gave no answer to ${method} ${resource}`);
    }
    return received;
  }

  private paused(at: number, why: string): DestinationPausedError {
    const resumeAt = new Date(at + SALESFORCE_PAUSE_MS).toISOString();
    const usage = this.usage ? ` (api-usage ${this.usage.used}/${this.usage.max})` : '';
    return new DestinationPausedError(
      `Salesforce: ${why}${usage}; the mirror pauses until ${resumeAt}`,
      resumeAt,
    );
  }

  /** Stops before the org's last calls, which its people and other integrations need too. */
  private checkReserve(): void {
    const u = this.usage;
    if (!u || u.max <= 0) return;
    if (u.used >= Math.floor(u.max * (1 - SALESFORCE_API_RESERVE))) {
      // Calls age out of the org's 24-hour window: after a pause, look again.
      if (Date.now() - u.at < SALESFORCE_PAUSE_MS) {
        // Until an hour after the answer that showed the usage: when the check above lets
        // calls through again, however often a pass asks meanwhile.
        throw this.paused(
          u.serverAt,
          `ebsync keeps the last ${SALESFORCE_API_RESERVE * 100}% of the org's daily API allocation for others`,
        );
      }
    }
  }

  private currentSession(): Promise<Session> {
    this.session ??= this.newSession().catch((error: unknown) => {
      this.session = undefined;
      throw error;
    });
    return this.session;
  }

  /**
   * https://help.salesforce.com/s/articleView?id=sf.remoteaccess_oauth_refresh_token_flow.htm
   * — a form-encoded refresh_token grant (or the JWT bearer grant) at /services/oauth2/token;
   * the answer's instance_url is where the org's API is.
   */
  private async newSession(): Promise<Session> {
    const login = this.options.loginUrl.replace(/\/+$/, '');
    const account = `salesforce ${login} ${this.options.clientId}`;
    const configured = this.options.refreshToken ?? '';
    // The store first: another process sharing it (a second worker, `ebsync destinations
    // setup salesforce`) may have rotated the token this one last kept, which is then dead.
    const kept = async () =>
      (configured && (await this.options.refreshTokens?.latest(account, configured))) || undefined;
    let presented = (await kept()) ?? this.rotatedRefreshToken ?? configured;
    let response = await this.tokenRequest(login, presented);
    if (response.statusCode === 400 && !this.options.jwt) {
      // Refused: if another process rotated it meanwhile, present the one it kept, once.
      const newer = await kept();
      if (newer && newer !== presented) {
        presented = newer;
        response = await this.tokenRequest(login, presented);
      }
    }
    const body = (jsonBody(response.body) ?? {}) as Record<string, unknown>;
    const redirect = redirectRefusal(response.statusCode, login, response.headers.location);
    if (redirect) {
      throw new DestinationTargetError(
        `Salesforce login ${redirect} (the token request): check EBSYNC_SALESFORCE_URL`,
      );
    }
    if (response.statusCode >= 500) {
      throw new DestinationUnavailableError(`Salesforce login answered ${response.statusCode}`);
    }
    const accessToken = body.access_token;
    const instance = this.instanceUrl(body.instance_url);
    if (response.statusCode !== 200 || typeof accessToken !== 'string' || !instance) {
      // https://help.salesforce.com/s/articleView?id=sf.remoteaccess_oauth_flow_errors.htm
      // — a refused grant is a 400 (401 for a bad client) with an OAuth `error`; any other
      // answer (a page not found, a token answer without an https instance_url) is not the
      // token endpoint of a Salesforce login.
      const oauthRefusal =
        (response.statusCode === 400 || response.statusCode === 401) &&
        typeof body.error === 'string';
      if (!oauthRefusal) {
        throw new DestinationAuthError(
          `Salesforce login answered HTTP ${response.statusCode} with no session (the token request): check EBSYNC_SALESFORCE_URL, the login URL (docs/crm.md)`,
        );
      }
      const error = String(body.error);
      const setting = error.startsWith('invalid_client')
        ? 'EBSYNC_SALESFORCE_CLIENT_ID and EBSYNC_SALESFORCE_CLIENT_SECRET'
        : this.options.jwt
          ? 'EBSYNC_SALESFORCE_USERNAME and EBSYNC_SALESFORCE_PRIVATE_KEY_FILE (the user must be pre-authorized for the app)'
          : 'EBSYNC_SALESFORCE_REFRESH_TOKEN';
      throw new DestinationAuthError(
        `Salesforce refused the token request (${error.slice(0, 60)}): check ${setting}`,
      );
    }
    // https://help.salesforce.com/s/articleView?id=sf.remoteaccess_oauth_refresh_token_flow.htm
    // — with rotation on, the answer carries a new refresh token and the old one stops
    // working: it is kept before anything else, so no later run presents the dead one.
    const rotated = body.refresh_token;
    if (!this.options.jwt && typeof rotated === 'string' && rotated && rotated !== presented) {
      this.rotatedRefreshToken = rotated;
      await this.options.refreshTokens?.keep(account, configured, rotated);
    }
    // Loaded here, at the first token: jsforce and its dependencies hold about 40 MiB, which a
    // worker that never writes to Salesforce should not carry.
    const { Connection: SdkConnection } = await import('@jsforce/jsforce-node');
    return {
      conn: new SdkConnection({
        instanceUrl: instance,
        accessToken,
        version: SALESFORCE_API_VERSION.slice(1),
      }),
    };
  }

  /** The token request: the refresh-token grant presenting `refreshToken`, or the JWT bearer grant. */
  private async tokenRequest(login: string, refreshToken: string) {
    try {
      return await got.post(`${login}/services/oauth2/token`, {
        throwHttpErrors: false,
        // The form carries the client secret and the refresh token (or a signed assertion).
        ...REDIRECT_POLICY,
        retry: { limit: 0 },
        timeout: { request: 30_000 },
        headers: { accept: 'application/json' },
        form: this.options.jwt
          ? {
              grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
              assertion: assertion(this.options, this.options.jwt),
            }
          : {
              grant_type: 'refresh_token',
              client_id: this.options.clientId,
              ...(this.options.clientSecret ? { client_secret: this.options.clientSecret } : {}),
              refresh_token: refreshToken,
            },
      });
    } catch (error) {
      throw new DestinationUnavailableError(
        `Salesforce login could not be reached: ${networkCode(error)}`,
      );
    }
  }

  /**
   * The instance URL the token answer names: https, or plain http only when the login URL
   * itself is plain http on loopback (the fake).
   */
  private instanceUrl(value: unknown): string | undefined {
    if (typeof value !== 'string') return undefined;
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      return undefined;
    }
    const login = new URL(this.options.loginUrl);
    const plainOk = login.protocol === 'http:' && isLoopbackHost(url.hostname);
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && plainOk)) return undefined;
    return url.origin;
  }
}
