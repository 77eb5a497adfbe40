import { describe, expect, it } from 'vitest';
import {
  AuthenticationError,
  BadRequestError,
  errorFromResponse,
  NotFoundError,
  parseRetryAfter,
  PermissionError,
  RateLimitedError,
  ServerError,
  ValidationError,
} from '../../api/errors.js';

const general = (status: string, reason: string, message: string) => ({
  meta: { status: 'error' },
  status,
  reason,
  message,
});

describe('errorFromResponse', () => {
  it('maps each status to its class, retryable only where the same request may work later', () => {
    const cases: [number, unknown, new (...args: never[]) => Error, boolean][] = [
      [401, general('unauthorized', 'api_key_missing', 'Send a key'), AuthenticationError, false],
      [403, general('forbidden', 'permission_denied', 'Needs lead_read'), PermissionError, false],
      [404, general('not_found', 'record_not_found', 'Lead 9 not found'), NotFoundError, false],
      [
        400,
        general('bad_request', 'invalid_parameter', 'page must be a positive integer'),
        BadRequestError,
        false,
      ],
      [409, undefined, BadRequestError, false],
      [500, general('error', 'internal_error', 'boom'), ServerError, true],
      [503, undefined, ServerError, true],
      [
        429,
        general('too_many_requests', 'rate_limit_exceeded', 'slow down'),
        RateLimitedError,
        true,
      ],
    ];
    for (const [status, body, kind, retryable] of cases) {
      const error = errorFromResponse(status, body, {}, 'leads.get');
      expect(error, String(status)).toBeInstanceOf(kind);
      expect(error.retryable, String(status)).toBe(retryable);
      expect(error.status).toBe(status);
      expect(error.operation).toBe('leads.get');
      expect(error.message).toContain('leads.get');
    }
  });

  it('keeps the reason and the service message', () => {
    const error = errorFromResponse(
      401,
      general('unauthorized', 'api_key_revoked', 'The API key was revoked'),
      {},
      'leads.list',
    );
    expect(error.reason).toBe('api_key_revoked');
    expect(error.message).toContain('The API key was revoked');
  });

  it('reads 422 field errors per field', () => {
    const error = errorFromResponse(
      422,
      {
        meta: { status: 'error' },
        errors: { template_name: ["Template name can't be blank"], email: 'Email is invalid' },
      },
      {},
      'templateSelections.create',
    );
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).fieldErrors).toEqual({
      template_name: ["Template name can't be blank"],
      email: ['Email is invalid'],
    });
    expect(error.message).toContain("Template name can't be blank");
  });

  it('treats 403 with a rate-limit message as RateLimitedError, and plain 403 as PermissionError', () => {
    const limited = errorFromResponse(
      403,
      general('forbidden', 'rate_limit_exceeded', 'Rate limit exceeded; slow down'),
      { 'retry-after': '2' },
      'leads.list',
    );
    expect(limited).toBeInstanceOf(RateLimitedError);
    expect((limited as RateLimitedError).retryAfterMs).toBe(2000);
    expect(limited.status).toBe(403);
    const throttled = errorFromResponse(403, { message: 'Too many requests' }, {}, 'leads.list');
    expect(throttled).toBeInstanceOf(RateLimitedError);
    expect((throttled as RateLimitedError).retryAfterMs).toBeUndefined();
    expect(
      errorFromResponse(403, general('forbidden', 'permission_denied', 'no'), {}, 'x'),
    ).toBeInstanceOf(PermissionError);
  });

  it('reads Retry-After on 429 in seconds and as an HTTP date', () => {
    const seconds = errorFromResponse(
      429,
      undefined,
      { 'retry-after': '7' },
      'leads.list',
    ) as RateLimitedError;
    expect(seconds.retryAfterMs).toBe(7000);
    const inFuture = new Date(Date.now() + 30_000).toUTCString();
    const dated = errorFromResponse(
      429,
      undefined,
      { 'retry-after': inFuture },
      'leads.list',
    ) as RateLimitedError;
    expect(dated.retryAfterMs).toBeGreaterThan(25_000);
    expect(dated.retryAfterMs).toBeLessThanOrEqual(30_000);
    const repeated = errorFromResponse(
      429,
      undefined,
      { 'retry-after': ['3', '9'] },
      'x',
    ) as RateLimitedError;
    expect(repeated.retryAfterMs).toBe(3000);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2031-01-01T00:00:00Z');
  it('reads delay-seconds, fractional seconds and HTTP dates', () => {
    expect(parseRetryAfter('0', now)).toBe(0);
    expect(parseRetryAfter(' 120 ', now)).toBe(120_000);
    expect(parseRetryAfter('1.5', now)).toBe(1500);
    expect(parseRetryAfter('Wed, 01 Jan 2031 00:00:10 GMT', now)).toBe(10_000);
  });
  it('never goes negative and ignores what it cannot read', () => {
    expect(parseRetryAfter('Tue, 31 Dec 2030 23:59:00 GMT', now)).toBe(0);
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    // Neither seconds nor an HTTP date (V8's Date.parse alone would read '-5' as a year).
    expect(parseRetryAfter('-5', now)).toBeUndefined();
  });
});
