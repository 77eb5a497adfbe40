import type { ScheduleHandle, WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { connectionPaused } from '../../activities/connection-tokens.js';
import { createMirrorActivities } from '../../activities/mirror/pass.js';
import { createMirrorSchedule } from '../../cli/schedules.js';
import type { Config } from '../../config/index.js';
import { mirrorRun, parseSubjects } from '../../cli/sync.js';
import { collectStatus, type PassView } from '../../cli/status-model.js';
import { statusText } from '../../cli/status.js';
import { mirrorProgressQuery } from '../../workflows/mirror-types.js';
import { mirrorWorkflow } from '../../workflows/mirror.js';
import { startSandboxMirror, type SandboxMirror } from '../fixtures/sandbox-mirror.js';
import { eventually, scheduleConfig } from '../schedules/schedule-worker.js';

/**
 * A pass whose requests wait for the connection's rate slot (the slots held, as a long
 * Retry-After holds them) reads nothing, while its activities' beats keep it alive: `ebsync
 * status` said "reading" and nothing else, as of a pass at work. Real Temporal, the sandbox
 * over HTTPS, requests paced through the store's slots as the worker paces them.
 */
const HOLD_MS = 120_000;
let harness: SandboxMirror;

beforeAll(async () => {
  harness = await startSandboxMirror(
    'status-slot-wait',
    { seed: { leads: 400, events: 0, seed: 'slot-wait' } },
    { reachLimit: 10_000, per: 10, rate: 4 },
  );
}, 240_000);

const schedules: ScheduleHandle[] = [];

afterAll(async () => {
  for (const s of schedules) await s.delete().catch(() => undefined);
  await harness?.close();
});

const waitLine = "waiting: its requests wait for the connection's rate slot until";

/** A full pass of a connection's leads, started and waited for until it read `read` records. */
async function startPass(
  taskQueue: string,
  workflowId: string,
  connectionId: string,
  read = 1,
): Promise<WorkflowHandle<typeof mirrorWorkflow>> {
  const handle = await harness.temporal.client.workflow.start(mirrorWorkflow, {
    taskQueue,
    workflowId,
    args: [
      {
        connectionId,
        destination: harness.sqlite(`${workflowId}.db`),
        subjects: ['leads'],
        mode: 'full',
      },
    ],
  });
  await eventually('pages read', async () => {
    const p = await handle.query(mirrorProgressQuery);
    return p.counts.read >= read ? true : undefined;
  });
  return handle;
}

/** The pass `ebsync status` reports running for that workflow id. */
const currentPass = async (
  config: Config,
  workflowId: string,
): Promise<PassView | null | undefined> =>
  (await collectStatus(harness.temporal.client, config)).mirrors.find(
    (m) => m.workflowId === workflowId,
  )?.current;

describe('ebsync status, a pass whose requests wait for their rate slot', () => {
  it('says it waits and until when, not only that it reads', async () => {
    const { temporal, deps } = harness;
    const taskQueue = temporal.taskQueue();
    const config = scheduleConfig(harness.dir, inject('temporalAddress'), taskQueue);
    const workflowId = `mirror-slotwait-${taskQueue}`;
    await temporal.withWorker({ taskQueue, activities: createMirrorActivities(deps) }, async () => {
      const handle = await startPass(taskQueue, workflowId, 'c1');
      try {
        const current = () => currentPass(config, workflowId);
        // At its pace a request waits a fraction of a second for its slot: not a wait to show.
        const reading = await eventually('the pass in the report', current);
        expect(reading?.slotWaitUntil).toBeUndefined();
        const heldAt = Date.now();
        await (await deps.ledger()).holdRequests('c1', HOLD_MS);
        // The activity's beats reach Temporal within its heartbeat throttle (16 s).
        const waiting = await eventually(
          'the slot wait in the report',
          async () => {
            const pass = await current();
            return pass?.slotWaitUntil !== undefined ? pass : undefined;
          },
          45_000,
        );
        expect(waiting.status).toBe('running');
        expect(waiting.slotWaitUntil).toBeGreaterThanOrEqual(heldAt + HOLD_MS - 5_000);
        expect(waiting.slotWaitUntil).toBeLessThanOrEqual(Date.now() + HOLD_MS + 5_000);
        const report = await collectStatus(temporal.client, config);
        const text = statusText(report);
        expect(text).toContain(waitLine);
        // A wait, not a problem: the pass is held by the service's limit, not broken.
        expect(report.problems).toEqual([]);
      } finally {
        await handle.terminate('test over');
      }
    });
  }, 240_000);
});

describe('ebsync status, a scheduled run whose pass waits for its rate slot', () => {
  it('shows the run waiting, and on what, not running', async () => {
    const { temporal, deps } = harness;
    const taskQueue = temporal.taskQueue();
    const config = scheduleConfig(harness.dir, inject('temporalAddress'), taskQueue);
    const connectionId = 'c2';
    const destination = harness.sqlite('scheduled.db');
    const schedule = await createMirrorSchedule(temporal.client, config, {
      connectionId,
      what: 'leads',
      destination,
      full: false,
      timing: { cron: '0 0 1 1 *', timezone: 'UTC' },
      catchupWindowMs: 60_000,
      jitterMs: 0,
    });
    schedules.push(schedule);
    const mirrorId = mirrorRun(connectionId, {
      subjects: parseSubjects('leads'),
      destination,
      full: false,
    }).workflowId;
    await temporal.withWorker({ taskQueue, activities: createMirrorActivities(deps) }, async () => {
      await schedule.trigger();
      const mirror = temporal.client.workflow.getHandle(mirrorId);
      try {
        await eventually('its pass reading', async () => {
          const p = await mirror.query(mirrorProgressQuery).catch(() => undefined);
          return p && p.counts.read > 0 ? true : undefined;
        });
        const lastRun = async () =>
          (await collectStatus(temporal.client, config)).schedules.find(
            (sc) => sc.scheduleId === schedule.scheduleId,
          )?.lastRun;
        // At work: running, no wait said.
        const working = await eventually('the run in the report', lastRun);
        expect(working?.status).toBe('running');
        expect(working?.waiting).toBeUndefined();
        await (await deps.ledger()).holdRequests(connectionId, HOLD_MS);
        const held = await eventually(
          'the run waiting in the report',
          async () => {
            const run = await lastRun();
            return run?.waiting !== undefined ? run : undefined;
          },
          45_000,
        );
        expect(held.waiting).toMatch(
          new RegExp(
            `^on its pass ${mirrorId}: its requests wait for the connection's rate slot until `,
          ),
        );
        const report = await collectStatus(temporal.client, config);
        expect(statusText(report)).toMatch(/last run waiting \(.*\) on its pass /);
        expect(report.problems).toEqual([]);
      } finally {
        await mirror.terminate('test over').catch(() => undefined);
      }
    });
  }, 240_000);
});

/**
 * A pass of a paused connection keeps running: its activities wait, each attempt refused as the
 * connection's tokens refuse it (`connectionPaused`, what ConnectionTokens throws while paused).
 * Its records/s, averaged over the wall clock, kept falling while nothing was read.
 */
describe('ebsync status, a pass of a paused connection', () => {
  it('keeps the rate it read at, and shows no ETA, while it waits', async () => {
    const { temporal, deps } = harness;
    const taskQueue = temporal.taskQueue();
    const config = scheduleConfig(harness.dir, inject('temporalAddress'), taskQueue);
    const workflowId = `mirror-pausedrate-${taskQueue}`;
    let paused = false;
    const activities = createMirrorActivities({
      ...deps,
      clientFor: (connectionId, version) =>
        paused
          ? Promise.reject(connectionPaused(`connection ${connectionId} is paused`, 1_000))
          : deps.clientFor(connectionId, version),
    });
    await temporal.withWorker({ taskQueue, activities }, async () => {
      const handle = await startPass(taskQueue, workflowId, 'c3', 40);
      try {
        paused = true;
        const waiting = await eventually(
          'the pass waiting',
          async () => {
            const pass = await currentPass(config, workflowId);
            return pass?.retrying?.wait ? pass : undefined;
          },
          45_000,
        );
        await new Promise((r) => setTimeout(r, 4_000));
        const later = await currentPass(config, workflowId);
        expect(later?.retrying?.wait).toBe(true);
        expect(later?.progress?.counts.read).toBe(waiting.progress?.counts.read);
        // Nothing read meanwhile: the rate it read at, not one that falls with the wall clock,
        // and no ETA (how long the wait lasts is not known); its elapsed time runs on.
        expect(later?.progress?.ratePerSecond).toBe(waiting.progress?.ratePerSecond);
        expect(later?.progress?.ratePerSecond).toBeGreaterThan(0);
        expect(later?.progress?.etaMs).toBeNull();
        expect(later!.progress!.elapsedMs).toBeGreaterThanOrEqual(
          waiting.progress!.elapsedMs + 3_500,
        );
        const text = statusText(await collectStatus(temporal.client, config));
        expect(text).toContain(`partitions, ${later?.progress?.ratePerSecond}/s\n`);
        expect(text).not.toMatch(/ETA/);
        expect(text).toContain('waiting: mirrorPage: connection c3 is paused (ConnectionPaused)');
      } finally {
        paused = false;
        await handle.terminate('test over');
      }
    });
  }, 240_000);
});

/**
 * A pass whose activities no worker takes (every activity slot held by another pass's requests,
 * waiting for their rate slot) was shown running and reading, as one at work.
 */
describe('ebsync status, a pass whose activities wait for a worker', () => {
  it('says they wait for a worker, and since when', async () => {
    const { temporal, deps } = harness;
    const taskQueue = temporal.taskQueue();
    const config = scheduleConfig(harness.dir, inject('temporalAddress'), taskQueue);
    const busyId = `mirror-busy-${taskQueue}`;
    const waitingId = `mirror-noslot-${taskQueue}`;
    await temporal.withWorker(
      {
        taskQueue,
        activities: createMirrorActivities(deps),
        // One activity slot: the held pass's request keeps it.
        maxConcurrentActivityTaskExecutions: 1,
      },
      async () => {
        const busy = await startPass(taskQueue, busyId, 'c4');
        await (await deps.ledger()).holdRequests('c4', HOLD_MS);
        // Its next request (a request every 1/4 s) waits, and its activity keeps the slot.
        await new Promise((r) => setTimeout(r, 2_000));
        const startedAt = Date.now();
        const waiting = await startPass(taskQueue, waitingId, 'c5', 0);
        try {
          const pass = await eventually(
            'the worker wait in the report',
            async () => {
              const p = await currentPass(config, waitingId);
              return p?.workerWait !== undefined ? p : undefined;
            },
            45_000,
          );
          expect(pass.status).toBe('running');
          expect(pass.progress?.counts.read).toBe(0);
          expect(pass.workerWait?.taskQueue).toBe(taskQueue);
          expect(pass.workerWait?.since).toBeGreaterThanOrEqual(startedAt - 1_000);
          expect(pass.workerWait?.since).toBeLessThanOrEqual(Date.now() - 10_000);
          const report = await collectStatus(temporal.client, config);
          expect(statusText(report)).toContain(
            `waiting: its activities wait for a worker since ${new Date(pass.workerWait!.since)
              .toISOString()
              .replace(
                /\.\d+Z$/,
                'Z',
              )} (every activity slot of the workers on task queue '${taskQueue}' is taken`,
          );
          expect(report.problems).toEqual([]);
        } finally {
          await waiting.terminate('test over').catch(() => undefined);
          await busy.terminate('test over').catch(() => undefined);
        }
      },
    );
  }, 240_000);
});
