import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMirrorActivities } from '../../activities/mirror/pass.js';
import { barFraction } from '../../cli/mirror-summary.js';
import { mirrorProgressQuery, type MirrorProgress } from '../../workflows/mirror-types.js';
import { mirrorWorkflow } from '../../workflows/mirror.js';
import { startSandboxMirror, type SandboxMirror } from '../fixtures/sandbox-mirror.js';
import { apiRequests, sourceIds } from './source-truth.js';

/**
 * A pass of leads reads their bookings with them, while the booking list's own partition waits
 * for the leads. Its progress measured both against the leads' count alone until the end
 * ("13424 read (10000 listed)", the bar half full, no ETA): the booking list's count is now
 * asked along with the first leads, so the pass knows what it reads from its start.
 */
let harness: SandboxMirror;

beforeAll(async () => {
  harness = await startSandboxMirror(
    'progress-counts',
    { seed: { leads: 1500, events: 20 } },
    { reachLimit: 10_000, per: 100 },
  );
}, 240_000);

afterAll(async () => {
  await harness?.close();
});

describe('the progress of a pass of leads', () => {
  it('counts the lead bookings among what it expects while the leads are still read', async () => {
    const { ts, temporal, deps } = harness;
    const leads = sourceIds(ts.sb, 'lead').size;
    const bookings = sourceIds(ts.sb, 'lead_booking').size;
    expect(bookings).toBeGreaterThan(0);
    // Slow enough answers that the pass is seen between its first activity and its last.
    ts.sb.admin.setFaults({ latencyMs: 40 });
    ts.sb.admin.resetCounters();
    const taskQueue = temporal.taskQueue();
    const seen: MirrorProgress[] = [];
    const summary = await temporal.withWorker(
      // Two pages an activity: the leads take several activities, each a progress step.
      { taskQueue, activities: createMirrorActivities({ ...deps, pagesPerActivity: 2 }) },
      async () => {
        const handle = await temporal.client.workflow.start(mirrorWorkflow, {
          taskQueue,
          workflowId: `progress-counts-${taskQueue}`,
          args: [
            {
              connectionId: 'c1',
              destination: harness.sqlite('mirror.db'),
              subjects: ['leads'],
              mode: 'full',
            },
          ],
        });
        for (;;) {
          const p = await handle.query(mirrorProgressQuery);
          if (p.phase !== 'reading' && p.phase !== 'planning') break;
          if (p.counts.pages > 0) seen.push(p);
          await new Promise((r) => setTimeout(r, 20));
        }
        return await handle.result();
      },
    );
    ts.sb.admin.clearFaults();
    // Steps while the lead list was still being read (no partition done yet).
    const midway = seen.filter((p) => p.partitions.done === 0);
    expect(midway.length, 'no step seen while the leads were read').toBeGreaterThan(0);
    for (const p of midway) {
      expect(p.counts.expected).toBe(leads + bookings);
      // Read and expected count the same records, so the bar follows what was read.
      expect(barFraction(p)).toBeCloseTo(p.counts.read / (leads + bookings), 5);
      expect(p.etaMs === null || p.etaMs >= 0).toBe(true);
    }
    expect(summary.counts.read).toBe(leads + bookings);
    expect(summary.counts.expected).toBe(leads + bookings);
    expect(summary.counts.unreachable).toBe(0);
    // The count asked along is a request like any other: the pass says every one it made.
    expect(summary.counts.requests).toBe(apiRequests(ts.sb).total);
    expect(ts.internalErrors).toEqual([]);
  }, 120_000);
});
