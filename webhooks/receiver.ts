import { randomBytes } from 'node:crypto';
import { committedWithin } from './commit-deadline.js';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import {
  answerClientError,
  answerNodeRefusals,
  NODE_REFUSALS_ANSWERED,
  httpStatusName,
} from '../api/schemas/client-error-answer.js';
import type { Notice } from '../store/inbox.js';
import type { Taking } from './spooled-store.js';
import { isConnectionName } from '../config/connection-names.js';
import { isLoopbackHost } from '../config/loopback.js';
import { sameSecret } from '../config/secret-compare.js';
import { MalformedDeliveryError, parseDelivery, type Delivery } from './delivery.js';
import type { ReceiverStatsRecorder } from './receiver-stats.js';
import {
  SIGNATURE_MISMATCH,
  SignatureError,
  idHeaderOf,
  signatureHeaderOf,
  verifySignature,
  type SignatureScheme,
} from './signature.js';

/** `type/subtype` at the start of a Content-Type, as fastify requires of one. */
const MEDIA_TYPE = /^[^\s/;]+\/[^\s/;]+/;

/** What the receiver knows of a connection's webhooks. */
export interface ConnectionHook {
  /** The secret deliveries are signed with. */
  secret: string;
  /** Where the connection's records are written (a destination target). */
  destination: string;
}

/** How long the receiver waits for a slow client, and how many it holds at once. */
export interface ServerLimits {
  /** Until the whole request (headers and body) has arrived. */
  requestTimeoutMs: number;
  /** Until the headers have arrived; at most requestTimeoutMs. */
  headersTimeoutMs: number;
  /** An idle kept-alive connection between requests. */
  keepAliveTimeoutMs: number;
  /** A connection on which nothing moves. */
  connectionTimeoutMs: number;
  maxConnections: number;
}

export const DEFAULT_LIMITS: ServerLimits = {
  requestTimeoutMs: 10_000,
  headersTimeoutMs: 5_000,
  keepAliveTimeoutMs: 5_000,
  connectionTimeoutMs: 10_000,
  maxConnections: 1_000,
};

export interface ReceiverOptions {
  /** The connection's signing secret, or undefined when it has no webhooks registered. */
  hookOf(connectionId: string): Promise<ConnectionHook | undefined>;
  /**
   * Stores a verified notice durably (the store's inbox, group-committed, or the receiver's
   * spool while the store is away): the 2xx waits for it. A rejection means the notice is not
   * safe: the sender is answered 503 and retries.
   */
  store(notice: Notice): Promise<Taking>;
  /**
   * Told of each notice stored in the inbox (new or not): the connection's drain is to be
   * woken. Not of a spooled one: its drain is woken once it is forwarded.
   */
  stored?(connectionId: string, hook: ConnectionHook): void;
  scheme: SignatureScheme;
  /** Largest body accepted, in bytes. */
  bodyLimit: number;
  /** Development only (config refuses it in production): deliveries without a signature pass. */
  allowUnsigned: boolean;
  /** Timeouts and the connection cap; DEFAULT_LIMITS when not given. */
  limits?: ServerLimits;
  /**
   * How long a delivery waits for the store's commit before it is answered 503 (half the
   * request timeout unless given): a store locked by another process would otherwise hold the
   * answer until the server closed the connection, and the sender would get no answer at all.
   * A notice committed after its 503 is deduped when the sender retries.
   */
  storeWaitMs?: number;
  /** Where refusals and failed stores are told (never secrets or bodies). */
  log?: (level: 'info' | 'warn', fields: Record<string, unknown>, message: string) => void;
  /**
   * Counts answers and latency, served at `GET /webhooks/_stats` to loopback callers that
   * bring `statsToken` as `Authorization: Bearer …` (a proxy on the same host makes every
   * caller loopback); to nobody without a token.
   */
  stats?: ReceiverStatsRecorder;
  statsToken?: string;
}

/** How long a sender should wait before retrying after a 503. */
const RETRY_AFTER_SECONDS = 5;
/** How often Node checks the request and headers timeouts (its default is 30 s). */
const TIMEOUT_CHECK_MS = 1_000;

/** Every 404, `_stats` to a caller without its token too: the one route a sender may use. */
const NO_ROUTE_MESSAGE = 'no such route: only POST /webhooks/{connection} is served';
const BAD_PATH_MESSAGE =
  'the path is not validly percent-encoded, or its connection id is too long (100 characters at most)';

/** The spec's general error shape, one line of message. */
function refuse(
  reply: FastifyReply,
  status: number,
  reason: string,
  message: string,
): FastifyReply {
  return reply.code(status).send({
    meta: { status: 'error' },
    status: httpStatusName(status),
    reason,
    message,
  });
}

/** A delivery not taken through no fault of the sender's: 503 with Retry-After, so it retries. */
function retryLater(reply: FastifyReply, reason: string, what: string): FastifyReply {
  void reply.header('retry-after', String(RETRY_AFTER_SECONDS));
  return refuse(reply, 503, reason, `${what}; retry later`);
}

/**
 * The webhook receiver: `POST /webhooks/{connection}`. The signature is checked on the raw
 * bytes before anything parses them; a verified delivery's notice is committed to the store's
 * inbox before the 2xx, so every delivery answered 2xx survives a crash of this process (and,
 * on SQLite with synchronous FULL, a power cut). Bad input is a 4xx and stores nothing; a
 * notice that neither the store nor the receiver's spool could take is a 503, which senders
 * retry. A connection without a registration
 * is answered exactly as a bad signature is, so names cannot be told apart from outside.
 */
export function createReceiver(options: ReceiverOptions): FastifyInstance {
  const limits = options.limits ?? DEFAULT_LIMITS;
  const app = Fastify({
    logger: false,
    bodyLimit: options.bodyLimit,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    connectionTimeout: limits.connectionTimeoutMs,
    http: {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: TIMEOUT_CHECK_MS,
      ...NODE_REFUSALS_ANSWERED,
    },
    // The router refuses an undecodable (`%ff`) or over-long path segment before any error
    // handler runs: without this, the answer would come in Fastify's own shape.
    frameworkErrors: (_error, request, reply) => {
      // Not seen by the onResponse hook below, which counts the rest: a delivery refused too.
      if (request.method === 'POST') options.stats?.record(400, 0);
      void refuse(reply, 400, 'bad_path', BAD_PATH_MESSAGE);
    },
    // Headers over Node's limit, a request not received in time, bytes that are not HTTP: the
    // same shape as every other refusal, and counted as one (no route or hook sees them).
    clientErrorHandler: answerClientError(limits, (status) => options.stats?.record(status, 0)),
  });
  app.server.maxConnections = limits.maxConnections;
  answerNodeRefusals(app, (status) => options.stats?.record(status, 0));
  const storeWaitMs = options.storeWaitMs ?? Math.floor(limits.requestTimeoutMs / 2);
  const log = options.log ?? (() => undefined);
  const signatureHeader = signatureHeaderOf(options.scheme);
  const idHeader = idHeaderOf(options.scheme);
  // Unknown connections are checked against a secret nobody has: the same checks, the same
  // answers (a missing header, a stale timestamp, a signature that does not match).
  const decoy: ConnectionHook = {
    secret: `whsec_${randomBytes(32).toString('base64')}`,
    destination: '',
  };

  app.removeAllContentTypeParsers();
  // Every body stays bytes: the signature covers them exactly as sent.
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  // Whatever the Content-Type says, the body is read as bytes: one that is no media type at all
  // (empty, `;`, a word) made fastify answer 415 before any parser ran, refusing a delivery
  // whose signature and body may be right.
  app.addHook('onRequest', (request, _reply, done) => {
    const type = request.headers['content-type'];
    if (type !== undefined && !MEDIA_TYPE.test(type)) {
      request.headers['content-type'] = 'application/octet-stream';
    }
    done();
  });

  app.setNotFoundHandler((_request, reply) =>
    refuse(reply, 404, 'route_unknown', NO_ROUTE_MESSAGE),
  );
  app.setErrorHandler((error: Error & { statusCode?: number; code?: string }, _request, reply) => {
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      return refuse(
        reply,
        413,
        'body_too_large',
        `the body is larger than ${options.bodyLimit} bytes`,
      );
    }
    const status = error.statusCode;
    if (status !== undefined && status >= 400 && status < 500) {
      return refuse(reply, 400, 'bad_request', error.message.split('\n')[0] ?? 'bad request');
    }
    log('warn', { error: error.name }, 'webhook receiver failed; asking the sender to retry');
    return retryLater(reply, 'unavailable', 'the receiver could not take the delivery');
  });

  const stats = options.stats;
  if (stats) {
    // The answer comes after the commit, so its elapsed time is delivery → stored.
    app.addHook('onResponse', async (request, reply) => {
      if (request.method === 'POST' && request.routeOptions.url === '/webhooks/:connection') {
        stats.record(reply.statusCode, reply.elapsedTime);
      }
    });
    app.get('/webhooks/_stats', async (request, reply) => {
      const peer = (request.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
      const bearer = /^Bearer (\S+)$/.exec(request.headers.authorization ?? '')?.[1];
      const token = options.statsToken;
      if (!isLoopbackHost(peer) || !token || !bearer || !sameSecret(bearer, token)) {
        return refuse(reply, 404, 'route_unknown', NO_ROUTE_MESSAGE);
      }
      return reply.header('cache-control', 'no-store').send(stats.snapshot());
    });
  }

  app.post<{ Params: { connection: string } }>('/webhooks/:connection', async (request, reply) => {
    const connectionId = request.params.connection;
    const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const registered = isConnectionName(connectionId)
      ? await options.hookOf(connectionId)
      : undefined;
    const hook = registered ?? decoy;
    let headerId: string | undefined;
    const signed = request.headers[signatureHeader] !== undefined;
    if (signed || !options.allowUnsigned || !registered) {
      try {
        headerId = verifySignature(options.scheme, hook.secret, request.headers, body);
        if (registered) options.stats?.signatureVerified(connectionId);
      } catch (error) {
        if (error instanceof MalformedDeliveryError) {
          log('info', { connectionId, reason: error.message }, 'webhook refused');
          return refuse(reply, 400, 'malformed_delivery', error.message);
        }
        if (!(error instanceof SignatureError)) throw error;
        log(
          'info',
          { connectionId, reason: registered ? error.message : 'no webhooks registered' },
          'webhook refused',
        );
        if (registered && signed && error.kind !== 'missing') {
          options.stats?.signatureRefused(connectionId);
        }
        // Said alike of a connection with no registration (checked against the decoy): a
        // sender whose secret is right learns where else to look, a prober learns nothing.
        return refuse(
          reply,
          401,
          signed && error.kind !== 'missing' ? 'signature_invalid' : 'signature_missing',
          error.kind === 'mismatch'
            ? `${SIGNATURE_MISMATCH} as signed with this connection's secret, or the connection has no webhooks registered at this receiver`
            : error.message,
        );
      }
    } else if (idHeader !== undefined) {
      // Unsigned and allowed (development): the id header, when sent, still names the delivery,
      // as it does for a signed one; it was ignored, and a body without an `id` was refused
      // as having no id at all.
      const id = request.headers[idHeader];
      if (typeof id === 'string') headerId = id;
    }
    let delivery: Delivery | undefined;
    try {
      delivery = parseDelivery(connectionId, body, headerId);
    } catch (error) {
      if (!(error instanceof MalformedDeliveryError)) throw error;
      log('info', { connectionId, reason: error.message }, 'webhook refused');
      return refuse(reply, 400, 'malformed_delivery', error.message);
    }
    if (!delivery) return reply.code(200).send({ meta: { status: 'ok' }, ignored: true });
    let acceptance: Taking;
    try {
      acceptance = await committedWithin(
        options.store({
          connectionId,
          deliveryId: delivery.deliveryId,
          resource: delivery.resource,
          recordId: delivery.recordId,
          action: delivery.action,
          occurredAt: delivery.occurredAt,
        }),
        storeWaitMs,
      );
    } catch (error) {
      log(
        'warn',
        { connectionId, deliveryId: delivery.deliveryId, error: (error as Error).message },
        'webhook notice could not be stored; answered 503',
      );
      return retryLater(reply, 'store_unavailable', 'the delivery could not be stored');
    }
    // Woken for a duplicate too: the first copy's wake-up may have been lost with a crash.
    if (acceptance !== 'spooled') options.stored?.(connectionId, hook);
    return reply.code(200).send({
      meta: { status: 'ok' },
      delivery_id: delivery.deliveryId,
      ...(acceptance === 'duplicate' ? { duplicate: true } : {}),
    });
  });
  return app;
}
