import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import {
  AuthenticationError,
  EbsError,
  RateLimitedError,
  RequestValidationError,
  ValidationError,
} from '../api/errors.js';

/**
 * How the client's typed errors become Temporal failures (DESIGN decisions 7 and 10), in one
 * place so every activity that calls the service fails the same way: a refusal fails fast
 * with the service's reason, an outage retries on the retry policy, a rate limit retries
 * when Retry-After says, and a credential the service no longer takes stops for re-auth.
 */

/**
 * Failure type of a call refused with 401 after the client already asked once for a fresh
 * token: the grant or key is gone, only the customer can fix it. Connection code matches on it.
 */
export const NEEDS_REAUTH = 'NeedsReauth';

/** Wait before retrying a rate-limited call that came without Retry-After. */
export const DEFAULT_RATE_LIMIT_DELAY_MS = 5_000;

/**
 * Retries after a rate limit wait up to this fraction longer than Retry-After, so the calls
 * turned away in the same second do not all come back in the same instant.
 */
export const RETRY_JITTER = 0.2;

/** Retry-After plus jitter in [0, RETRY_JITTER × Retry-After]; at least 1 ms. */
export function rateLimitDelay(
  retryAfterMs: number | undefined,
  random: () => number = Math.random,
): number {
  const base = retryAfterMs ?? DEFAULT_RATE_LIMIT_DELAY_MS;
  return Math.max(1, Math.ceil(base + random() * base * RETRY_JITTER));
}

function retryAfterOf(error: EbsError): number | undefined {
  const value = (error as { retryAfterMs?: unknown }).retryAfterMs;
  return typeof value === 'number' ? value : undefined;
}

/** A 429 or the 403 rate-limit variant; or any retryable error whose server said when (OAuth 503). */
function isRateLimit(error: EbsError): boolean {
  return (
    error instanceof RateLimitedError || (error.retryable && retryAfterOf(error) !== undefined)
  );
}

/**
 * Details a workflow may act on; payloads go through the codec, so they are sealed in
 * history. The message stays the client's: operation, status and the service's words,
 * which never carry a credential.
 */
function detailsOf(error: EbsError): Record<string, unknown> {
  return {
    operation: error.operation ?? null,
    status: error.status ?? null,
    reason: error.reason ?? null,
    ...(error instanceof ValidationError || error instanceof RequestValidationError
      ? { fieldErrors: error.fieldErrors }
      : {}),
    ...(isRateLimit(error) ? { retryAfterMs: retryAfterOf(error) ?? null } : {}),
  };
}

/**
 * The Temporal failure for an error thrown by the service client; anything else is
 * returned unchanged (the SDK's own handling applies).
 */
export function toActivityFailure(error: unknown, random: () => number = Math.random): unknown {
  if (!(error instanceof EbsError)) return ownFailure(error, random);
  const details = [detailsOf(error)];
  if (error instanceof AuthenticationError) {
    return ApplicationFailure.create({
      type: NEEDS_REAUTH,
      message: `${error.message}; the connection needs re-authorization`,
      nonRetryable: true,
      details,
    });
  }
  if (isRateLimit(error)) {
    return ApplicationFailure.create({
      type: error.name,
      message: error.message,
      nonRetryable: false,
      details,
      nextRetryDelay: rateLimitDelay(retryAfterOf(error), random),
      // Expected under load: the worker logs it at debug, not as an error.
      category: ApplicationFailureCategory.BENIGN,
    });
  }
  return ApplicationFailure.create({
    type: error.name,
    message: error.message,
    nonRetryable: !error.retryable,
    details,
  });
}

/**
 * ebsync's own typed errors (store, destinations, the mirror's planner) say whether a retry
 * can help: one that cannot fails the activity at once, under its class name.
 */
function ownFailure(error: unknown, random: () => number): unknown {
  if (!(error instanceof Error) || error instanceof ApplicationFailure) return error;
  const { retryable, retryAfterMs, resumeAt } = error as {
    retryable?: unknown;
    retryAfterMs?: unknown;
    resumeAt?: unknown;
  };
  // A CRM's short rate window: retry when it frees up, like a 429 from the service.
  if (retryable === true && typeof retryAfterMs === 'number') {
    return ApplicationFailure.create({
      type: error.name,
      message: error.message,
      nonRetryable: false,
      details: [{ retryAfterMs }],
      nextRetryDelay: rateLimitDelay(retryAfterMs, random),
      category: ApplicationFailureCategory.BENIGN,
    });
  }
  if (retryable !== false) return error;
  return ApplicationFailure.create({
    type: error.name,
    message: error.message,
    nonRetryable: true,
    // A destination paused until a reset (a CRM's daily quota): the workflow stops cleanly.
    ...(typeof resumeAt === 'string' ? { details: [{ resumeAt }] } : {}),
  });
}

/** An activity whose service errors leave it as the Temporal failures above. */
export function withServiceFailures<Args extends unknown[], Result>(
  activity: (...args: Args) => Promise<Result>,
): (...args: Args) => Promise<Result> {
  return async (...args) => {
    try {
      return await activity(...args);
    } catch (error) {
      throw toActivityFailure(error);
    }
  };
}
