import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';

const { temporal } = proto;

/**
 * AES-256-GCM over every Temporal payload, so tokens and lead PII never sit in plaintext in
 * Temporal's history. Each payload names the key that sealed it; several keys can be loaded
 * so old histories stay readable after a rotation, and new payloads use the first (current) key.
 */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
const KEY_ID = 'encryption-key-id';
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

export class EncryptionCodec implements PayloadCodec {
  private readonly keys: ReadonlyMap<string, Buffer>;
  private readonly current: EncryptionKey;

  constructor(keys: readonly EncryptionKey[]) {
    const first = keys[0];
    if (!first) throw new Error('EncryptionCodec needs at least one key');
    for (const k of keys) {
      if (k.key.length !== 32)
        throw new Error(`encryption key '${k.id}' must be 32 bytes, got ${k.key.length}`);
    }
    this.current = first;
    this.keys = new Map(keys.map((k) => [k.id, k.key]));
  }

  // async so that a bad payload rejects the promise rather than throwing at the call site
  // eslint-disable-next-line @typescript-eslint/require-await
  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const plain = temporal.api.common.v1.Payload.encode(payload).finish();
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', this.current.key, iv);
      const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
      return {
        metadata: {
          encoding: encoder.encode(ENCRYPTED_ENCODING),
          [KEY_ID]: encoder.encode(this.current.id),
        },
        data: sealed,
      };
    });
  }

  // eslint-disable-next-line @typescript-eslint/require-await
  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const encoding = payload.metadata?.encoding;
      if (!encoding || decoder.decode(encoding) !== ENCRYPTED_ENCODING) return payload;
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
