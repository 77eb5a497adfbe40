import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Worker } from '@temporalio/worker';
import { hostname } from 'node:os';
import { createHealthActivities } from '../../activities/health.js';
import { connectTemporal, type TemporalHarness } from '../helpers/temporal.js';
import { healthCheckWorkflow } from '../../workflows/health.js';

let t: TemporalHarness;
beforeAll(async () => {
  t = await connectTemporal();
});
afterAll(async () => {
  await t.close();
});

describe('healthCheckWorkflow on a real dev server', () => {
  it('runs its activity on a worker and returns what the worker reported', async () => {
    const taskQueue = t.taskQueue();
    const startedAt = Date.now() - 5_000;
    const report = await t.withWorker(
      { taskQueue, activities: createHealthActivities({ version: '9.9.9-test', startedAt }) },
      () =>
        t.client.workflow.execute(healthCheckWorkflow, {
          taskQueue,
          workflowId: `health-${taskQueue}`,
        }),
    );
    expect(report.taskQueue).toBe(taskQueue);
    expect(report.workflowId).toBe(`health-${taskQueue}`);
    expect(report.worker).toMatchObject({
      version: '9.9.9-test',
      hostname: hostname(),
      pid: process.pid,
    });
    expect(report.worker.uptimeSeconds).toBeGreaterThanOrEqual(5);
  });

  it('replays its own history deterministically', async () => {
    const taskQueue = t.taskQueue();
    const workflowId = `health-replay-${taskQueue}`;
    await t.withWorker(
      { taskQueue, activities: createHealthActivities({ version: '1', startedAt: Date.now() }) },
      () => t.client.workflow.execute(healthCheckWorkflow, { taskQueue, workflowId }),
    );
    const history = await t.client.workflow.getHandle(workflowId).fetchHistory();
    const events = history.events ?? [];
    expect(events.some((e) => e.activityTaskCompletedEventAttributes)).toBe(true);
    await expect(
      Worker.runReplayHistory({ workflowBundle: { codePath: t.bundlePath } }, history, workflowId),
    ).resolves.toBeUndefined();
  });
});
