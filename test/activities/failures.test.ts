import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import {
  apiKeyAuth,
  bearerAuth,
  createClient,
  type Client,
  type ClientOptions,
} from '../../api/index.js';
import { errorFromResponse } from '../../api/errors.js';
import {
  DEFAULT_RATE_LIMIT_DELAY_MS,
  NEEDS_REAUTH,
  RETRY_JITTER,
  toActivityFailure,
  withServiceFailures,
} from '../../activities/failures.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { closedPort } from '../helpers/ports.js';

/**
 * The failures an activity leaves with when the service refuses or fails, produced by the
 * real client against the real sandbox and run in Temporal's mock activity environment.
 */
let tsb: TestSandbox;
let api: Client;

function clientWith(auth: ClientOptions['auth'], baseUrl = tsb.sb.baseUrl): Client {
  return createClient({ baseUrl, auth, allowInsecureLoopback: true });
}

/** The mock environment logs every failed activity at WARN; these failures are the point. */
function quietEnvironment(): MockActivityEnvironment {
  return new MockActivityEnvironment(undefined, { logger: new DefaultLogger('ERROR') });
}

/** What an activity wrapped in withServiceFailures rejects with. */
async function failureOf(call: () => Promise<unknown>): Promise<ApplicationFailure> {
  const env = quietEnvironment();
  try {
    await env.run(withServiceFailures(call));
  } catch (error) {
    expect(error).toBeInstanceOf(ApplicationFailure);
    return error as ApplicationFailure;
  }
  throw new Error('expected the activity to fail');
}

beforeAll(async () => {
  tsb = await startTestSandbox();
  api = clientWith(apiKeyAuth(tsb.sb.apiKey));
});
afterAll(async () => {
  await tsb?.close();
  expect(tsb?.internalErrors ?? []).toEqual([]);
});

describe('service refusals fail fast with the reason', () => {
  it('422 is a non-retryable ValidationError naming the operation and the field', async () => {
    const failure = await failureOf(() =>
      api.leads.create({ email: 'ok@example.com', package_id: 987_654 }),
    );
    expect(failure.type).toBe('ValidationError');
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toMatch(/^leads\.create: HTTP 422 /);
    expect(failure.details?.[0]).toMatchObject({
      operation: 'leads.create',
      status: 422,
      fieldErrors: { package_id: expect.any(Array) },
    });
  });

  it('403 is a non-retryable PermissionError', async () => {
    const { key } = tsb.sb.identity.createKey({
      userId: tsb.sb.userId,
      permissions: ['lead_read'],
    });
    const failure = await failureOf(() => clientWith(apiKeyAuth(key)).expenses.get(1));
    expect(failure).toMatchObject({ type: 'PermissionError', nonRetryable: true });
    expect(failure.message).toMatch(/^expenses\.get: HTTP 403 /);
    expect(failure.message).not.toContain(key);
  });

  it('404 is a non-retryable NotFoundError', async () => {
    const failure = await failureOf(() => api.leads.get(987_654_321));
    expect(failure).toMatchObject({ type: 'NotFoundError', nonRetryable: true });
    expect(failure.message).toMatch(/^leads\.get: HTTP 404 /);
  });

  it('400 is a non-retryable BadRequestError', async () => {
    const failure = await failureOf(() => api.leads.get('abc' as never));
    expect(failure).toMatchObject({ type: 'BadRequestError', nonRetryable: true });
    expect(failure.message).toMatch(/^leads\.get: HTTP 400 /);
  });
});

describe('outages retry on the retry policy', () => {
  it('5xx is a retryable ServerError without a delay of its own', async () => {
    tsb.sb.admin.setFaults({ errorRate: 1, errorStatuses: [503] });
    try {
      const failure = await failureOf(() => api.leads.list());
      expect(failure).toMatchObject({ type: 'ServerError', nonRetryable: false });
      expect(failure.nextRetryDelay).toBeUndefined();
    } finally {
      tsb.sb.admin.clearFaults();
    }
  });

  it('a network error is a retryable NetworkError', async () => {
    const offline = clientWith(
      apiKeyAuth(tsb.sb.apiKey),
      `http://127.0.0.1:${await closedPort()}/api/v1/`,
    );
    const failure = await failureOf(() => offline.leads.list());
    expect(failure).toMatchObject({ type: 'NetworkError', nonRetryable: false });
    expect(failure.nextRetryDelay).toBeUndefined();
    expect(failure.message).not.toContain(tsb.sb.apiKey);
  });
});

describe('rate limits retry when Retry-After says, plus jitter', () => {
  for (const mode of ['429', '403'] as const) {
    it(`${mode}: retryable, nextRetryDelay from Retry-After (1 s) plus at most ${RETRY_JITTER * 100}%`, async () => {
      tsb.sb.admin.setRateLimit({ perSecond: 1, mode });
      try {
        const failures = await Promise.all(
          [1, 2, 3].map(() =>
            // Three calls in a row cannot all fall in fresh one-second windows.
            failureOf(async () => {
              for (let call = 0; call < 3; call += 1) await api.leads.list();
            }),
          ),
        );
        for (const failure of failures) {
          expect(failure).toMatchObject({ type: 'RateLimitedError', nonRetryable: false });
          expect(failure.details?.[0]).toMatchObject({ status: Number(mode) });
          expect(failure.category).toBe(ApplicationFailureCategory.BENIGN);
          expect(failure.nextRetryDelay).toBeGreaterThanOrEqual(1000);
          expect(failure.nextRetryDelay).toBeLessThanOrEqual(1000 * (1 + RETRY_JITTER));
        }
      } finally {
        tsb.sb.admin.setRateLimit({ perSecond: 0, mode: '429' });
      }
    });
  }

  it('reads Retry-After given as an HTTP date, and spreads retries across the jitter range', () => {
    const at = new Date(Date.now() + 30_000).toUTCString();
    const error = errorFromResponse(429, {}, { 'retry-after': at }, 'leads.list');
    const low = toActivityFailure(error, () => 0) as ApplicationFailure;
    const high = toActivityFailure(error, () => 0.999) as ApplicationFailure;
    // HTTP dates have whole seconds: up to 1 s less than 30 s remains.
    expect(low.nextRetryDelay).toBeGreaterThan(28_000);
    expect(low.nextRetryDelay).toBeLessThanOrEqual(30_000);
    expect(high.nextRetryDelay).toBeGreaterThan(
      Number(low.nextRetryDelay) * (1 + RETRY_JITTER * 0.99),
    );
    expect(high.nextRetryDelay).toBeLessThanOrEqual(Math.ceil(30_000 * (1 + RETRY_JITTER)));
  });

  it('without Retry-After waits the default, plus jitter', () => {
    const error = errorFromResponse(429, {}, {}, 'leads.list');
    const failure = toActivityFailure(error, () => 0.5) as ApplicationFailure;
    expect(failure.nextRetryDelay).toBe(DEFAULT_RATE_LIMIT_DELAY_MS * (1 + RETRY_JITTER / 2));
  });
});

describe('a credential the service no longer takes', () => {
  it('401 on a revoked key is a non-retryable NeedsReauth without the key', async () => {
    const { id, key } = tsb.sb.identity.createKey({ userId: tsb.sb.userId });
    const revokedClient = clientWith(apiKeyAuth(key));
    await revokedClient.leads.list();
    tsb.sb.identity.revokeKey(id);
    const failure = await failureOf(() => revokedClient.leads.list());
    expect(failure).toMatchObject({ type: NEEDS_REAUTH, nonRetryable: true });
    expect(failure.message).toMatch(/^leads\.list: HTTP 401 .*needs re-authorization/);
    expect(failure.message).not.toContain(key);
  });

  it('401 after the one fresh token a bearer client asks for is NeedsReauth', async () => {
    const app = tsb.sb.admin.createApp({
      name: 'Gone App',
      redirectUris: ['https://gone.example/callback'],
      permissions: ['lead_read'],
    });
    const installed = tsb.sb.admin.install({ appId: app.id });
    tsb.sb.admin.disconnect(installed.grant_id);
    let asked = 0;
    const appClient = clientWith(
      bearerAuth(() => {
        asked += 1;
        return Promise.resolve(installed.access_token);
      }),
    );
    const failure = await failureOf(() => appClient.leads.list());
    expect(failure).toMatchObject({ type: NEEDS_REAUTH, nonRetryable: true });
    expect(failure.details?.[0]).toMatchObject({ status: 401, reason: 'app_disconnected' });
    expect(failure.message).not.toContain(installed.access_token);
    expect(asked).toBe(2);
  });
});

describe('anything else', () => {
  it('passes through unchanged', async () => {
    const plain = new Error('not from the client');
    expect(toActivityFailure(plain)).toBe(plain);
    const own = ApplicationFailure.nonRetryable('already a failure', 'Mine');
    expect(toActivityFailure(own)).toBe(own);
    await expect(
      quietEnvironment().run(withServiceFailures(() => Promise.reject(plain))),
    ).rejects.toBe(plain);
  });
});
