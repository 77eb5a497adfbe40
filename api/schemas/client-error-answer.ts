import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';

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
export function answerClientError(requestTimeoutMs: number, answered?: (status: number) => void) {
  return (error: Error & { code?: string }, socket: Socket): void => {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const [status, reason, message] =
      error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [
            408,
            'request_timeout',
            `The request was not received within ${requestTimeoutMs / 1000} s`,
          ]
        : error.code === 'HPE_HEADER_OVERFLOW'
          ? [431, 'headers_too_large', 'The request headers are too large']
          : [400, 'malformed_request', 'The request is not valid HTTP/1.1'];
    const body = JSON.stringify({
      meta: { status: 'error' },
      status: httpStatusName(status),
      reason,
      message,
    });
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
