import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMirrorActivities } from '../../activities/mirror/pass.js';
import { mirrorWorkflow } from '../../workflows/mirror.js';
import { startSandboxMirror, type SandboxMirror } from '../fixtures/sandbox-mirror.js';
import { apiRequests } from './source-truth.js';

/**
 * The requests a pass says it made are the requests the service saw, those it turned away
 * included. An activity that got nothing but a 429 used to fail without counting its
 * requests, so a rate-limited pass said fewer than it made.
 */
let harness: SandboxMirror;

beforeAll(async () => {
  // Four times what the service allows: it turns many requests away.
  harness = await startSandboxMirror(
    'request-count',
    { seed: { leads: 400, events: 40 } },
    { reachLimit: 10_000, per: 100, rate: 20 },
  );
}, 240_000);

afterAll(async () => {
  await harness?.close();
});

describe('a pass the service rate-limits', () => {
  it('counts every request the service saw, the ones it answered 429 among them', async () => {
    const { ts, temporal, deps } = harness;
    ts.sb.admin.setRateLimit({ perSecond: 5 });
    ts.sb.admin.resetCounters();
    const taskQueue = temporal.taskQueue();
    const summary = await temporal.withWorker(
      { taskQueue, activities: createMirrorActivities(deps) },
      () =>
        temporal.client.workflow.execute(mirrorWorkflow, {
          taskQueue,
          workflowId: `request-count-${taskQueue}`,
          args: [
            {
              connectionId: 'c1',
              destination: harness.sqlite('mirror.db'),
              subjects: ['leads', 'events', 'appointments'],
              mode: 'full',
            },
          ],
        }),
    );
    const { total: seen, byStatus } = apiRequests(ts.sb);
    const turnedAway = byStatus['429'] ?? 0;
    // The check below can fail only if the service did turn requests away.
    expect(turnedAway).toBeGreaterThan(0);
    expect(summary.counts.requests).toBe(seen);
    expect(summary.counts.unreachable).toBe(0);
    expect(ts.internalErrors).toEqual([]);
  }, 300_000);
});
