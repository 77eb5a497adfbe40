import { defaultPayloadConverter, type PayloadCodec } from '@temporalio/common';
import type { History } from '@temporalio/common/lib/proto-utils.js';
import type { temporal } from '@temporalio/proto';

type Payload = temporal.api.common.v1.IPayload;

const isPayload = (node: Record<string, unknown>): boolean =>
  node.data instanceof Uint8Array && typeof node.metadata === 'object' && node.metadata !== null;

/**
 * Everything a workflow history says, as text: every payload opened with `codec` (none: the
 * payloads are plain) and
 * converted back to its value, and every other string of every event (failure messages,
 * names, ids). A test searches it for what must never be there.
 */
export async function historyText(
  history: History,
  codec: PayloadCodec = { encode: (p) => Promise.resolve(p), decode: (p) => Promise.resolve(p) },
): Promise<string> {
  const payloads: Payload[] = [];
  const strings: string[] = [];
  const walk = (node: unknown): void => {
    if (typeof node === 'string') strings.push(node);
    if (typeof node !== 'object' || node === null || node instanceof Uint8Array) return;
    const record = node as Record<string, unknown>;
    if (isPayload(record)) {
      payloads.push(record);
      return;
    }
    for (const value of Object.values(record)) walk(value);
  };
  walk(history.events ?? []);
  const opened = await codec.decode(payloads);
  const values = opened.map((payload) => {
    try {
      return JSON.stringify(defaultPayloadConverter.fromPayload(payload));
    } catch {
      return Buffer.from(payload.data ?? new Uint8Array()).toString('utf8');
    }
  });
  return [...values, ...strings].join('\n');
}
