import {
  createCipheriv,
  createDecipheriv,
  createSecretKey,
  randomBytes,
  type KeyObject,
} from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';

const { temporal } = proto;

/**
 * AES-256-GCM over every Temporal payload, so tokens and lead PII never sit in plaintext in
 * Temporal's history. Each payload names the key that sealed it; several keys can be loaded
 * so old histories stay readable after a rotation, and new payloads use the first (current) key.
 *
 * Format 2 authenticates the key id as GCM additional data, so a payload relabelled with
 * another id fails to open. Payloads sealed before (no format field) still open without it:
 * they were authenticated under their own key, which a relabelling cannot reproduce, and
 * removing the format field of a format-2 payload makes it fail, so nothing is downgraded.
 */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
const KEY_ID = 'encryption-key-id';
const FORMAT = 'encryption-format';
const FORMAT_KEY_ID_BOUND = '2';
const IV_BYTES = 12;
const TAG_BYTES = 16;

export interface EncryptionKey {
  id: string;
  key: Buffer;
}

/** A payload sealed with a key this process does not have, or tampered with. Not retryable. */
export class PayloadDecryptionError extends Error {
  override readonly name = 'PayloadDecryptionError';
  readonly retryable = false;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export interface EncryptionCodecOptions {
  /**
   * Let payloads that were never encrypted through (development: the Temporal CLI or UI may
   * start a workflow with plain JSON). Off, they are refused: in production every payload
   * comes from ebsync itself, so a plain one was put there by someone else.
   */
  acceptPlaintext?: boolean;
}

const additionalData = (keyId: string): Buffer => Buffer.from(`ebsync/${keyId}`, 'utf8');

export class EncryptionCodec implements PayloadCodec {
  // KeyObjects, made once: handed a Buffer, every cipher imports the key again, which cost
  // several times the sealing of a small payload.
  private readonly keys: ReadonlyMap<string, KeyObject>;
  private readonly current: { id: string; key: KeyObject };
  private readonly acceptPlaintext: boolean;

  constructor(keys: readonly EncryptionKey[], options: EncryptionCodecOptions = {}) {
    const first = keys[0];
    if (!first) throw new Error('EncryptionCodec needs at least one key');
    const ids = new Set<string>();
    for (const k of keys) {
      if (k.key.length !== 32)
        throw new Error(`encryption key '${k.id}' must be 32 bytes, got ${k.key.length}`);
      // Which of two keys of the same id opens a payload would be a guess.
      if (ids.has(k.id)) throw new Error(`encryption key id '${k.id}' is used twice`);
      ids.add(k.id);
    }
    this.current = { id: first.id, key: createSecretKey(first.key) };
    this.keys = new Map(keys.map((k) => [k.id, createSecretKey(k.key)]));
    this.acceptPlaintext = options.acceptPlaintext ?? false;
  }

  // async so that a bad payload rejects the promise rather than throwing at the call site
  // eslint-disable-next-line @typescript-eslint/require-await
  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const plain = temporal.api.common.v1.Payload.encode(payload).finish();
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', this.current.key, iv);
      cipher.setAAD(additionalData(this.current.id));
      const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
      return {
        metadata: {
          encoding: encoder.encode(ENCRYPTED_ENCODING),
          [KEY_ID]: encoder.encode(this.current.id),
          [FORMAT]: encoder.encode(FORMAT_KEY_ID_BOUND),
        },
        data: sealed,
      };
    });
  }

  // eslint-disable-next-line @typescript-eslint/require-await
  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const encoding = payload.metadata?.encoding;
      if (!encoding || decoder.decode(encoding) !== ENCRYPTED_ENCODING) {
        if (this.acceptPlaintext) return payload;
        throw new PayloadDecryptionError(
          'refused a payload that is not encrypted: in production every payload must be sealed with a key of EBSYNC_ENCRYPTION_KEYS',
        );
      }
      const idBytes = payload.metadata?.[KEY_ID];
      const id = idBytes ? decoder.decode(idBytes) : '(none)';
      const key = this.keys.get(id);
      if (!key) {
        throw new PayloadDecryptionError(
          `payload was encrypted with key '${id}', which this process does not have; add it to EBSYNC_ENCRYPTION_KEYS`,
        );
      }
      const data = Buffer.from(payload.data ?? new Uint8Array());
      if (data.length < IV_BYTES + TAG_BYTES)
        throw new PayloadDecryptionError('encrypted payload is truncated');
      const iv = data.subarray(0, IV_BYTES);
      const tag = data.subarray(data.length - TAG_BYTES);
      const decipher = createDecipheriv('aes-256-gcm', key, iv);
      decipher.setAuthTag(tag);
      const format = payload.metadata?.[FORMAT];
      if (format) {
        if (decoder.decode(format) !== FORMAT_KEY_ID_BOUND)
          throw new PayloadDecryptionError('encrypted payload has an unknown format');
        decipher.setAAD(additionalData(id));
      }
      let plain: Buffer;
      try {
        plain = Buffer.concat([
          decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)),
          decipher.final(),
        ]);
      } catch {
        throw new PayloadDecryptionError(
          `encrypted payload failed authentication with key '${id}'`,
        );
      }
      return temporal.api.common.v1.Payload.decode(plain);
    });
  }
}
