import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Destination } from '../../destinations/destination.js';
import { startSandbox, type Sandbox } from '../../sandbox/server.js';
import { driveMirrorPass } from '../helpers/mirror-driver.js';
import { sandboxClient } from '../helpers/sandbox.js';

/**
 * A destination that takes two batches at once (Postgres) gets two from a pass while the
 * service's pages keep coming, and never two that hold the same record; one that takes one
 * (SQLite, the CRMs) gets one at a time, as before. Here the pass writes into SQLite made to
 * say it takes `concurrentBatches`, each batch held a moment so that batches can overlap.
 * batch-writer.test.ts shows a record in two batches written in the order it was read.
 */
let sb: Sandbox;

beforeAll(async () => {
  sb = await startSandbox({ http: true, seed: { leads: 400, events: 0, seed: 'batches' } });
}, 60_000);

afterAll(async () => {
  await sb?.close();
});

interface Call {
  keys: Set<string>;
  start: number;
  end: number;
}

async function passWith(concurrentBatches: number | undefined) {
  const calls: Call[] = [];
  let open = 0;
  let most = 0;
  const as = (real: Destination): Destination => ({
    ...real,
    capabilities: {
      ...real.capabilities,
      ...(concurrentBatches !== undefined ? { concurrentBatches } : {}),
    },
    async upsert(resource, records, at) {
      const call = {
        keys: new Set(records.map((r) => `${resource}/${r.id}`)),
        start: performance.now(),
        end: Infinity,
      };
      calls.push(call);
      most = Math.max(most, ++open);
      try {
        await new Promise((r) => setTimeout(r, 15));
        return await real.upsert(resource, records, at);
      } finally {
        open -= 1;
        call.end = performance.now();
      }
    },
  });
  const pass = await driveMirrorPass({
    client: sandboxClient(sb),
    subjects: ['leads'],
    reachLimit: 10_000,
    per: 20,
    // A batch a page, so that a slice has several.
    writeBatch: 20,
    destinationAs: as,
  });
  return { pass, calls, most };
}

describe('batches in the destination at once', () => {
  it('two where the destination takes two, none of them sharing a record', async () => {
    const { pass, calls, most } = await passWith(2);
    expect(most).toBe(2);
    for (const a of calls) {
      for (const b of calls) {
        if (a === b || a.start >= b.end || b.start >= a.end) continue;
        for (const key of a.keys) expect(b.keys.has(key)).toBe(false);
      }
    }
    expect(pass.written.get('leads')?.size).toBe(400);
    for (const hashes of pass.written.get('leads')?.values() ?? []) expect(hashes.size).toBe(1);
    expect(pass.seen.leads).toBe(400);
    expect(pass.gaps).toEqual([]);
  }, 60_000);

  it('one at a time where the destination does not say', async () => {
    const { pass, most } = await passWith(undefined);
    expect(most).toBe(1);
    expect(pass.written.get('leads')?.size).toBe(400);
    expect(pass.seen.leads).toBe(400);
  }, 60_000);
});
