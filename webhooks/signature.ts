import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import type { HmacScheme } from '../config/schema.js';
import { checkDeliveryId } from './delivery.js';

/** Seconds a delivery's timestamp may be away from this machine's clock, either way. */
export const TIMESTAMP_TOLERANCE_SECONDS = 5 * 60;

export type SignatureScheme = 'standard' | HmacScheme;

/** Why a signature that is there did not verify (the receiver adds what else it may mean). */
export const SIGNATURE_MISMATCH = 'the signature does not match the body';

/** A delivery whose signature did not verify: never retryable with the same bytes. */
export class SignatureError extends Error {
  override readonly name = 'SignatureError';
  readonly retryable = false;
  /**
   * `mismatch`: well-formed, but not made with the secret (or no secret is registered, which
   * the receiver answers alike); `missing`: a header it needs is not there; `malformed`: stale
   * or unreadable headers.
   */
  constructor(
    message: string,
    readonly kind: 'mismatch' | 'missing' | 'malformed' = 'malformed',
  ) {
    super(message);
  }
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

/** The header that carries a delivery's id under a scheme, when it has one. */
export function idHeaderOf(scheme: SignatureScheme): string | undefined {
  return scheme === 'standard' ? 'webhook-id' : scheme.idHeader;
}

/** Key bytes a signing secret must carry at the least: 128 bits. */
export const MIN_KEY_BYTES = 16;
/** `whsec_` and the key's standard base64, padded as base64 is. */
const WHSEC = /^whsec_((?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?)$/;
const WHSEC_RULE = `expected whsec_ followed by the base64 of at least ${MIN_KEY_BYTES} bytes`;

/**
 * The HMAC key of a secret: `whsec_<base64>` is the key's base64, anything else its bytes;
 * undefined when the secret cannot be a key (Node's base64 decoder skips what is not base64,
 * so `whsec_` with anything else after it would decode to a short or empty key).
 */
function keyOf(secret: string): Buffer | undefined {
  if (secret.startsWith('whsec_')) {
    const base64 = WHSEC.exec(secret)?.[1];
    const key = base64 === undefined ? undefined : Buffer.from(base64, 'base64');
    return key && key.length >= MIN_KEY_BYTES ? key : undefined;
  }
  return /^\S{16,}$/.test(secret) ? Buffer.from(secret, 'utf8') : undefined;
}

/** Secrets' HMAC keys as key objects, kept: one receiver verifies a few secrets many times. */
const keyObjects = new Map<string, KeyObject | null>();
const MAX_KEPT_KEYS = 1_000;

/**
 * keyOf as a KeyObject, made once per secret: a raw key given to createHmac is imported into
 * a new key object on every call, which at 50 deliveries a second was about a tenth of a
 * millisecond of the receiver's CPU per delivery (a CPU profile of `webhooks serve`).
 */
function hmacKeyOf(secret: string): KeyObject | undefined {
  let key = keyObjects.get(secret);
  if (key === undefined) {
    const bytes = keyOf(secret);
    key = bytes ? createSecretKey(bytes) : null;
    if (keyObjects.size >= MAX_KEPT_KEYS) keyObjects.clear();
    keyObjects.set(secret, key);
  }
  return key ?? undefined;
}

/**
 * Why `secret` cannot sign deliveries under `scheme`, or undefined when it can: checked where
 * a secret is given (registration) and where the receiver starts, so a bad one is one line
 * there instead of a 503 to every delivery, which the sender would retry forever.
 */
export function signingSecretProblem(scheme: SignatureScheme, secret: string): string | undefined {
  const rule = scheme === 'standard' ? `${WHSEC_RULE} (Standard Webhooks)` : WHSEC_RULE;
  if (secret.startsWith('whsec_')) return keyOf(secret) ? undefined : rule;
  if (scheme === 'standard') return rule;
  return keyOf(secret) ? undefined : 'expected at least 16 characters, no spaces';
}

function checkTimestamp(text: string, nowMs: number): void {
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

function required(headers: Headers, name: string): string {
  const value = header(headers, name);
  if (value === undefined) throw new SignatureError(`the ${name} header is missing`, 'missing');
  return value;
}

/**
 * The configured HMAC header scheme. The MAC covers `<id>.<timestamp>.<body>` when the id
 * comes from a header, else `<timestamp>.<body>` (the id is then the body's own, signed with
 * it): an unsigned id would let a captured delivery pass the dedupe under new ids, and an
 * unsigned or absent timestamp would let it be replayed forever.
 */
function verifyHmac(
  scheme: HmacScheme,
  secret: string,
  headers: Headers,
  body: Buffer,
  nowMs: number,
): string | undefined {
  const key = hmacKeyOf(secret);
  // Registration and the receiver's start refuse such secrets; one stored before is a fault
  // of this side, not of the delivery (an Error, so the sender is asked to retry).
  if (!key) throw new Error("the connection's signing secret cannot be an HMAC key");
  const given = required(headers, scheme.header);
  const timestamp = required(headers, scheme.timestampHeader);
  const id = scheme.idHeader === undefined ? undefined : required(headers, scheme.idHeader);
  if (id !== undefined) checkDeliveryId(id, 'its header');
  checkTimestamp(timestamp, nowMs);
  const mac = createHmac(scheme.algorithm, key);
  mac.update(id === undefined ? `${timestamp}.` : `${id}.${timestamp}.`);
  const expected = Buffer.from(`${scheme.prefix}${mac.update(body).digest(scheme.encoding)}`);
  const candidates = given.split(/[\s,]+/).filter(Boolean);
  const match = candidates.some((candidate) => {
    const bytes = Buffer.from(candidate);
    return bytes.length === expected.length && timingSafeEqual(bytes, expected);
  });
  if (!match) throw new SignatureError(SIGNATURE_MISMATCH, 'mismatch');
  return id;
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
    const missing = (
      [
        ['webhook-id', id],
        ['webhook-timestamp', timestamp],
        ['webhook-signature', signature],
      ] as const
    )
      .filter(([, value]) => value === undefined)
      .map(([name]) => name);
    throw new SignatureError(
      `Standard Webhooks needs the webhook-id, webhook-timestamp and webhook-signature headers; missing: ${missing.join(', ')}`,
      'missing',
    );
  }
  checkDeliveryId(id, 'its header');
  checkTimestamp(timestamp, nowMs);
  const key = hmacKeyOf(secret);
  if (!key) throw new Error("the connection's signing secret cannot be an HMAC key");
  // The MAC of `<id>.<timestamp>.<body>` over the body's bytes as they came. The standardwebhooks
  // package verifies a string (a body that is not UTF-8 would not verify) with a SHA-256 in
  // JavaScript; it still signs what ebsync sends, which is JSON text.
  const mac = createHmac('sha256', key).update(`${id}.${Number(timestamp.trim())}.`);
  const expected = Buffer.from(mac.update(body).digest('base64'));
  const match = signature.split(' ').some((entry) => {
    const comma = entry.indexOf(',');
    if (comma < 0 || entry.slice(0, comma) !== 'v1') return false;
    const given = Buffer.from(entry.slice(comma + 1));
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  if (!match) throw new SignatureError(SIGNATURE_MISMATCH, 'mismatch');
  return id;
}
