import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ScheduleHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createMirrorSchedule } from '../../cli/schedules.js';
import { collectStatus } from '../../cli/status-model.js';
import { mirrorRun, parseSubjects } from '../../cli/sync.js';
import { connectTemporal, type TemporalHarness } from '../helpers/temporal.js';
import { eventually, scheduleConfig } from '../schedules/schedule-worker.js';

/**
 * What `ebsync status` says of runs that ended, against the shared dev server: a scheduled
 * run whose mirror pass an operator terminated. The worker here runs the workflows and no
 * activity, so the pass stays at its first step until it is terminated; the report is read
 * after the worker stopped, as `ebsync status` reads it with no worker running.
 */
const YEARLY = { cron: '0 0 1 1 *', timezone: 'UTC' };
/** Operator text as `temporal workflow terminate --reason` takes it: more than one line. */
const REASON = 'stopped by ops: wrong destination\nticket OPS-12 has the details';

let temporal: TemporalHarness;
let dir: string;
const schedules: ScheduleHandle[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ebsync-status-ended-'));
  temporal = await connectTemporal();
});

afterAll(async () => {
  for (const s of schedules) await s.delete().catch(() => undefined);
  await temporal?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('ebsync status, runs that ended', () => {
  it("a scheduled run whose mirror pass was terminated says the operator's reason, on one line", async () => {
    const queue = temporal.taskQueue();
    const config = scheduleConfig(join(dir, 'data'), inject('temporalAddress'), queue);
    const connectionId = `ended-${randomUUID().slice(0, 8)}`;
    const destination = `sqlite:${join(dir, 'terminated.db')}`;
    const request = {
      connectionId,
      what: 'all',
      destination,
      full: false,
      timing: YEARLY,
      catchupWindowMs: 60_000,
      jitterMs: 0,
    };
    const schedule = await createMirrorSchedule(temporal.client, config, request);
    schedules.push(schedule);
    const mirrorId = mirrorRun(connectionId, {
      subjects: parseSubjects('all'),
      destination,
      full: false,
    }).workflowId;
    const runId = await temporal.withWorker({ taskQueue: queue, activities: {} }, async () => {
      await schedule.trigger();
      const d = await eventually('the triggered run', async () => {
        const described = await schedule.describe();
        return described.info.recentActions[0];
      });
      const mirror = temporal.client.workflow.getHandle(mirrorId);
      await eventually('its mirror pass running', async () =>
        (await mirror.describe().catch(() => undefined))?.status.name === 'RUNNING'
          ? true
          : undefined,
      );
      await mirror.terminate(REASON);
      const run = d.action.workflow.workflowId;
      await temporal.client.workflow
        .getHandle(run)
        .result()
        .catch(() => undefined);
      return run;
    });

    const report = await collectStatus(temporal.client, config);
    const lastRun = report.schedules.find((s) => s.scheduleId === schedule.scheduleId)?.lastRun;
    expect(lastRun?.workflowId).toBe(runId);
    expect(lastRun?.status).toBe('failed');
    // Not Temporal's bare 'Terminated': the reason, its first line only.
    expect(lastRun?.error).toBe(`mirror pass terminated: stopped by ops: wrong destination`);
    const mirror = report.mirrors.find((m) => m.workflowId === mirrorId);
    expect(mirror?.last?.status).toBe('terminated');
    expect(mirror?.last?.error).toBe('stopped by ops: wrong destination');
    const messages = report.problems.map((p) => p.message);
    expect(messages).toContain(
      `schedule ${schedule.scheduleId}: last run failed: mirror pass terminated: stopped by ops: wrong destination`,
    );
    for (const message of messages) expect(message).not.toContain('\n');
  }, 120_000);
});
