import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ScheduleHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  createMirrorSchedule,
  ensureDefaultSchedules,
  scheduleLines,
  type MirrorScheduleRequest,
  type ScheduleTiming,
} from '../../cli/schedules.js';
import { scheduleSection } from '../../cli/status-sections.js';
import { mirrorRun } from '../../cli/sync.js';
import { mirrorWorkflow } from '../../workflows/mirror.js';
import { destinationIds } from '../mirror/source-truth.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { connectTemporal, type TemporalHarness } from '../helpers/temporal.js';
import { actionResults, eventually, mirrorWorker, scheduleConfig } from './schedule-worker.js';

const LEADS = 40;
/** Once a year: a schedule that never fires during a test unless triggered. */
const YEARLY: ScheduleTiming = { cron: '0 0 1 1 *', timezone: 'UTC' };

let ts: TestSandbox;
let temporal: TemporalHarness;
let dir: string;
const schedules: ScheduleHandle[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ebsync-schedules-'));
  ts = await startTestSandbox({ https: true, seed: { leads: LEADS, events: 4 } });
  temporal = await connectTemporal();
}, 120_000);

afterAll(async () => {
  for (const s of schedules) await s.delete().catch(() => undefined);
  await temporal?.close();
  await ts?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A schedule of this file's own connection `schedtest-<name>`, into its own mirror file. */
async function schedule(
  name: string,
  taskQueue: string,
  o: Partial<MirrorScheduleRequest> & { timing: ScheduleTiming },
): Promise<{ handle: ScheduleHandle; request: MirrorScheduleRequest }> {
  const config = scheduleConfig(dir, inject('temporalAddress'), taskQueue);
  const request: MirrorScheduleRequest = {
    connectionId: `schedtest-${name}`,
    what: 'all',
    destination: `sqlite:${join(dir, `${name}.db`)}`,
    full: false,
    catchupWindowMs: 60_000,
    jitterMs: 0,
    ...o,
  };
  const handle = await createMirrorSchedule(temporal.client, config, request);
  schedules.push(handle);
  return { handle, request };
}

/** Runs fn while a mirror worker polls taskQueue. */
async function withMirrorWorker<T>(taskQueue: string, fn: () => Promise<T>): Promise<T> {
  const running = await mirrorWorker({
    connection: temporal.nativeConnection,
    taskQueue,
    bundlePath: temporal.bundlePath,
    ts,
    dir,
  });
  try {
    return await running.worker.runUntil(fn());
  } finally {
    await running.close();
  }
}

/**
 * A pass of the schedule's mirror as `ebsync sync` starts it, on a queue no worker polls: it
 * stays running until terminated.
 */
async function idlePass(request: MirrorScheduleRequest, full: boolean) {
  const { workflowId, input } = mirrorRun(request.connectionId, {
    subjects: ['leads'],
    destination: request.destination,
    full,
  });
  const handle = await temporal.client.workflow.start(mirrorWorkflow, {
    taskQueue: `idle-${randomUUID()}`,
    workflowId,
    args: [input],
  });
  return { workflowId, handle };
}

/** The schedule as `ebsync status` shows it (its last run's outcome). */
async function statusOf(queue: string, handle: ScheduleHandle) {
  const config = scheduleConfig(dir, inject('temporalAddress'), queue);
  const views = await scheduleSection(temporal.client, config, new Map());
  return views.find((v) => v.scheduleId === handle.scheduleId);
}

const actionsTaken = async (handle: ScheduleHandle, n: number) =>
  eventually(`${n} action(s) of ${handle.scheduleId}`, async () => {
    const d = await handle.describe();
    return d.info.recentActions.length >= n ? d : undefined;
  });

describe('scheduled mirror passes on Temporal Schedules', () => {
  it('an interval schedule fires and its pass fills the mirror', async () => {
    const queue = temporal.taskQueue();
    const { handle, request } = await schedule('fires', queue, { timing: { everyMs: 2_000 } });
    expect(handle.scheduleId).toMatch(/^sync-schedtest-fires-all-incremental-[0-9a-f]{12}$/);
    await withMirrorWorker(queue, async () => {
      const d = await actionsTaken(handle, 1);
      const [first] = await actionResults(temporal.client, d.info.recentActions.slice(0, 1));
      expect(first?.outcome).toBe('mirrored');
      await handle.pause('test done');
    });
    expect(await destinationIds(request.destination, 'leads')).toHaveLength(LEADS);
  }, 120_000);

  it('trigger runs a pass at once, long before the next firing', async () => {
    const queue = temporal.taskQueue();
    const { handle, request } = await schedule('trigger', queue, { timing: YEARLY, full: true });
    const before = Date.now();
    await withMirrorWorker(queue, async () => {
      await handle.trigger();
      const d = await actionsTaken(handle, 1);
      const taken = d.info.recentActions[0]!.takenAt.getTime();
      expect(taken).toBeGreaterThanOrEqual(before - 1_000);
      expect(taken).toBeLessThan(d.info.nextActionTimes[0]!.getTime());
      const [result] = await actionResults(temporal.client, d.info.recentActions);
      expect(result?.outcome).toBe('mirrored');
    });
    expect(await destinationIds(request.destination, 'leads')).toHaveLength(LEADS);
  }, 120_000);

  it('a full pass fired while the last one runs is skipped; an incremental one waits its turn', async () => {
    // No worker polls yet, so the first action of each stays running.
    const queue = temporal.taskQueue();
    const full = (await schedule('overlap-full', queue, { timing: YEARLY, full: true })).handle;
    const incremental = (await schedule('overlap-inc', queue, { timing: YEARLY })).handle;
    for (const h of [full, incremental]) {
      // As `ebsync schedule trigger` does: under the schedule's own overlap policy.
      const overlap = (await h.describe()).policies.overlap;
      await h.trigger(overlap);
      await actionsTaken(h, 1);
      await h.trigger(overlap);
    }
    const skipped = await eventually('the full schedule to skip its overlap', async () => {
      const d = await full.describe();
      return d.info.numActionsSkippedOverlap >= 1 ? d : undefined;
    });
    expect(skipped.policies.overlap).toBe('SKIP');
    expect(skipped.info.recentActions).toHaveLength(1);

    await withMirrorWorker(queue, async () => {
      // The buffered incremental firing starts once the first one ends.
      const inc = await actionsTaken(incremental, 2);
      expect(inc.policies.overlap).toBe('BUFFER_ONE');
      expect(
        (await actionResults(temporal.client, inc.info.recentActions)).map((r) => r.outcome),
      ).toEqual(['mirrored', 'mirrored']);
      const d = await full.describe();
      expect(d.info.recentActions).toHaveLength(1);
      expect(d.info.numActionsSkippedOverlap).toBe(1);
      expect(
        (await actionResults(temporal.client, d.info.recentActions)).map((r) => r.outcome),
      ).toEqual(['mirrored']);
    });
  }, 180_000);

  it('a scheduled full pass is skipped while a manual sync of the same mirror runs', async () => {
    const queue = temporal.taskQueue();
    const { handle, request } = await schedule('manual', queue, { timing: YEARLY, full: true });
    // The manual sync, as `ebsync sync` starts it, on a queue no worker polls: it stays running.
    const { workflowId, handle: manual } = await idlePass(request, false);
    try {
      await withMirrorWorker(queue, async () => {
        await handle.trigger();
        const d = await actionsTaken(handle, 1);
        const [result] = await actionResults(temporal.client, d.info.recentActions);
        expect(result).toEqual({
          outcome: 'skipped',
          reason: `a mirror of this connection and destination was running (${workflowId})`,
        });
        // The status says the run skipped, not that it completed as if a pass had run.
        expect((await statusOf(queue, handle))?.lastRun).toMatchObject({
          status: 'completed',
          skipped: `a mirror of this connection and destination was running (${workflowId})`,
        });
      });
    } finally {
      await manual.terminate('test done');
    }
  }, 120_000);

  it('a scheduled incremental pass waiting behind another pass of its mirror is shown waiting, not running', async () => {
    const queue = temporal.taskQueue();
    const { handle, request } = await schedule('behind', queue, { timing: YEARLY });
    const { workflowId, handle: blocking } = await idlePass(request, true);
    try {
      await withMirrorWorker(queue, async () => {
        await handle.trigger();
        const d = await actionsTaken(handle, 1);
        const run = temporal.client.workflow.getHandle(
          d.info.recentActions[0]!.action.workflow.workflowId,
        );
        // The run found the pass running and sleeps until it ends (workflows/scheduled-mirror.ts).
        await eventually('the incremental run to find the pass running', async () => {
          const history = await run.fetchHistory();
          return history.events?.some((e) => e.startChildWorkflowExecutionFailedEventAttributes)
            ? true
            : undefined;
        });
        expect((await run.describe()).status.name).toBe('RUNNING');
        expect((await statusOf(queue, handle))?.lastRun).toMatchObject({
          status: 'running',
          waiting: `behind the running pass ${workflowId}, started by 'ebsync sync' or 'npm start'`,
        });
        await run.terminate('test done');
        await blocking.terminate('test done');

        // Its own pass (its child, slowed here so that it runs a while) is running, not waiting.
        ts.sb.admin.setFaults({ latencyMs: 3_000 });
        await handle.trigger();
        const own = await actionsTaken(handle, 2);
        const second = own.info.recentActions[1]!.action.workflow.workflowId;
        await eventually('the second run to start its own pass', async () => {
          const pass = await temporal.client.workflow.getHandle(workflowId).describe();
          return pass.status.name === 'RUNNING' && pass.parentExecution?.workflowId === second
            ? true
            : undefined;
        });
        const shown = (await statusOf(queue, handle))?.lastRun;
        expect(shown).toMatchObject({ workflowId: second, status: 'running' });
        expect(shown?.waiting).toBeUndefined();
        await temporal.client.workflow.getHandle(second).terminate('test done');
      });
    } finally {
      ts.sb.admin.clearFaults();
      await blocking.terminate('test done').catch(() => undefined);
      await temporal.client.workflow
        .getHandle(workflowId)
        .terminate('test done')
        .catch(() => undefined);
    }
  }, 120_000);

  it('a paused schedule fires nothing; resumed, it fires again', async () => {
    const queue = temporal.taskQueue();
    const { handle } = await schedule('paused', queue, {
      timing: { everyMs: 1_000 },
      paused: true,
    });
    await withMirrorWorker(queue, async () => {
      // Several intervals go by.
      await new Promise((r) => setTimeout(r, 5_000));
      const d = await handle.describe();
      expect(d.state.paused).toBe(true);
      expect(d.info.numActionsTaken).toBe(0);
      expect(d.info.recentActions).toEqual([]);
      await handle.unpause('test');
      await actionsTaken(handle, 1);
      await handle.pause('test done');
    });
  }, 120_000);

  it("npm start's defaults: one paused since is said to be paused, with how to resume it", async () => {
    const config = scheduleConfig(dir, inject('temporalAddress'), temporal.taskQueue());
    const connectionId = `schedtest-defaults-${randomUUID().slice(0, 8)}`;
    const destination = `sqlite:${join(dir, 'defaults.db')}`;
    const first = await ensureDefaultSchedules(temporal.client, config, connectionId, destination);
    for (const o of first) schedules.push(temporal.client.schedule.getHandle(o.scheduleId));
    expect(first.map((o) => o.created)).toEqual([true, true]);
    const [incremental, full] = first.map((o) => o.scheduleId);
    await temporal.client.schedule.getHandle(full!).pause('test: paused by its user');
    const again = scheduleLines(
      await ensureDefaultSchedules(temporal.client, config, connectionId, destination),
    );
    expect(again).toMatch(new RegExp(`^ {2}${incremental} .*\\(already there, kept\\)$`, 'm'));
    expect(again).toContain(
      `  ${full}  cron '0 3 * * *' (${Intl.DateTimeFormat().resolvedOptions().timeZone}) (already there, kept; paused: 'npx ebsync schedule resume ${full}' resumes it)\n`,
    );
  }, 60_000);

  it("npm start's nightly default under a TZ that is not an IANA zone name: in UTC, and said so", async () => {
    const config = scheduleConfig(dir, inject('temporalAddress'), temporal.taskQueue());
    const connectionId = `schedtest-posix-tz-${randomUUID().slice(0, 8)}`;
    const destination = `sqlite:${join(dir, 'posix-tz.db')}`;
    const before = process.env.TZ;
    process.env.TZ = 'UTC+2';
    let outcomes;
    try {
      outcomes = await ensureDefaultSchedules(temporal.client, config, connectionId, destination);
    } finally {
      if (before === undefined) delete process.env.TZ;
      else process.env.TZ = before;
    }
    for (const o of outcomes) schedules.push(temporal.client.schedule.getHandle(o.scheduleId));
    const full = outcomes[1]!.scheduleId;
    const d = await temporal.client.schedule.getHandle(full).describe();
    expect(d.spec.timezone).toBe('UTC');
    expect(scheduleLines(outcomes)).toContain(
      `  ${full}  cron '0 3 * * *' (UTC) (created now, in UTC: this machine's time zone (TZ 'UTC+2') is not an IANA zone name)\n`,
    );
  }, 60_000);
});
