import { isLoopbackHost } from '../config/loopback.js';
import got, { RequestError } from 'got';
import { REDIRECT_POLICY, redirectRefusal } from '../config/redirect-policy.js';
import * as oauth from 'oauth4webapi';
import {
  EbsError,
  isUntrustedCertificate,
  parseRetryAfter,
  untrustedCertificateMessage,
  type ErrorDetails,
} from './errors.js';
import { OAUTH_PATHS } from './routes.js';

/**
 * OAuth 2.1 for installed apps (authorization code + PKCE S256, public client, rotating
 * refresh tokens) on oauth4webapi: nothing here builds PKCE values or token requests by hand.
 * Requests go through got so the sandbox's own certificate authority can be trusted.
 * Secrets (codes, verifiers, tokens) never appear in URLs other than the authorize redirect's
 * code challenge, and never in error messages.
 */
export interface OAuthServerOptions {
  /** {auth_url}: the authorization server's origin (https; plain http only on loopback). */
  authUrl: string;
  clientId: string;
  /** Extra certificate authority (PEM), e.g. the sandbox's self-signed one. */
  ca?: string | Buffer;
  /** Per-request timeout in milliseconds (default 30 s). */
  timeoutMs?: number;
}

export interface OAuthTokens {
  accessToken: string;
  refreshToken: string;
  /** When the access token stops working, in epoch milliseconds. */
  expiresAt: number;
  /** Granted permission names. */
  scope: string[];
}

/** Base of every OAuth failure; `error` is the RFC 6749 code when the server sent one. */
export class OAuthError extends EbsError {
  override readonly name: string = 'OAuthError';
  readonly retryable: boolean = false;
  constructor(
    message: string,
    readonly error: string | undefined,
    details: ErrorDetails = {},
  ) {
    super(message, details);
  }
}

/**
 * invalid_grant: the code or refresh token is dead (used, expired, revoked, app disconnected).
 * Retrying cannot help; the customer has to connect again.
 */
export class InvalidGrantError extends OAuthError {
  override readonly name = 'InvalidGrantError';
  override readonly retryable = false;
}

/** The server could not answer now (network, 5xx, 429, temporarily_unavailable): retry later. */
export class OAuthUnavailableError extends OAuthError {
  override readonly name = 'OAuthUnavailableError';
  override readonly retryable = true;
  constructor(
    message: string,
    error: string | undefined,
    readonly retryAfterMs: number | undefined,
    details: ErrorDetails = {},
  ) {
    super(message, error, details);
  }
}

/** The redirect back was refused (access_denied...) or does not belong to our request (state). */
export class AuthorizationCallbackError extends OAuthError {
  override readonly name = 'AuthorizationCallbackError';
}

function serverOf(authUrl: string): { as: oauth.AuthorizationServer; insecure: boolean } {
  let base: URL;
  try {
    base = new URL(authUrl);
  } catch {
    throw new OAuthError(`authUrl '${authUrl}' is not a URL`, undefined);
  }
  if (base.protocol !== 'https:' && !(base.protocol === 'http:' && isLoopbackHost(base.hostname))) {
    throw new OAuthError(
      `authUrl must use https:// (plain http only on loopback), got ${base.origin}`,
      undefined,
    );
  }
  const at = (path: string): string => new URL(path, base).toString();
  return {
    as: {
      issuer: base.origin,
      authorization_endpoint: at(OAUTH_PATHS.authorize),
      token_endpoint: at(OAUTH_PATHS.token),
      revocation_endpoint: at(OAUTH_PATHS.revoke),
      code_challenge_methods_supported: ['S256'],
    },
    insecure: base.protocol === 'http:',
  };
}

/** What the authorize redirect needs, plus the two values to keep until the callback. */
export interface AuthorizationRequest {
  url: URL;
  state: string;
  codeVerifier: string;
}

export async function authorizationRequest(input: {
  authUrl: string;
  clientId: string;
  redirectUri: string;
  scope?: string | readonly string[];
}): Promise<AuthorizationRequest> {
  const { as } = serverOf(input.authUrl);
  const codeVerifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const url = new URL(as.authorization_endpoint ?? '');
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('client_id', input.clientId);
  url.searchParams.set('redirect_uri', input.redirectUri);
  url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(codeVerifier));
  url.searchParams.set('code_challenge_method', 'S256');
  url.searchParams.set('state', state);
  const scope = typeof input.scope === 'string' ? input.scope : input.scope?.join(' ');
  if (scope) url.searchParams.set('scope', scope);
  return { url, state, codeVerifier };
}

/**
 * Checks the redirect back (state, error parameters) and returns the authorization code.
 * Throws AuthorizationCallbackError when the customer cancelled or the state is not ours.
 */
export function validateCallback(input: {
  authUrl: string;
  clientId: string;
  /** The full redirect URL, or its query parameters. */
  callback: string | URL | URLSearchParams;
  expectedState: string;
}): { code: string } {
  const { as } = serverOf(input.authUrl);
  const params =
    input.callback instanceof URLSearchParams
      ? input.callback
      : new URL(String(input.callback)).searchParams;
  let validated: URLSearchParams;
  try {
    validated = oauth.validateAuthResponse(
      as,
      { client_id: input.clientId },
      params,
      input.expectedState,
    );
  } catch (error) {
    if (error instanceof oauth.AuthorizationResponseError) {
      throw new AuthorizationCallbackError(
        `authorization was not granted: ${error.error}${error.error_description ? ` (${error.error_description})` : ''}`,
        error.error,
        { reason: error.error },
      );
    }
    const message = error instanceof Error ? error.message : String(error);
    throw new AuthorizationCallbackError(
      `the authorization callback is not valid: ${message}`,
      'invalid_callback',
    );
  }
  const code = validated.get('code');
  if (!code)
    throw new AuthorizationCallbackError(
      'the authorization callback carries no code',
      'invalid_callback',
    );
  return { code };
}

/** A fetch for oauth4webapi made of got: custom CA, no retries, and the last status remembered. */
interface LastAnswer {
  status: number;
  retryAfterMs: number | undefined;
}

function gotFetch(options: OAuthServerOptions): {
  fetch: typeof fetch;
  last: () => LastAnswer | undefined;
} {
  let last: LastAnswer | undefined;
  const fetchImpl = async (
    url: string | URL | Request,
    init: RequestInit = {},
  ): Promise<Response> => {
    const body = init.body;
    const target = url instanceof Request ? url.url : url.toString();
    const response = await got(target, {
      method: (init.method ?? 'GET') as 'GET' | 'POST',
      headers: Object.fromEntries(new Headers(init.headers).entries()),
      ...(body === undefined || body === null
        ? {}
        : { body: body instanceof URLSearchParams ? body.toString() : (body as string) }),
      ...(options.ca ? { https: { certificateAuthority: options.ca } } : {}),
      timeout: { request: options.timeoutMs ?? 30_000 },
      retry: { limit: 0 },
      throwHttpErrors: false,
      ...REDIRECT_POLICY,
      responseType: 'buffer',
      ...(init.signal ? { signal: init.signal } : {}),
    });
    const redirect = redirectRefusal(response.statusCode, target, response.headers.location);
    if (redirect) {
      throw new OAuthError(`the authorization server ${redirect}: check EBS_AUTH_URL`, undefined, {
        status: response.statusCode,
      });
    }
    const retryAfter = response.headers['retry-after'];
    last = {
      status: response.statusCode,
      retryAfterMs: parseRetryAfter(typeof retryAfter === 'string' ? retryAfter : undefined),
    };
    const headers = new Headers();
    for (const [name, value] of Object.entries(response.headers)) {
      if (value === undefined) continue;
      for (const v of Array.isArray(value) ? value : [value]) headers.append(name, String(v));
    }
    const nullBody = [101, 204, 205, 304].includes(response.statusCode);
    return new Response(nullBody ? null : new Uint8Array(response.body), {
      status: response.statusCode,
      headers,
    });
  };
  return { fetch: fetchImpl, last: () => last };
}

type Operation = 'token exchange' | 'token refresh' | 'token revocation';

/** Maps whatever oauth4webapi or the network threw to our classes, without echoing secrets. */
function mapError(operation: Operation, error: unknown, last: LastAnswer | undefined): OAuthError {
  const lastStatus = last?.status;
  if (error instanceof OAuthError) return error;
  if (error instanceof oauth.ResponseBodyError) {
    const details: ErrorDetails = { status: error.status, reason: error.error };
    const text = `${operation} refused: ${error.error}${error.error_description ? ` (${error.error_description})` : ''}`;
    if (error.error === 'invalid_grant') return new InvalidGrantError(text, error.error, details);
    if (
      error.status >= 500 ||
      error.status === 429 ||
      error.error === 'temporarily_unavailable' ||
      error.error === 'server_error'
    ) {
      return new OAuthUnavailableError(
        text,
        error.error,
        parseRetryAfter(error.response.headers.get('retry-after') ?? undefined),
        details,
      );
    }
    return new OAuthError(text, error.error, details);
  }
  if (error instanceof oauth.WWWAuthenticateChallengeError) {
    const challenge = error.cause[0];
    const code = challenge?.parameters.error;
    const text = `${operation} refused: HTTP ${error.status}${code ? ` ${code}` : ''}`;
    if (code === 'invalid_grant')
      return new InvalidGrantError(text, code, { status: error.status });
    return new OAuthError(text, code ?? 'invalid_client', { status: error.status });
  }
  if (error instanceof RequestError) {
    // got's error carries the request options (and so the form body with its secrets): keep only its code.
    const text = isUntrustedCertificate(error.code)
      ? untrustedCertificateMessage(error.code, `${operation} failed`)
      : `${operation} failed: ${error.code}`;
    return new OAuthUnavailableError(text, undefined, undefined, {
      cause: { code: error.code },
    });
  }
  if (lastStatus !== undefined && (lastStatus >= 500 || lastStatus === 429)) {
    return new OAuthUnavailableError(
      `${operation} failed: HTTP ${lastStatus}`,
      undefined,
      last?.retryAfterMs,
      {
        status: lastStatus,
      },
    );
  }
  const message = error instanceof Error ? error.message : String(error);
  return new OAuthError(
    `${operation} failed: ${lastStatus !== undefined ? `HTTP ${lastStatus}: ` : ''}${message}`,
    undefined,
    lastStatus !== undefined ? { status: lastStatus } : {},
  );
}

function requestOptions(insecure: boolean, fetchImpl: typeof fetch) {
  return {
    [oauth.customFetch]: fetchImpl,
    // serverOf() admits http only on loopback (the sandbox started with --http).
    ...(insecure ? { [oauth.allowInsecureRequests]: true } : {}),
  };
}

function tokensOf(
  response: oauth.TokenEndpointResponse,
  fallbackRefreshToken?: string,
): OAuthTokens {
  const refreshToken = response.refresh_token ?? fallbackRefreshToken;
  if (!refreshToken)
    throw new OAuthError('the token response carries no refresh_token', 'invalid_response');
  return {
    accessToken: response.access_token,
    refreshToken,
    expiresAt: Date.now() + (response.expires_in ?? 3600) * 1000,
    scope: (response.scope ?? '').split(' ').filter(Boolean),
  };
}

async function run<T>(
  operation: Operation,
  options: OAuthServerOptions,
  work: (ctx: {
    as: oauth.AuthorizationServer;
    client: oauth.Client;
    options: ReturnType<typeof requestOptions>;
  }) => Promise<T>,
): Promise<T> {
  const { as, insecure } = serverOf(options.authUrl);
  const { fetch: fetchImpl, last } = gotFetch(options);
  try {
    return await work({
      as,
      client: { client_id: options.clientId },
      options: requestOptions(insecure, fetchImpl),
    });
  } catch (error) {
    throw mapError(operation, error, last());
  }
}

/** Exchanges the authorization code (from validateCallback) for the first token pair. */
export function exchangeCode(
  input: OAuthServerOptions & { code: string; redirectUri: string; codeVerifier: string },
): Promise<OAuthTokens> {
  return run('token exchange', input, async ({ as, client, options }) => {
    // The state was checked by validateCallback; this only gives oauth4webapi its validated parameters.
    const callback = oauth.validateAuthResponse(
      as,
      client,
      new URLSearchParams({ code: input.code }),
      oauth.skipStateCheck,
    );
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      client,
      oauth.None(),
      callback,
      input.redirectUri,
      input.codeVerifier,
      options,
    );
    return tokensOf(await oauth.processAuthorizationCodeResponse(as, client, response));
  });
}

/** Rotates: the answer holds a new refresh token and the one sent stops working. */
export function refreshTokens(
  input: OAuthServerOptions & { refreshToken: string },
): Promise<OAuthTokens> {
  return run('token refresh', input, async ({ as, client, options }) => {
    const response = await oauth.refreshTokenGrantRequest(
      as,
      client,
      oauth.None(),
      input.refreshToken,
      options,
    );
    return tokensOf(
      await oauth.processRefreshTokenResponse(as, client, response),
      input.refreshToken,
    );
  });
}

/** RFC 7009 revocation; revoking a refresh token disconnects the app. */
export function revokeToken(
  input: OAuthServerOptions & { token: string; tokenTypeHint?: 'access_token' | 'refresh_token' },
): Promise<void> {
  return run('token revocation', input, async ({ as, client, options }) => {
    const response = await oauth.revocationRequest(as, client, oauth.None(), input.token, {
      ...options,
      ...(input.tokenTypeHint
        ? { additionalParameters: { token_type_hint: input.tokenTypeHint } }
        : {}),
    });
    await oauth.processRevocationResponse(response);
  });
}
