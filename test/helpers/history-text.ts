import { defaultPayloadConverter, type PayloadCodec } from '@temporalio/common';
import type { History } from '@temporalio/common/lib/proto-utils.js';
import type { temporal } from '@temporalio/proto';

type Payload = temporal.api.common.v1.IPayload;

const isPayload = (node: Record<string, unknown>): boolean =>
  node.data instanceof Uint8Array && typeof node.metadata === 'object' && node.metadata !== null;

/** Parts of an event whose payloads Temporal and the SDK write as they are, never encoded. */
const PLAIN_PARTS = new Set([
  'markerRecordedEventAttributes',
  'upsertWorkflowSearchAttributesEventAttributes',
  'searchAttributes',
]);

/**
 * Everything a workflow history says, as text: every payload opened with `codec` (none: the
 * payloads are plain) and
 * converted back to its value, and every other string of every event (failure messages,
 * names, ids). A test searches it for what must never be there. The SDK's markers and search
 * attributes (`patched()` records its change id in both) never pass through the codec:
 * Temporal indexes search attributes as they are. Their payloads are read as they are, and
 * searched all the same.
 */
export async function historyText(
  history: History,
  codec: PayloadCodec = { encode: (p) => Promise.resolve(p), decode: (p) => Promise.resolve(p) },
): Promise<string> {
  const payloads: Payload[] = [];
  const plain: Payload[] = [];
  const strings: string[] = [];
  const walk = (node: unknown, into: Payload[]): void => {
    if (typeof node === 'string') strings.push(node);
    if (typeof node !== 'object' || node === null || node instanceof Uint8Array) return;
    const record = node as Record<string, unknown>;
    if (isPayload(record)) {
      into.push(record);
      return;
    }
    for (const [key, value] of Object.entries(record)) {
      walk(value, PLAIN_PARTS.has(key) ? plain : into);
    }
  };
  walk(history.events ?? [], payloads);
  const opened = [...(await codec.decode(payloads)), ...plain];
  const values = opened.map((payload) => {
    try {
      return JSON.stringify(defaultPayloadConverter.fromPayload(payload));
    } catch {
      return Buffer.from(payload.data ?? new Uint8Array()).toString('utf8');
    }
  });
  return [...values, ...strings].join('\n');
}
