import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_SERVER_LIMITS } from '../../sandbox/app.js';
import { startSandbox } from '../../sandbox/server.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

let t: TestSandbox;
beforeAll(async () => {
  t = await startTestSandbox({
    serverLimits: { requestTimeoutMs: 400, keepAliveTimeoutMs: 400, maxConnections: 3 },
  });
});
afterAll(async () => {
  expect(t.internalErrors).toEqual([]);
  await t.close();
});

interface RawExchange {
  /** Everything the server wrote before the socket closed. */
  received: string;
  closed: Promise<string>;
  socket: Socket;
}

/** A raw TCP client that writes `request` (possibly nothing) and collects the answer. */
function raw(request: string): Promise<RawExchange> {
  const port = new URL(t.sb.url).port;
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    const exchange: RawExchange = {
      received: '',
      socket,
      // Bounded, so a server that keeps the socket open fails the test instead of hanging it.
      closed: new Promise((done, fail) => {
        const timer = setTimeout(
          () => fail(new Error('the socket is still open after 20 s')),
          20_000,
        );
        socket.on('close', () => {
          clearTimeout(timer);
          done(exchange.received);
        });
      }),
    };
    exchange.closed.catch(() => undefined);
    socket.setEncoding('utf8').on('data', (chunk: string) => (exchange.received += chunk));
    socket.on('error', () => undefined);
    socket.once('connect', () => {
      if (request) socket.write(request);
      resolve(exchange);
    });
    socket.once('error', reject);
  });
}

const head = (path: string, extra: string) =>
  `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nApi-Key: ${t.sb.apiKey}\r\n${extra}\r\n`;

describe('sandbox server limits', () => {
  it('has finite default timeouts and a connection cap', async () => {
    expect(DEFAULT_SERVER_LIMITS).toEqual({
      requestTimeoutMs: 10_000,
      idleTimeoutMs: 75_000,
      keepAliveTimeoutMs: 5_000,
      maxConnections: 256,
    });
    const dir = mkdtempSync(join(tmpdir(), 'ebsync-limits-'));
    const sb = await startSandbox({ certDir: dir });
    try {
      expect(sb.app.server.requestTimeout).toBe(10_000);
      expect(sb.app.server.headersTimeout).toBe(10_000);
      expect(sb.app.server.timeout).toBe(75_000);
      expect(sb.app.server.maxConnections).toBe(256);
    } finally {
      await sb.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('answers a POST whose announced body never comes with 408 in the spec shape, and closes', async () => {
    const id = (await t.request('POST', '/api/v1/add_on_categories', { json: { name: 'Slow' } }))
      .body.data.id as string;
    const exchange = await raw(
      head(
        `/api/v1/add_on_categories/${id}`,
        'Content-Type: application/json\r\nContent-Length: 40\r\n',
      ),
    );
    const answer = await exchange.closed;
    expect(answer).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toEqual({
      meta: { status: 'error' },
      status: 'request_timeout',
      reason: 'request_timeout',
      message: 'The request was not received within 0.4 s',
    });
  });

  it('answers a request without Host, and an Expect it does not take, in the spec shape', async () => {
    const bodyOf = (answer: string): unknown =>
      JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
    const noHost = await (
      await raw(
        `GET /api/v1/services HTTP/1.1\r\nApi-Key: ${t.sb.apiKey}\r\nConnection: close\r\n\r\n`,
      )
    ).closed;
    expect(noHost).toMatch(/^HTTP\/1\.1 400 /);
    expect(bodyOf(noHost)).toEqual({
      meta: { status: 'error' },
      status: 'bad_request',
      reason: 'host_missing',
      message: 'An HTTP/1.1 request needs a Host header',
    });
    const expectation = await (
      await raw(
        `GET /api/v1/services HTTP/1.1\r\nHost: x\r\nExpect: soon\r\nConnection: close\r\n\r\n`,
      )
    ).closed;
    expect(expectation).toMatch(/^HTTP\/1\.1 417 /);
    expect(bodyOf(expectation)).toMatchObject({
      status: 'expectation_failed',
      reason: 'expectation_not_supported',
    });
  });

  it('closes a connection that never sends a request', async () => {
    const exchange = await raw('');
    expect(await exchange.closed).toMatch(/^(HTTP\/1\.1 408 |$)/);
  });

  it('closes connections beyond the cap at once, and serves again when they are gone', async () => {
    // Three sockets stuck mid-request hold the three places.
    const held = await Promise.all(
      [1, 2, 3].map(() =>
        raw(head('/api/v1/leads', 'Content-Type: application/json\r\nContent-Length: 5\r\n')),
      ),
    );
    const extra = await raw('GET /api/v1/services HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(await extra.closed).toBe('');
    for (const h of held) h.socket.destroy();
    await Promise.all(held.map((h) => h.closed));
    const res = await t.request('GET', '/api/v1/services');
    expect(res.status).toBe(200);
  });
});

describe('sandbox on a non-loopback host', () => {
  // The caller says the host is remote (ebsync sandbox applies config/loopback.ts).
  const listen = { host: '0.0.0.0', remote: true };
  it('refuses to start unless allowRemote says so, and never over plain HTTP', async () => {
    await expect(startSandbox({ listen, port: 0 })).rejects.toThrow(
      /loopback only, not on 0\.0\.0\.0: its OAuth consent authenticates nobody/,
    );
    await expect(startSandbox({ listen, port: 0, allowRemote: true, http: true })).rejects.toThrow(
      /plain HTTP is allowed only on loopback, not on 0\.0\.0\.0/,
    );
    const dir = mkdtempSync(join(tmpdir(), 'ebsync-remote-'));
    const sb = await startSandbox({ listen, port: 0, allowRemote: true, certDir: dir });
    try {
      expect(sb.url).toMatch(/^https:\/\/0\.0\.0\.0:\d+$/);
    } finally {
      await sb.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
