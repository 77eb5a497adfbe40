/**
 * Every failure of a call to the service is one of these classes. `retryable` says whether
 * the same request may succeed later unchanged (Temporal retries those); the others need a
 * change: a field, a permission, a reconnect.
 */
export interface ErrorDetails {
  status?: number;
  reason?: string;
  /** Route id of the operation, e.g. `leads.get`. */
  operation?: string;
  cause?: unknown;
}

export abstract class EbsError extends Error {
  abstract readonly retryable: boolean;
  readonly status: number | undefined;
  readonly reason: string | undefined;
  readonly operation: string | undefined;

  constructor(message: string, details: ErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.status = details.status;
    this.reason = details.reason;
    this.operation = details.operation;
  }
}

/** 401: the key or token no longer works (expired, revoked, app disconnected). */
export class AuthenticationError extends EbsError {
  override readonly name = 'AuthenticationError';
  readonly retryable = false;
}

/** 403: outside the key's or token's permissions. */
export class PermissionError extends EbsError {
  override readonly name = 'PermissionError';
  readonly retryable = false;
}

/** 429, or 403 with a rate-limit message. retryAfterMs comes from Retry-After when sent. */
export class RateLimitedError extends EbsError {
  override readonly name = 'RateLimitedError';
  readonly retryable = true;
  constructor(
    message: string,
    readonly retryAfterMs: number | undefined,
    details: ErrorDetails = {},
  ) {
    super(message, details);
  }
}

/** A request refused field by field: `fieldErrors` maps each field to its messages. */
abstract class FieldErrors extends EbsError {
  readonly retryable = false;
  constructor(
    message: string,
    readonly fieldErrors: Readonly<Record<string, readonly string[]>>,
    details: ErrorDetails = {},
  ) {
    super(message, details);
  }
}

/** 422 from the service: per-field messages, as the spec's validation shape carries them. */
export class ValidationError extends FieldErrors {
  override readonly name = 'ValidationError';
}

/** A request body or query that fails our own schema: caught before anything is sent. */
export class RequestValidationError extends FieldErrors {
  override readonly name = 'RequestValidationError';
}

/** 404: the id does not exist for this business. */
export class NotFoundError extends EbsError {
  override readonly name = 'NotFoundError';
  readonly retryable = false;
}

/** Other 4xx: a malformed request the service refused. */
export class BadRequestError extends EbsError {
  override readonly name = 'BadRequestError';
  readonly retryable = false;
}

/** 5xx: the service failed; the same request may work later. */
export class ServerError extends EbsError {
  override readonly name = 'ServerError';
  readonly retryable = true;
}

/** No answer: connection refused or reset, DNS, TLS handshake, timeout. */
export class NetworkError extends EbsError {
  override readonly name = 'NetworkError';
  readonly retryable = true;
}

/**
 * The service's TLS certificate is not one this process trusts (self-signed, an unknown CA,
 * expired, another host's name): asking again changes nothing until the trust does, so it is
 * not retried. The message says what to set.
 */
export class TlsTrustError extends EbsError {
  override readonly name = 'TlsTrustError';
  readonly retryable = false;
}

/** Node's codes of a certificate that failed verification (as opposed to a handshake cut short). */
const UNTRUSTED_CERTIFICATE = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'INVALID_CA',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

export const isUntrustedCertificate = (code: unknown): boolean =>
  typeof code === 'string' && UNTRUSTED_CERTIFICATE.has(code);

/** What to say of an untrusted certificate, whoever met it (the API client, the OAuth client). */
export function untrustedCertificateMessage(code: string, what: string): string {
  return (
    `${what}: the service's certificate is not trusted by this process (${code}): set ` +
    `EBS_CA_FILE to the PEM of the authority that signed it (the sandbox prints its own) where ` +
    `this runs (for syncs and webhooks, the worker), or fix the address if the certificate is another host's`
  );
}

/** The answer does not have the shape the spec promises (not JSON, no envelope). */
export class ResponseShapeError extends EbsError {
  override readonly name = 'ResponseShapeError';
  readonly retryable = false;
}

/**
 * Retry-After as seconds or an HTTP date → milliseconds from now (never negative);
 * undefined when absent or unreadable.
 */
export function parseRetryAfter(
  value: string | undefined,
  now: number = Date.now(),
): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  // An HTTP date names a weekday or month; a bare '-5' is not one (Date.parse would read a year).
  if (!/[A-Za-z]/.test(text)) return undefined;
  const date = Date.parse(text);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

const RATE_LIMIT_TEXT = /rate[\s_-]?limit|too many requests|throttl/i;

interface ErrorBody {
  status?: unknown;
  reason?: unknown;
  message?: unknown;
  errors?: unknown;
}

function asErrorBody(body: unknown): ErrorBody {
  return typeof body === 'object' && body !== null ? body : {};
}

function fieldErrorsOf(errors: unknown): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  if (typeof errors !== 'object' || errors === null) return out;
  for (const [field, messages] of Object.entries(errors)) {
    if (Array.isArray(messages)) out[field] = messages.map(String);
    else if (typeof messages === 'string') out[field] = [messages];
  }
  return out;
}

/** Maps a non-2xx answer to its class; the message names the operation and the service's words. */
export function errorFromResponse(
  status: number,
  body: unknown,
  headers: Readonly<Record<string, string | string[] | undefined>>,
  operation: string,
): EbsError {
  const b = asErrorBody(body);
  const reason = typeof b.reason === 'string' ? b.reason : undefined;
  const said = typeof b.message === 'string' ? b.message : undefined;
  const details: ErrorDetails = { status, operation, ...(reason ? { reason } : {}) };
  const prefix = `${operation}: HTTP ${status}`;
  const text = [said, reason].filter(Boolean).join(' ');
  const retryAfterHeader = headers['retry-after'];
  const retryAfter = parseRetryAfter(
    Array.isArray(retryAfterHeader) ? retryAfterHeader[0] : retryAfterHeader,
  );

  if (status === 429 || (status === 403 && RATE_LIMIT_TEXT.test(text))) {
    return new RateLimitedError(
      `${prefix} rate limited${said ? `: ${said}` : ''}`,
      retryAfter,
      details,
    );
  }
  if (status === 401)
    return new AuthenticationError(`${prefix} ${said ?? 'unauthorized'}`, details);
  if (status === 403) return new PermissionError(`${prefix} ${said ?? 'forbidden'}`, details);
  if (status === 404) return new NotFoundError(`${prefix} ${said ?? 'not found'}`, details);
  if (status === 422) {
    const fields = fieldErrorsOf(b.errors);
    const summary = Object.values(fields).flat().join('; ');
    return new ValidationError(
      `${prefix} ${summary || said || 'validation failed'}`,
      fields,
      details,
    );
  }
  if (status >= 500) return new ServerError(`${prefix} ${said ?? 'server error'}`, details);
  return new BadRequestError(`${prefix} ${said ?? 'request refused'}`, details);
}
