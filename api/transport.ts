import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import got, { RequestError, type Got, type Method } from 'got';
import type { z } from 'zod';
import { isLoopbackHost } from '../config/loopback.js';
import { REDIRECT_POLICY, redirectRefusal } from '../config/redirect-policy.js';
import { authHeaders, type ClientAuth } from './auth.js';
import {
  BadRequestError,
  errorFromResponse,
  isUntrustedCertificate,
  NetworkError,
  RequestValidationError,
  ResponseShapeError,
  TlsTrustError,
  untrustedCertificateMessage,
  type EbsError,
} from './errors.js';
import { fillPath, withRouteOverrides, type RouteDef } from './routes.js';

export interface TransportOptions {
  /** {base_url}: the service address up to and including /api/v1/. */
  baseUrl: string;
  auth: ClientAuth;
  /** Plain http:// is refused unless this is set and the host is loopback (the sandbox with --http). */
  allowInsecureLoopback?: boolean;
  /** Extra certificate authority (PEM), e.g. the sandbox's. */
  ca?: string | Buffer;
  /** Per-request timeout in milliseconds (default 30 s). */
  timeoutMs?: number;
  /** Overrides of assumed routes: `{ "leadBookings.update": "PUT /api/v1/..." }`. */
  routeOverrides?: Readonly<Record<string, string>>;
  userAgent?: string;
  /** Called after every answered request (metrics, tests). */
  onResponse?: (info: { operation: string; status: number; durationMs: number }) => void;
}

/** Bad client options: fix the code or configuration. */
/** Strict, so that an answer that is not UTF-8 is told apart (and decoded as before). */
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * An answer's text. A page of leads whose names and notes mix scripts took Node's
 * Buffer#toString about twice as long to decode as a strict TextDecoder (4.4 against 2.2 ms
 * for a 236 KB page on the 2-core machine), more than JSON.parse of it (0.7 ms); an answer
 * that is not valid UTF-8 is decoded as before, with replacement characters.
 */
export function textOf(body: Buffer): string {
  try {
    return utf8.decode(body);
  } catch {
    return body.toString('utf8');
  }
}

export class ClientConfigError extends Error {
  override readonly name = 'ClientConfigError';
  readonly retryable = false;
}

export type Query = Readonly<
  Record<string, string | number | boolean | readonly (string | number)[] | undefined>
>;

export interface CallOptions<Body, Out> {
  params?: Readonly<Record<string, string | number>>;
  query?: Query;
  body?: Body;
  /** Strict writer: the body must pass before anything is sent. */
  bodySchema?: z.ZodType<Body>;
  /** Query parameters are checked the same way. */
  querySchema?: z.ZodType;
  /** Tolerant reader: unknown fields pass through. */
  responseSchema: z.ZodType<Out>;
}

function fieldErrors(error: z.ZodError): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const issue of error.issues) {
    const path = issue.path.map(String).join('.') || '(body)';
    (out[path] ??= []).push(issue.message);
  }
  return out;
}

function checked(operation: string, what: string, schema: z.ZodType, value: unknown): unknown {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const fields = fieldErrors(parsed.error);
  const summary = Object.entries(fields)
    .map(([f, m]) => `${f}: ${m.join(', ')}`)
    .join('; ');
  throw new RequestValidationError(`${operation}: invalid ${what} (${summary})`, fields, {
    operation,
  });
}

function toQuery(query: Query | undefined): URLSearchParams {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value === undefined) continue;
    if (Array.isArray(value))
      for (const v of value as readonly (string | number)[]) search.append(name, String(v));
    else search.append(name, String(value));
  }
  return search;
}

/** One HTTP exchange per call: no retries of its own (Temporal owns retries), keep-alive, typed errors. */
export class Transport {
  private readonly http: Got;
  private readonly routes: ReadonlyMap<string, RouteDef>;
  readonly baseUrl: URL;

  constructor(private readonly options: TransportOptions) {
    let base: URL;
    try {
      base = new URL(options.baseUrl);
    } catch {
      throw new ClientConfigError(`baseUrl '${options.baseUrl}' is not a URL`);
    }
    if (
      base.protocol === 'http:' &&
      !(options.allowInsecureLoopback && isLoopbackHost(base.hostname))
    ) {
      throw new ClientConfigError(
        `baseUrl must use https:// (plain http only to loopback with allowInsecureLoopback), got ${base.origin}`,
      );
    }
    if (base.protocol !== 'https:' && base.protocol !== 'http:') {
      throw new ClientConfigError(`baseUrl must use https://, got ${base.protocol}`);
    }
    if (!base.pathname.endsWith('/')) base.pathname += '/';
    if (!/\/api\/v1\/$/.test(base.pathname)) {
      throw new ClientConfigError(`baseUrl must end with /api/v1/, got ${base.pathname}`);
    }
    this.baseUrl = base;
    try {
      this.routes = withRouteOverrides(options.routeOverrides ?? {});
    } catch (error) {
      throw new ClientConfigError((error as Error).message);
    }
    this.http = got.extend({
      agent: {
        http: new HttpAgent({ keepAlive: true, maxSockets: 64 }),
        https: new HttpsAgent({ keepAlive: true, maxSockets: 64 }),
      },
      ...(options.ca ? { https: { certificateAuthority: options.ca } } : {}),
      timeout: { request: options.timeoutMs ?? 30_000 },
      retry: { limit: 0 },
      throwHttpErrors: false,
      ...REDIRECT_POLICY,
      headers: { accept: 'application/json', 'user-agent': options.userAgent ?? 'ebsync' },
    });
  }

  route(id: string): RouteDef {
    const route = this.routes.get(id);
    if (!route) throw new ClientConfigError(`unknown operation ${id}`);
    return route;
  }

  /** URL of a route: the path below /api/v1 resolved against the configured base. */
  url(route: RouteDef, params: Readonly<Record<string, string | number>> = {}): URL {
    const path = fillPath(route.path, params).replace(/^\/api\/v1\//, '');
    const url = new URL(path, this.baseUrl);
    // Credentials go with every request: never anywhere but below the base URL.
    if (url.origin !== this.baseUrl.origin || !url.pathname.startsWith(this.baseUrl.pathname)) {
      throw new ClientConfigError(`${route.id} resolves outside ${this.baseUrl.href}`);
    }
    return url;
  }

  async call<Body, Out>(operation: string, options: CallOptions<Body, Out>): Promise<Out> {
    const route = this.route(operation);
    let body: unknown = options.body;
    if (options.bodySchema && body !== undefined) {
      body = checked(operation, 'request body', options.bodySchema, body);
    }
    let query = options.query;
    if (options.querySchema && query !== undefined) {
      query = checked(operation, 'query', options.querySchema, query) as Query;
    }
    const url = this.url(route, options.params);
    const searchParams = toQuery(query);

    let auth = await authHeaders(this.options.auth);
    let response = await this.send(operation, route.method, url, searchParams, body, auth.headers);
    if (response.status === 401 && this.options.auth.kind === 'bearer') {
      // One fresh token, then give up: the token owner decides whether the grant is gone.
      auth = await authHeaders(this.options.auth, auth.token ? { rejectedToken: auth.token } : {});
      response = await this.send(operation, route.method, url, searchParams, body, auth.headers);
    }
    let json: unknown;
    try {
      json = response.text === '' ? undefined : JSON.parse(response.text);
    } catch {
      if (response.status >= 200 && response.status < 300) {
        throw new ResponseShapeError(`${operation}: HTTP ${response.status} answer is not JSON`, {
          operation,
          status: response.status,
        });
      }
      json = undefined;
    }
    const location = response.headers.location;
    const redirect = redirectRefusal(
      response.status,
      url,
      typeof location === 'string' ? location : undefined,
    );
    if (redirect) {
      throw new BadRequestError(`${operation}: ${redirect}; check EBS_BASE_URL`, {
        operation,
        status: response.status,
      });
    }
    if (response.status < 200 || response.status >= 300) {
      throw errorFromResponse(response.status, json, response.headers, operation);
    }
    const parsed = options.responseSchema.safeParse(json);
    if (!parsed.success) {
      const first = parsed.error.issues[0];
      throw new ResponseShapeError(
        `${operation}: answer does not match the spec at ${first?.path.join('.') || '(root)'}: ${first?.message ?? 'invalid'}`,
        { operation, status: response.status },
      );
    }
    return parsed.data;
  }

  private async send(
    operation: string,
    method: Method,
    url: URL,
    searchParams: URLSearchParams,
    body: unknown,
    headers: Record<string, string>,
  ): Promise<{
    status: number;
    text: string;
    headers: Record<string, string | string[] | undefined>;
  }> {
    const started = Date.now();
    try {
      const response = await this.http(url, {
        method,
        searchParams,
        headers,
        ...(body !== undefined && method !== 'GET' ? { json: body } : {}),
        // Decoded here (textOf), not by got: see there.
        responseType: 'buffer',
      });
      this.options.onResponse?.({
        operation,
        status: response.statusCode,
        durationMs: Date.now() - started,
      });
      return {
        status: response.statusCode,
        text: textOf(response.body),
        headers: response.headers,
      };
    } catch (error) {
      throw this.networkError(operation, error);
    }
  }

  /**
   * got's RequestError carries the request options, headers with the key or bearer token
   * included, and anything that inspects or logs the cause would print them: keep its code.
   */
  private networkError(operation: string, error: unknown): EbsError {
    if (error instanceof RequestError && isUntrustedCertificate(error.code)) {
      return new TlsTrustError(untrustedCertificateMessage(error.code, operation), {
        operation,
        cause: { code: error.code },
      });
    }
    if (error instanceof RequestError) {
      return new NetworkError(`${operation}: ${error.code} ${error.message}`, {
        operation,
        cause: { code: error.code },
      });
    }
    const code = (error as { code?: unknown } | null)?.code;
    return new NetworkError(`${operation}: ${String(error)}`, {
      operation,
      ...(typeof code === 'string' ? { cause: { code } } : {}),
    });
  }
}
