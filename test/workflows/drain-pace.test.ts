import { randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DrainBatchOutput } from '../../activities/mirror/drain-inbox.js';
import { webhookDrainWorkflow } from '../../workflows/drain.js';
import { inboxWakeSignal } from '../../workflows/drain-types.js';
import { rateLimitedSignal } from '../../workflows/rate-limit-types.js';
import { connectTemporal, type TemporalHarness } from '../helpers/temporal.js';

/**
 * A webhook drain that continues as new keeps the pace the service's refusals set (the
 * fairness weight of its batches), as a mirror pass does, instead of starting the next run at
 * the full rate into the same refusals. Its batch activity here is a stand-in that reports
 * a 429 the way a worker does (a signal to the workflow that ran it) and asks for more.
 */
let temporal: TemporalHarness;

beforeAll(async () => {
  temporal = await connectTemporal();
});

afterAll(async () => {
  await temporal?.close();
});

const output = (): DrainBatchOutput => ({
  notices: 1,
  records: 1,
  written: 1,
  unchanged: 0,
  deleted: 0,
  refused: 0,
  withoutEmail: 0,
  owed: 0,
  unreadable: 0,
  refusal: null,
  more: true,
});

/** The fairness weight of each batch the run `runId` scheduled. */
async function batchWeights(workflowId: string, runId: string): Promise<number[]> {
  const history = await temporal.client.workflow.getHandle(workflowId, runId).fetchHistory();
  return (history.events ?? [])
    .map((e) => e.activityTaskScheduledEventAttributes)
    .filter((a) => a?.activityType?.name === 'drainInbox')
    .map((a) => a?.priority?.fairnessWeight ?? 1);
}

describe('webhook drain across continue-as-new', () => {
  it('carries the pace a refusal cut into the next run', async () => {
    const taskQueue = temporal.taskQueue();
    const workflowId = `drain-pace-${randomUUID()}`;
    let batches = 0;
    const activities = {
      async drainInbox(): Promise<DrainBatchOutput> {
        batches += 1;
        if (batches === 1) {
          await temporal.client.workflow
            .getHandle(Context.current().info.workflowExecution?.workflowId ?? workflowId)
            .signal(rateLimitedSignal, {
              at: Date.now(),
              status: 429,
              retryAfterMs: 1_000,
              operation: 'leads.show',
              // Repeated refusals cut the pace; a lone one does not.
              count: 2,
            });
        }
        return output();
      },
    };
    await temporal.withWorker({ taskQueue, activities }, async () => {
      const handle = await temporal.client.workflow.signalWithStart(webhookDrainWorkflow, {
        taskQueue,
        workflowId,
        args: [{ connectionId: 'paced', destination: 'sqlite:/unused.db', batchesPerRun: 1 }],
        signal: inboxWakeSignal,
        signalArgs: [{ destination: 'sqlite:/unused.db' }],
      });
      const first = handle.signaledRunId;
      let latest = first;
      for (let i = 0; i < 100 && latest === first; i++) {
        await new Promise((r) => setTimeout(r, 100));
        latest = (await temporal.client.workflow.getHandle(workflowId).describe()).runId;
      }
      expect(latest).not.toBe(first);
      let weights: number[] = [];
      for (let i = 0; i < 100 && weights.length === 0; i++) {
        await new Promise((r) => setTimeout(r, 100));
        weights = await batchWeights(workflowId, latest);
      }
      await temporal.client.workflow.getHandle(workflowId).terminate('test over');
      expect(await batchWeights(workflowId, first)).toEqual([1]);
      expect(weights.length).toBeGreaterThan(0);
      // Cut by the refusal, and still cut a moment later in the next run.
      expect(weights[0]).toBeLessThan(1);
    });
  }, 60_000);
});
