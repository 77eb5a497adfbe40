import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply } from 'fastify';
import {
  answerClientError,
  answerNodeRefusals,
  NODE_REFUSALS_ANSWERED,
} from '../api/schemas/client-error-answer.js';
import { ROUTES, type RouteDef } from '../api/routes.js';
import { authenticate, requirePermission, type Caller } from './auth.js';
import type { Handlers, SandboxContext } from './context.js';
import { ApiError, badRequest, forbidden, generalError } from './errors.js';
import { answerPlainHttp } from './plain-on-tls.js';

/**
 * What one client may hold of the server: without these a bodyless POST that announced a
 * body stayed open for minutes, and any number of such sockets could pile up.
 */
export interface ServerLimits {
  /** Headers and body must have arrived within this time; then 408 and the socket closes. */
  requestTimeoutMs: number;
  /** A socket with no traffic this long is closed (above the largest injected latency). */
  idleTimeoutMs: number;
  /** How long a kept-alive socket waits for its next request. */
  keepAliveTimeoutMs: number;
  /** Open sockets at once; further connections are closed as they arrive. */
  maxConnections: number;
}

export const DEFAULT_SERVER_LIMITS: ServerLimits = {
  requestTimeoutMs: 10_000,
  idleTimeoutMs: 75_000,
  keepAliveTimeoutMs: 5_000,
  maxConnections: 256,
};

export interface AppOptions {
  https?: { key: string; cert: string };
  /** Timeouts and the connection cap (DEFAULT_SERVER_LIMITS otherwise). */
  limits?: Partial<ServerLimits>;
  /** Extra routes outside /api/v1 (OAuth server, admin API). */
  plugins?: ((app: FastifyInstance) => void)[];
  /** Unexpected errors (answered 500), with the route they came from as `METHOD /path/:param`. */
  onInternalError?: (error: unknown, route: string) => void;
}

/** `/api/v1/leads/{lead_id}` → `/api/v1/leads/:lead_id` */
function fastifyPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ':$1');
}

function send(reply: FastifyReply, error: ApiError): FastifyReply {
  return reply.code(error.statusCode).headers(error.headers).send(error.body);
}

/**
 * The spec has every body as JSON ("Content-Type: application/json"), so another type is a
 * 415 naming it: read as JSON anyway, a client that mislabelled its bodies passed here and
 * would fail against the service.
 */
function unsupportedBody(contentType: string | undefined): ApiError {
  const type = (contentType ?? '').split(';')[0]?.trim().toLowerCase().slice(0, 80) || 'unlabelled';
  return generalError(
    415,
    'unsupported_media_type',
    'content_type_unsupported',
    `The body is ${type}; send it as application/json`,
  );
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

declare module 'fastify' {
  interface FastifyContextConfig {
    routeId?: string;
  }
}

export function buildApp(
  ctx: SandboxContext,
  handlers: Handlers,
  options: AppOptions = {},
): FastifyInstance {
  const limits = { ...DEFAULT_SERVER_LIMITS, ...options.limits };
  // Node checks the request timeout on an interval: often enough that it holds to the second.
  const timeouts = {
    headersTimeout: limits.requestTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    connectionsCheckingInterval: Math.min(1_000, limits.requestTimeoutMs),
    ...NODE_REFUSALS_ANSWERED,
  };
  const app = Fastify({
    logger: false,
    bodyLimit: 1_048_576,
    requestTimeout: limits.requestTimeoutMs,
    connectionTimeout: limits.idleTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    clientErrorHandler: answerClientError({ requestTimeoutMs: limits.requestTimeoutMs }),
    ...(options.https ? { https: { ...options.https, ...timeouts } } : { http: timeouts }),
    // The spec's query arrays (`category_ids[]=1&category_ids[]=2`) keep their brackets.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    // The router rejects undecodable (`%zz`) and over-long path segments before any error
    // handler runs; without this they would answer in Fastify's own shape.
    frameworkErrors: (error: FastifyError, _request: unknown, reply: FastifyReply): void => {
      send(
        reply,
        badRequest(
          'invalid_parameter',
          error.code === 'FST_ERR_MAX_PARAM_LENGTH'
            ? 'A path parameter is longer than 200 characters'
            : 'The request path is not validly percent-encoded',
        ),
      );
    },
  }) as unknown as FastifyInstance;

  // Legacy callers send `Content-Type: application/json` on every call, bodyless DELETEs and
  // action POSTs included: an empty (or blank) body is no body, not malformed JSON.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  answerNodeRefusals(app);
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    void parseJson(request, text, done);
  });

  // The OAuth endpoints take forms (RFC 6749); everywhere else a form or text body is a 415,
  // unless it is empty, which is no body whatever its type.
  app.addContentTypeParser(
    ['application/x-www-form-urlencoded', 'text/plain'],
    { parseAs: 'string' },
    (request, body, done) => {
      const text = typeof body === 'string' ? body : body.toString('utf8');
      if (request.url.startsWith('/oauth/')) {
        done(null, Object.fromEntries(new URLSearchParams(text)));
      } else if (text.trim() === '') {
        done(null, undefined);
      } else {
        done(unsupportedBody(request.headers['content-type']), undefined);
      }
    },
  );

  app.setErrorHandler((error: FastifyError | ApiError, request, reply) => {
    if (error instanceof ApiError) return send(reply, error);
    const status = error.statusCode ?? 500;
    if (status === 400 && /JSON/i.test(error.message)) {
      return send(reply, badRequest('malformed_json', 'The request body is not valid JSON'));
    }
    if (status === 415) return send(reply, unsupportedBody(request.headers['content-type']));
    if (status === 413) {
      return send(
        reply,
        generalError(
          413,
          'payload_too_large',
          'body_too_large',
          'The request body is larger than 1 MB',
        ),
      );
    }
    if (status >= 400 && status < 500) {
      return send(reply, badRequest('bad_request', error.message));
    }
    // The route's pattern, not the URL: a query can hold a customer's e-mail (the leads filter).
    options.onInternalError?.(
      error,
      `${request.method} ${request.routeOptions.url ?? request.url.split('?')[0] ?? ''}`,
    );
    return send(
      reply,
      generalError(500, 'error', 'internal_error', 'The sandbox failed to handle this request'),
    );
  });

  app.setNotFoundHandler((request, reply) =>
    send(
      reply,
      generalError(
        404,
        'not_found',
        'route_not_found',
        `No route for ${request.method} ${request.url.split('?')[0]}`,
      ),
    ),
  );

  app.addHook('onResponse', (request, reply, done) => {
    const routeId =
      request.routeOptions.config.routeId ??
      (request.routeOptions.url ? `${request.method} ${request.routeOptions.url}` : 'unmatched');
    ctx.counters.countRequest(routeId, reply.statusCode);
    done();
  });

  for (const route of ROUTES as readonly RouteDef[]) {
    const handler = handlers[route.id];
    if (!handler) continue;
    app.route({
      method: route.method,
      url: fastifyPath(route.path),
      config: { routeId: route.id },
      handler: async (request, reply) => {
        const faults = ctx.faults;
        if (faults.latencyMs > 0) await sleep(faults.latencyMs);
        if (faults.dropRate > 0 && Math.random() < faults.dropRate) {
          ctx.counters.faultsInjected += 1;
          request.raw.socket.destroy();
          return reply.hijack();
        }
        if (faults.errorRate > 0 && Math.random() < faults.errorRate) {
          ctx.counters.faultsInjected += 1;
          const statuses = faults.errorStatuses.length > 0 ? faults.errorStatuses : [500];
          const status = statuses[Math.floor(Math.random() * statuses.length)] ?? 500;
          return send(
            reply,
            generalError(status, 'error', 'injected_fault', `Injected fault: HTTP ${status}`),
          );
        }
        const caller: Caller = authenticate(ctx.db, ctx.clock, request.headers);
        const wait = ctx.rateLimiter.check(caller.credential, ctx.clock.now());
        if (wait !== undefined) {
          ctx.counters.rateLimited += 1;
          const headers = { 'retry-after': String(wait) };
          if (ctx.rateLimiter.settings.mode === '403') {
            throw generalError(
              403,
              'forbidden',
              'rate_limit_exceeded',
              'Rate limit exceeded; slow down and retry later',
              headers,
            );
          }
          throw generalError(
            429,
            'too_many_requests',
            'rate_limit_exceeded',
            'Rate limit exceeded; retry after the delay in Retry-After',
            headers,
          );
        }
        if (route.appsOnly && caller.kind === 'key') {
          throw forbidden('apps_only', 'This operation is available to installed apps only');
        }
        requirePermission(caller, route.permissions);
        const params = request.params as Record<string, string>;
        for (const [name, value] of Object.entries(params)) {
          // Ids are positive: 0 is as malformed as -1 (it used to be looked up, and 404).
          if (!/^\d{1,15}$/.test(value) || Number(value) < 1) {
            throw badRequest(
              'invalid_parameter',
              `${name} must be a positive integer, got '${value.slice(0, 40)}'`,
            );
          }
        }
        let body: unknown = request.body;
        if (route.method !== 'GET' && route.method !== 'DELETE') {
          if (body === undefined || body === null) body = {};
          if (typeof body !== 'object' || Array.isArray(body)) {
            throw badRequest('invalid_body', 'The request body must be a JSON object');
          }
        }
        const result = await handler({
          ctx,
          caller,
          params,
          query: request.query as Record<string, unknown>,
          body,
        });
        if (result === undefined) return reply.code(200).send();
        // Encoded here, once: given a string, fastify scans it for its UTF-8 length and then
        // encodes it again to write it (~0.5 ms more for a 180 KiB page of leads).
        return reply
          .code(200)
          .type('application/json; charset=utf-8')
          .send(Buffer.from(JSON.stringify(result)));
      },
    });
  }

  for (const plugin of options.plugins ?? []) plugin(app);
  app.server.maxConnections = limits.maxConnections;
  if (options.https) answerPlainHttp(app.server, limits.idleTimeoutMs);
  return app;
}
