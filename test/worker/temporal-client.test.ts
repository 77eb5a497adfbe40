import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isGrpcServiceError, type Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../../config/index.js';
import { connectClient } from '../../worker/temporal-client.js';

/**
 * A caller's abort ends its call whichever attempt is running. The SDK cancels the first
 * attempt only; a retry is a new call beneath it, and one ran on to its deadline after a
 * Ctrl-C (a query refused with "consistent query buffer is full" and retried a second later),
 * which held `ebsync dev`'s exit for 10 s, and once in CI past a minute.
 */
let dir: string;
let client: Client;
let close: () => Promise<void>;
const TASK_QUEUE = 'temporal-client-no-worker';

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ebsync-temporal-client-'));
  ({ client, close } = await connectClient(
    loadConfig({
      PATH: process.env.PATH ?? '',
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_TASK_QUEUE: TASK_QUEUE,
      EBSYNC_DATA_DIR: dir,
    }),
  ));
}, 60_000);

afterAll(async () => {
  await close();
  rmSync(dir, { recursive: true, force: true });
});

/** After how many ms a call failed, and the gRPC status it failed with (none: it did not). */
async function timed(call: Promise<unknown>): Promise<{ ms: number; code: number | null }> {
  const started = Date.now();
  try {
    await call;
    return { ms: Date.now() - started, code: null };
  } catch (error) {
    const cause = error instanceof Error ? error.cause : undefined;
    return {
      ms: Date.now() - started,
      code: isGrpcServiceError(cause) ? Number(cause.code) : -1,
    };
  }
}

const GRPC_CANCELLED = 1;

describe('connectClient', () => {
  it('ends a retried call when its caller aborts, not at the call deadline', async () => {
    // No worker polls this queue: a query waits in the workflow's buffer, which holds one;
    // a second query meanwhile is refused at once (RESOURCE_EXHAUSTED) and retried.
    const handle = await client.workflow.start('neverServed', {
      taskQueue: TASK_QUEUE,
      workflowId: `temporal-client-abort-${Date.now()}`,
    });
    try {
      const deadline = Date.now() + 30_000;
      const stopping = new AbortController();
      const asked = client.withAbortSignal(stopping.signal, () =>
        client.withDeadline(deadline, () => {
          const first = timed(handle.query('anything'));
          // The first is buffered before the second arrives.
          const second = new Promise((resolve) => setTimeout(resolve, 300)).then(() =>
            timed(handle.query('anything')),
          );
          return Promise.all([first, second]);
        }),
      );
      // The second's retry starts about a second after its refusal (the SDK's backoff for
      // RESOURCE_EXHAUSTED): the abort comes while that attempt runs.
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      stopping.abort();
      const aborted = Date.now();
      const [first, second] = await asked;
      expect(first.code).toBe(GRPC_CANCELLED);
      expect(second.code).toBe(GRPC_CANCELLED);
      // Ended by the abort, not cut at the deadline (DEADLINE_EXCEEDED, which it was before):
      // the codes say so; the time is only checked to be far from the deadline, as a loaded
      // machine can take a few seconds to get there.
      expect(Date.now()).toBeLessThan(deadline - 10_000);
      expect(Date.now() - aborted).toBeLessThan(10_000);
    } finally {
      await handle.terminate('test over');
    }
  }, 60_000);
});
