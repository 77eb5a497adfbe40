import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';

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
    const [status, statusText, reason, message] =
      error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [
            408,
            'request_timeout',
            'request_timeout',
            `The request was not received within ${requestTimeoutMs / 1000} s`,
          ]
        : error.code === 'HPE_HEADER_OVERFLOW'
          ? [431, 'bad_request', 'headers_too_large', 'The request headers are too large']
          : [400, 'bad_request', 'malformed_request', 'The request is not valid HTTP/1.1'];
    const body = JSON.stringify({ meta: { status: 'error' }, status: statusText, reason, message });
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
