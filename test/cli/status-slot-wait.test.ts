import type { ScheduleHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createMirrorActivities } from '../../activities/mirror/pass.js';
import { createMirrorSchedule } from '../../cli/schedules.js';
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

describe('ebsync status, a pass whose requests wait for their rate slot', () => {
  it('says it waits and until when, not only that it reads', async () => {
    const { temporal, deps } = harness;
    const taskQueue = temporal.taskQueue();
    const config = scheduleConfig(harness.dir, inject('temporalAddress'), taskQueue);
    const workflowId = `mirror-slotwait-${taskQueue}`;
    await temporal.withWorker({ taskQueue, activities: createMirrorActivities(deps) }, async () => {
      const handle = await temporal.client.workflow.start(mirrorWorkflow, {
        taskQueue,
        workflowId,
        args: [
          {
            connectionId: 'c1',
            destination: harness.sqlite('mirror.db'),
            subjects: ['leads'],
            mode: 'full',
          },
        ],
      });
      try {
        await eventually('a page read', async () => {
          const p = await handle.query(mirrorProgressQuery);
          return p.counts.read > 0 ? true : undefined;
        });
        const current = async (): Promise<PassView | null | undefined> =>
          (await collectStatus(temporal.client, config)).mirrors.find(
            (m) => m.workflowId === workflowId,
          )?.current;
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
