import type { Context } from '@temporalio/activity';

/** Heartbeats of one activity go to Temporal at most this often. */
export const HEARTBEAT_EVERY_MS = 1_000;

/**
 * A heartbeat to call as often as work moves (after each record read, each batch), sent at
 * most every `everyMs`. The SDK encodes each call's details through the payload codec
 * (AES-GCM and a fresh IV) before its own throttle: called per record, that was about a
 * tenth of a millisecond of the worker's CPU per webhook delivery. Every activity that calls
 * it has a heartbeat timeout of a minute or more.
 */
export function heartbeatEvery(
  context: Pick<Context, 'heartbeat'>,
  everyMs = HEARTBEAT_EVERY_MS,
  now: () => number = Date.now,
): () => void {
  let last = -Infinity;
  return () => {
    const at = now();
    if (at - last < everyMs) return;
    last = at;
    context.heartbeat();
  };
}
