import {
  createCipheriv,
  createDecipheriv,
  createSecretKey,
  randomBytes,
  type KeyObject,
} from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';
import { SEALED_ROW } from '../store/sealed-values.js';

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
 *
 * Format 3 is a value sealed for a row of a local store (store/sealed-values.ts): the payload
 * handed to encode names its row (table and key) in the `ebsync-sealed-row` metadata, and the
 * row goes into the additional data beside the key id, not into the sealed bytes. Opening
 * needs the row named again, by the store that reads it, so a sealed value copied into
 * another row (another connection's registration, another endpoint) fails to open. A format-3
 * payload never opens without its row, and a row's value never opens from an older format.
 */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
const KEY_ID = 'encryption-key-id';
const FORMAT = 'encryption-format';
const FORMAT_KEY_ID_BOUND = '2';
const FORMAT_ROW_BOUND = '3';
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
  /**
   * Where this process's keys came from, said when a payload does not open with them: a
   * command run with another data dir than the worker's sees which file it read.
   */
  keysFrom?: string;
  /**
   * Who holds these keys, for the advice when a payload does not open: a command is most often
   * run with other keys than the worker's; a worker was handed a workflow that an ebsync with
   * other keys started (its data directory made again, or another deployment's queue).
   */
  holder?: 'command' | 'worker';
}

const additionalData = (keyId: string, row?: string): Buffer =>
  Buffer.from(row === undefined ? `ebsync/${keyId}` : `ebsync/${keyId}\nrow ${row}`, 'utf8');

/** The row a payload is sealed for, taken off its metadata (it is not sealed inside). */
function rowOf(payload: Payload): { row: string | undefined; rest: Payload } {
  const named = payload.metadata?.[SEALED_ROW];
  if (!named) return { row: undefined, rest: payload };
  const metadata = { ...payload.metadata };
  delete metadata[SEALED_ROW];
  return { row: decoder.decode(named), rest: { ...payload, metadata } };
}

export class EncryptionCodec implements PayloadCodec {
  // KeyObjects, made once: handed a Buffer, every cipher imports the key again, which cost
  // several times the sealing of a small payload.
  private readonly keys: ReadonlyMap<string, KeyObject>;
  private readonly current: { id: string; key: KeyObject };
  private readonly acceptPlaintext: boolean;
  private readonly keysFrom: string;
  private readonly advice: string;

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
    this.keysFrom = options.keysFrom ? `; this one's keys are ${options.keysFrom}` : '';
    this.advice =
      options.holder === 'worker'
        ? 'it was started by an ebsync with other keys (another EBSYNC_ENCRYPTION_KEYS or ' +
          'EBSYNC_DATA_DIR, or a data directory made again): give this worker those keys too, ' +
          'or end the workflows whose keys are gone'
        : "give this command the worker's keys (EBSYNC_ENCRYPTION_KEYS, or the " +
          "encryption-keys file in the worker's EBSYNC_DATA_DIR)";
  }

  // async so that a bad payload rejects the promise rather than throwing at the call site
  // eslint-disable-next-line @typescript-eslint/require-await
  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((named) => {
      const { row, rest: payload } = rowOf(named);
      const plain = temporal.api.common.v1.Payload.encode(payload).finish();
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', this.current.key, iv);
      cipher.setAAD(additionalData(this.current.id, row));
      const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
      return {
        metadata: {
          encoding: encoder.encode(ENCRYPTED_ENCODING),
          [KEY_ID]: encoder.encode(this.current.id),
          [FORMAT]: encoder.encode(row === undefined ? FORMAT_KEY_ID_BOUND : FORMAT_ROW_BOUND),
        },
        data: sealed,
      };
    });
  }

  // eslint-disable-next-line @typescript-eslint/require-await
  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((named) => {
      const { row, rest: payload } = rowOf(named);
      const encoding = payload.metadata?.encoding;
      if (!encoding || decoder.decode(encoding) !== ENCRYPTED_ENCODING) {
        // A store's row is always sealed, in development too.
        if (this.acceptPlaintext && row === undefined) return payload;
        throw new PayloadDecryptionError(
          'refused a payload that is not encrypted: in production every payload must be sealed with a key of EBSYNC_ENCRYPTION_KEYS',
        );
      }
      const idBytes = payload.metadata?.[KEY_ID];
      const id = idBytes ? decoder.decode(idBytes) : '(none)';
      const key = this.keys.get(id);
      if (!key) {
        throw new PayloadDecryptionError(
          `payload was encrypted with key '${id}', which this process does not have; add it to EBSYNC_ENCRYPTION_KEYS${this.keysFrom}`,
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
      const version = format ? decoder.decode(format) : undefined;
      if (version !== undefined && version !== FORMAT_KEY_ID_BOUND && version !== FORMAT_ROW_BOUND)
        throw new PayloadDecryptionError('encrypted payload has an unknown format');
      if ((version === FORMAT_ROW_BOUND) !== (row !== undefined)) {
        throw new PayloadDecryptionError(
          row === undefined
            ? 'encrypted payload is sealed for a row of a local store and opens only there'
            : 'the stored value is not sealed for its row',
        );
      }
      if (version !== undefined) decipher.setAAD(additionalData(id, row));
      let plain: Buffer;
      try {
        plain = Buffer.concat([
          decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)),
          decipher.final(),
        ]);
      } catch {
        throw new PayloadDecryptionError(
          // Most often a command run with other keys than the worker's (another data dir).
          `encrypted payload failed authentication with key '${id}': it was sealed with another ` +
            `key of that id, or changed since; ${this.advice}${this.keysFrom}`,
        );
      }
      return temporal.api.common.v1.Payload.decode(plain);
    });
  }
}
