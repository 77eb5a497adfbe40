import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ScheduleHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createMirrorSchedule } from '../../cli/schedules.js';
import { collectStatus } from '../../cli/status-model.js';
import { statusText } from '../../cli/status.js';
import { mirrorRun, parseSubjects } from '../../cli/sync.js';
import type { Config } from '../../config/index.js';
import { connectionWorkflow } from '../../workflows/connection.js';
import { connectionWorkflowId, disconnectUpdate } from '../../workflows/connection-types.js';
import { connectTemporal, type TemporalHarness } from '../helpers/temporal.js';
import { eventually, scheduleConfig } from '../schedules/schedule-worker.js';

/**
 * What `ebsync status` says of runs that ended, against the shared dev server: a scheduled
 * run whose mirror pass an operator terminated, and the passes of a connection that was
 * disconnected. The worker here runs the workflows and no activity, so a pass stays at its
 * first step until it is terminated; the report is read after the worker stopped, as
 * `ebsync status` reads it with no worker running.
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

/** A schedule, its run triggered, and that run's mirror pass terminated with REASON. */
interface TerminatedPass {
  config: Config;
  connectionId: string;
  destination: string;
  schedule: ScheduleHandle;
  /** The scheduled run's workflow id. */
  runId: string;
  mirrorId: string;
}

/**
 * Creates a yearly schedule of a new connection on a new task queue, triggers it and
 * terminates the mirror pass it started, while a worker runs the workflows; `during` runs
 * before that worker stops.
 */
async function terminatedScheduledPass(
  name: string,
  during?: (pass: Omit<TerminatedPass, 'runId'>) => Promise<void>,
): Promise<TerminatedPass> {
  const queue = temporal.taskQueue();
  const config = scheduleConfig(join(dir, 'data'), inject('temporalAddress'), queue);
  const connectionId = `${name}-${randomUUID().slice(0, 8)}`;
  const destination = `sqlite:${join(dir, `${connectionId}.db`)}`;
  const schedule = await createMirrorSchedule(temporal.client, config, {
    connectionId,
    what: 'all',
    destination,
    full: false,
    timing: YEARLY,
    catchupWindowMs: 60_000,
    jitterMs: 0,
  });
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
    await during?.({ config, connectionId, destination, schedule, mirrorId });
    return run;
  });
  return { config, connectionId, destination, schedule, runId, mirrorId };
}

describe('ebsync status, runs that ended', () => {
  it("a scheduled run whose mirror pass was terminated says the operator's reason, on one line", async () => {
    const { config, connectionId, destination, schedule, runId, mirrorId } =
      await terminatedScheduledPass('ended');
    const report = await collectStatus(temporal.client, config);
    const lastRun = report.schedules.find((s) => s.scheduleId === schedule.scheduleId)?.lastRun;
    expect(lastRun?.workflowId).toBe(runId);
    expect(lastRun?.status).toBe('failed');
    // Not Temporal's bare 'Terminated': the reason, its first line only.
    expect(lastRun?.error).toBe(`mirror pass terminated: stopped by ops: wrong destination`);
    const mirror = report.mirrors.find((m) => m.workflowId === mirrorId);
    expect(mirror?.last?.status).toBe('terminated');
    expect(mirror?.last?.error).toBe('stopped by ops: wrong destination');
    // No worker answers where the terminated pass wrote: the schedule's memo says it.
    expect(mirror?.destination).toBe(destination);
    expect(report.problems.map((p) => p.message)).toContain(
      `mirror of connection ${connectionId} into ${destination}: last pass terminated: stopped by ops: wrong destination`,
    );
    const messages = report.problems.map((p) => p.message);
    expect(messages).toContain(
      `schedule ${schedule.scheduleId}: last run failed: mirror pass terminated: stopped by ops: wrong destination`,
    );
    for (const message of messages) expect(message).not.toContain('\n');
  }, 120_000);

  it('a disconnected connection with no schedule left holds no status red: its last pass is history', async () => {
    const { config, connectionId, schedule, mirrorId } = await terminatedScheduledPass(
      'gone',
      async (pass) => {
        // A real connection workflow (an integration key needs no activity), disconnected as
        // `ebsync disconnect` does it.
        const connection = await temporal.client.workflow.start(connectionWorkflow, {
          workflowId: connectionWorkflowId(pass.connectionId),
          taskQueue: pass.config.temporal.taskQueue,
          args: [
            {
              profile: {
                connectionId: pass.connectionId,
                kind: 'integration_key',
                baseUrl: 'https://svc.example/api/v1/',
                permissions: [],
              },
              credentials: { kind: 'apiKey', apiKey: 'test-key' },
            },
          ],
        });
        await connection.executeUpdate(disconnectUpdate);
        await connection.result();
      },
    );
    const ofIt = (p: { connectionId: string }) => p.connectionId === connectionId;

    // Its schedule is still there and will run it again: its failure is a problem.
    const scheduled = await collectStatus(temporal.client, config);
    expect(scheduled.mirrors.find((m) => m.workflowId === mirrorId)?.connectionGone).toBeNull();
    expect(scheduled.problems.filter(ofIt).map((p) => p.kind)).toContain('last_pass_failed');

    // `ebsync schedule delete`: nothing runs the mirror again, its passes are history.
    await schedule.delete();
    const report = await eventually('the schedule gone from the list', async () => {
      const r = await collectStatus(temporal.client, config);
      return r.schedules.length === 0 ? r : undefined;
    });
    expect(report.problems.filter(ofIt)).toEqual([]);
    const mirror = report.mirrors.find((m) => m.workflowId === mirrorId);
    expect(mirror?.last?.status).toBe('terminated');
    expect(mirror?.connectionGone).toBe(
      `connection '${connectionId}' was disconnected; 'ebsync connect --name ${connectionId}' connects it anew`,
    );
    const text = statusText(report);
    expect(text).toContain(`(history: connection '${connectionId}' was disconnected;`);
    expect(text).toMatch(/All healthy\.\n$/);
  }, 120_000);
});
