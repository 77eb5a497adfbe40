import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

/**
 * The general error shape's `status`: the HTTP status's name in snake case, as the spec's
 * example (`unauthorized`) and the sandbox write it: 413 `payload_too_large`, 431
 * `request_header_fields_too_large`.
 */
export function httpStatusName(status: number): string {
  return (STATUS_CODES[status] ?? 'error').toLowerCase().replace(/[^a-z0-9]+/g, '_');
}

/**
 * The answer to a client error Node reports before any route runs (a request not received in
 * time, headers over the size limit, bytes that are not HTTP/1.1), in the spec's general error
 * shape (the envelope of api/schemas) rather than Fastify's own: a Fastify server's
 * `clientErrorHandler`. The sandbox and the webhook receiver both use it; `answered` is told
 * each status sent (the receiver counts them as refused deliveries).
 */
export function answerClientError(
  timeouts: { requestTimeoutMs: number; headersTimeoutMs?: number },
  answered?: (status: number) => void,
) {
  const { requestTimeoutMs, headersTimeoutMs = requestTimeoutMs } = timeouts;
  // Node reports both of its timeouts with the same code: the answer names both when they differ.
  const late =
    headersTimeoutMs < requestTimeoutMs
      ? `The request was not received in time: its headers within ${headersTimeoutMs / 1000} s, all of it within ${requestTimeoutMs / 1000} s`
      : `The request was not received within ${requestTimeoutMs / 1000} s`;
  return (error: Error & { code?: string }, socket: Socket): void => {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const [status, reason, message] =
      error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'request_timeout', late]
        : error.code === 'HPE_HEADER_OVERFLOW'
          ? [431, 'headers_too_large', 'The request headers are too large']
          : [400, 'malformed_request', 'The request is not valid HTTP/1.1'];
    const body = errorBody(status, reason, message);
    if (socket.writable) {
      answered?.(status);
      socket.write(
        `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nConnection: close\r\n` +
          `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
    }
    socket.destroy();
  };
}

const errorBody = (status: number, reason: string, message: string): string =>
  JSON.stringify({ meta: { status: 'error' }, status: httpStatusName(status), reason, message });

/**
 * Node's server options for a server that answers its refusals (answerNodeRefusals): Node's own
 * Host check, which answers 400 with an empty body, turned off. Spread into the Fastify
 * instance's `http` (or `https`) options: Node reads them when the server is made.
 */
export const NODE_REFUSALS_ANSWERED = { requireHostHeader: false } as const;

/**
 * The two refusals Node's HTTP server makes itself, with an empty body, answered in the general
 * error shape too: an HTTP/1.1 request without a Host header, 400 (Node's own check is turned
 * off by NODE_REFUSALS_ANSWERED, which the server must be made with, and made here, in the
 * first hook, so the app's other hooks see the answer as any other),
 * and an Expect header other than 100-continue, 417 (no hook sees it: told to `answered`, as
 * answerClientError's are).
 */
export function answerNodeRefusals(
  app: FastifyInstance,
  answered?: (status: number) => void,
): void {
  app.server.on('checkExpectation', (_request, response: ServerResponse) => {
    answered?.(417);
    const body = errorBody(
      417,
      'expectation_not_supported',
      'The Expect header is not supported: only 100-continue is',
    );
    response.writeHead(417, {
      connection: 'close',
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
    });
    response.end(body);
  });
  app.addHook('onRequest', (request, reply, done) => {
    if (request.raw.httpVersion !== '1.1' || request.headers.host !== undefined) {
      done();
      return;
    }
    void reply
      .code(400)
      .header('connection', 'close')
      .type('application/json; charset=utf-8')
      .send(errorBody(400, 'host_missing', 'An HTTP/1.1 request needs a Host header'));
  });
}
