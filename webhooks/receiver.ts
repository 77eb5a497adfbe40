import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { isLoopbackHost } from '../config/loopback.js';
import { sameSecret } from '../config/secret-compare.js';
import { MalformedDeliveryError, parseDelivery, type Delivery } from './delivery.js';
import type { ReceiverStatsRecorder } from './receiver-stats.js';
import {
  SignatureError,
  signatureHeaderOf,
  verifySignature,
  type SignatureScheme,
} from './signature.js';

/** What the receiver knows of a connection's webhooks. */
export interface ConnectionHook {
  /** The secret deliveries are signed with. */
  secret: string;
  /** Where the connection's records are written (a destination target). */
  destination: string;
}

/**
 * Hands a delivery to Temporal durably. A rejection for any reason means the delivery is not
 * safe yet: the sender is answered 503 and retries.
 */
export type HandOff = (delivery: Delivery, hook: ConnectionHook) => Promise<void>;

export interface ReceiverOptions {
  /** The connection's signing secret, or undefined when it has no webhooks registered. */
  hookOf(connectionId: string): Promise<ConnectionHook | undefined>;
  /** Hands a delivery to Temporal durably; the 2xx answer waits for it. */
  handOff: HandOff;
  scheme: SignatureScheme;
  /** Largest body accepted, in bytes. */
  bodyLimit: number;
  /** Development only (config refuses it in production): deliveries without a signature pass. */
  allowUnsigned: boolean;
  /** Where refusals and failed hand-offs are told (never secrets or bodies). */
  log?: (level: 'info' | 'warn', fields: Record<string, unknown>, message: string) => void;
  /**
   * Counts answers and latency, served at `GET /webhooks/_stats` to loopback callers that
   * bring `statsToken` as `Authorization: Bearer …` (a proxy on the same host makes every
   * caller loopback); to nobody without a token.
   */
  stats?: ReceiverStatsRecorder;
  statsToken?: string;
}

const CONNECTION_RULE = /^[a-z0-9][a-z0-9_-]{0,62}$/;
/** How long a sender should wait before retrying after a 503. */
const RETRY_AFTER_SECONDS = 5;

/** The spec's general error shape, one line of message. */
function refuse(
  reply: FastifyReply,
  status: number,
  reason: string,
  message: string,
): FastifyReply {
  const names: Record<number, string> = {
    400: 'bad_request',
    401: 'unauthorized',
    404: 'not_found',
    413: 'payload_too_large',
    503: 'service_unavailable',
  };
  return reply.code(status).send({
    meta: { status: 'error' },
    status: names[status] ?? 'error',
    reason,
    message,
  });
}

/**
 * The webhook receiver: `POST /webhooks/{connection}`. The signature is checked on the raw
 * bytes before anything parses them; a verified delivery is handed to Temporal before the 2xx,
 * so every delivery answered 2xx survives a crash of this process. Bad input is a 4xx and
 * starts nothing; a failed hand-off is a 503, which senders retry.
 */
export function createReceiver(options: ReceiverOptions): FastifyInstance {
  const app = Fastify({ logger: false, bodyLimit: options.bodyLimit });
  const log = options.log ?? (() => undefined);
  const signatureHeader = signatureHeaderOf(options.scheme);

  app.removeAllContentTypeParsers();
  // Every body stays bytes: the signature covers them exactly as sent.
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

  app.setNotFoundHandler((request, reply) =>
    refuse(
      reply,
      404,
      'route_unknown',
      `no such route: ${request.method} /webhooks/{connection} only`,
    ),
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
    void reply.header('retry-after', String(RETRY_AFTER_SECONDS));
    return refuse(
      reply,
      503,
      'unavailable',
      'the receiver could not take the delivery; retry later',
    );
  });

  const stats = options.stats;
  if (stats) {
    // The answer comes after the hand-off, so its elapsed time is delivery → hand-off.
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
        return refuse(reply, 404, 'route_unknown', 'no such route');
      }
      return reply.header('cache-control', 'no-store').send(stats.snapshot());
    });
  }

  app.post<{ Params: { connection: string } }>('/webhooks/:connection', async (request, reply) => {
    const connectionId = request.params.connection;
    if (!CONNECTION_RULE.test(connectionId)) {
      return refuse(
        reply,
        404,
        'connection_unknown',
        "the connection name must be 1-63 lowercase letters, digits, '-' or '_'",
      );
    }
    const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const hook = await options.hookOf(connectionId);
    if (!hook) {
      return refuse(
        reply,
        404,
        'connection_unknown',
        `connection '${connectionId}' has no webhooks registered (ebsync webhooks register)`,
      );
    }
    let headerId: string | undefined;
    const signed = request.headers[signatureHeader] !== undefined;
    if (signed || !options.allowUnsigned) {
      try {
        headerId = verifySignature(options.scheme, hook.secret, request.headers, body);
      } catch (error) {
        if (!(error instanceof SignatureError)) throw error;
        log('info', { connectionId, reason: error.message }, 'webhook refused');
        return refuse(
          reply,
          401,
          signed ? 'signature_invalid' : 'signature_missing',
          error.message,
        );
      }
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
    try {
      await options.handOff(delivery, hook);
    } catch (error) {
      log(
        'warn',
        { connectionId, deliveryId: delivery.deliveryId, error: (error as Error).message },
        'webhook hand-off to Temporal failed; answered 503',
      );
      void reply.header('retry-after', String(RETRY_AFTER_SECONDS));
      return refuse(
        reply,
        503,
        'temporal_unavailable',
        'the delivery could not be handed to Temporal; retry later',
      );
    }
    return reply.code(200).send({ meta: { status: 'ok' }, delivery_id: delivery.deliveryId });
  });
  return app;
}
