import type { temporal } from '@temporalio/proto';

type Payload = temporal.api.common.v1.IPayload;

/** Every payload anywhere in a history (inputs, results, failures, memos, headers...). */
export function allPayloads(
  node: unknown,
  out: Payload[] = [],
  seen = new Set<unknown>(),
): Payload[] {
  if (typeof node !== 'object' || node === null || seen.has(node)) return out;
  seen.add(node);
  if (node instanceof Uint8Array) return out;
  const record = node as Record<string, unknown>;
  if ('data' in record && record.data instanceof Uint8Array && 'metadata' in record) {
    out.push(record);
    return out;
  }
  for (const value of Object.values(record)) allPayloads(value, out, seen);
  return out;
}

/** The raw bytes of a history's payloads, for plaintext searches. */
export function payloadBytes(history: unknown): Buffer {
  return Buffer.concat(allPayloads(history).map((p) => Buffer.from(p.data ?? new Uint8Array())));
}

export function encodingOf(payload: Payload): string {
  return new TextDecoder().decode(payload.metadata?.encoding ?? new Uint8Array());
}
