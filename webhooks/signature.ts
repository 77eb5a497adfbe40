import { createHmac, timingSafeEqual } from 'node:crypto';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import type { HmacScheme } from '../config/schema.js';

/** Seconds a delivery's timestamp may be away from this machine's clock, either way. */
export const TIMESTAMP_TOLERANCE_SECONDS = 5 * 60;

export type SignatureScheme = 'standard' | HmacScheme;

/** A delivery whose signature did not verify: never retryable with the same bytes. */
export class SignatureError extends Error {
  override readonly name = 'SignatureError';
  readonly retryable = false;
}

export type Headers = Readonly<Record<string, string | string[] | undefined>>;

const header = (headers: Headers, name: string): string | undefined => {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
};

/** Headers a scheme signs with: their absence means the delivery is unsigned. */
export function signatureHeaderOf(scheme: SignatureScheme): string {
  return scheme === 'standard' ? 'webhook-signature' : scheme.header;
}

/** The HMAC key of a secret: `whsec_<base64>` is the key's base64, anything else its bytes. */
function keyOf(secret: string): Buffer {
  return secret.startsWith('whsec_')
    ? Buffer.from(secret.slice('whsec_'.length), 'base64')
    : Buffer.from(secret, 'utf8');
}

function checkTimestamp(text: string | undefined, nowMs: number): void {
  if (text === undefined) return;
  const seconds = Number(text);
  if (!/^\d{1,12}$/.test(text.trim()) || !Number.isSafeInteger(seconds)) {
    throw new SignatureError('the timestamp header is not whole seconds since 1970');
  }
  if (Math.abs(nowMs / 1000 - seconds) > TIMESTAMP_TOLERANCE_SECONDS) {
    throw new SignatureError(
      `the delivery's timestamp is more than ${TIMESTAMP_TOLERANCE_SECONDS / 60} minutes from this machine's clock`,
    );
  }
}

function verifyHmac(
  scheme: HmacScheme,
  secret: string,
  headers: Headers,
  body: Buffer,
  nowMs: number,
): string | undefined {
  const given = header(headers, scheme.header);
  if (given === undefined) throw new SignatureError(`the ${scheme.header} header is missing`);
  const timestamp = scheme.timestampHeader ? header(headers, scheme.timestampHeader) : undefined;
  if (scheme.timestampHeader && timestamp === undefined) {
    throw new SignatureError(`the ${scheme.timestampHeader} header is missing`);
  }
  checkTimestamp(timestamp, nowMs);
  const mac = createHmac(scheme.algorithm, keyOf(secret));
  // A signed timestamp is what makes the tolerance mean anything: it cannot be swapped.
  if (timestamp !== undefined) mac.update(`${timestamp}.`);
  const expected = Buffer.from(`${scheme.prefix}${mac.update(body).digest(scheme.encoding)}`);
  const candidates = given.split(/[\s,]+/).filter(Boolean);
  const match = candidates.some((candidate) => {
    const bytes = Buffer.from(candidate);
    return bytes.length === expected.length && timingSafeEqual(bytes, expected);
  });
  if (!match) throw new SignatureError('the signature does not match the body');
  return scheme.idHeader ? header(headers, scheme.idHeader) : undefined;
}

/**
 * Verifies a delivery's signature over its raw bytes, before anything parses them. Returns the
 * delivery id the headers carry (Standard Webhooks' webhook-id, or the scheme's idHeader).
 */
export function verifySignature(
  scheme: SignatureScheme,
  secret: string,
  headers: Headers,
  body: Buffer,
  nowMs = Date.now(),
): string | undefined {
  if (scheme !== 'standard') return verifyHmac(scheme, secret, headers, body, nowMs);
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signature = header(headers, 'webhook-signature');
  if (id === undefined || timestamp === undefined || signature === undefined) {
    throw new SignatureError(
      'Standard Webhooks needs the webhook-id, webhook-timestamp and webhook-signature headers',
    );
  }
  // Checked here as well as in the library, so the answer names the cause.
  checkTimestamp(timestamp, nowMs);
  try {
    new Webhook(secret).verify(
      body,
      { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signature },
      { jsonParse: false },
    );
  } catch (error) {
    if (error instanceof WebhookVerificationError) {
      throw new SignatureError('the signature does not match the body');
    }
    throw error;
  }
  return id;
}
