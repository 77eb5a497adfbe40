import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMirrorActivities } from '../../activities/mirror/pass.js';
import { mirrorWorkflow } from '../../workflows/mirror.js';
import { startSandboxMirror, type SandboxMirror } from '../fixtures/sandbox-mirror.js';
import { chainHistory, failedRuns } from './run-histories.js';
import { expectMirrorOfSource } from './source-truth.js';

/**
 * The mirror's activities have a short heartbeat timeout (20 s), so that a killed worker's
 * attempt goes to another worker soon; a live one says it is alive meanwhile. Here the
 * service takes 25 s to answer (inside the client's 30 s request timeout) while the pass
 * starts: an activity waits that long with no progress of its own, and must not be timed out
 * and retried for it.
 */
const LATENCY_MS = 25_000;
let harness: SandboxMirror;

beforeAll(async () => {
  harness = await startSandboxMirror(
    'alive-slow',
    { seed: { leads: 60, events: 0, seed: 'slow' } },
    { reachLimit: 10_000, per: 100 },
  );
}, 240_000);

afterAll(async () => {
  harness?.ts.sb.admin.clearFaults();
  await harness?.close();
});

describe('an activity waiting on a slow service answer', () => {
  it('is not timed out for its heartbeat while its worker lives', async () => {
    const { temporal, ts, deps } = harness;
    const taskQueue = temporal.taskQueue();
    const workflowId = `mirror-alive-slow-${taskQueue}`;
    const destination = harness.sqlite('mirror.db');
    let startedAt = 0;
    let finishedAt = 0;
    const handle = await temporal.withWorker(
      { taskQueue, activities: createMirrorActivities(deps) },
      async () => {
        ts.sb.admin.setFaults({ latencyMs: LATENCY_MS });
        startedAt = Date.now();
        const started = await temporal.client.workflow.start(mirrorWorkflow, {
          taskQueue,
          workflowId,
          args: [
            {
              connectionId: 'c1',
              destination,
              subjects: ['leads', 'events', 'appointments'],
              mode: 'full',
            },
          ],
        });
        // Requests that arrive in this time take 25 s each; later ones are answered at once.
        await new Promise((resolve) => setTimeout(resolve, LATENCY_MS - 2_000));
        ts.sb.admin.clearFaults();
        await started.result();
        finishedAt = Date.now();
        return started;
      },
    );
    const runs = await chainHistory(temporal.client, workflowId, handle.firstExecutionRunId);
    expect(failedRuns(runs)).toEqual([]);
    const starts = runs
      .flat()
      .map((e) => e.activityTaskStartedEventAttributes)
      .filter((a) => a !== null && a !== undefined);
    expect(starts.length).toBeGreaterThan(0);
    // Every activity finished on its first attempt: none was timed out while it waited.
    expect(starts.map((a) => a.attempt)).toEqual(starts.map(() => 1));
    const summary = await handle.result();
    expect(summary.phase).toBe('done');
    // The slow answers were waited for (the pass was not done before they came).
    expect(finishedAt - startedAt).toBeGreaterThanOrEqual(LATENCY_MS);
    await expectMirrorOfSource(ts.sb, destination, summary);
  }, 300_000);
});
