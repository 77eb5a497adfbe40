import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { apiKeyAuth, createClient } from '../../api/index.js';
import { createMirrorActivities } from '../../activities/mirror/pass.js';
import { collectStatus } from '../../cli/status-model.js';
import { statusText } from '../../cli/status.js';
import { mirrorWorkflow } from '../../workflows/mirror.js';
import { startSandboxMirror, type SandboxMirror } from '../fixtures/sandbox-mirror.js';
import { eventually, scheduleConfig } from '../schedules/schedule-worker.js';

/**
 * Event bookings on a day over the service's reach, and their events, are read by id in the
 * activity that ends the booking list, at the connection's pace: a black-box run (sandbox
 * --reach-limit 2, 3000 events) showed `4294 read` for three minutes while 2,000 events were
 * read, its records/s falling, as of a pass that had hung. `ebsync status` (and `ebsync sync`'s
 * line) now say which activity is at work and since when. Real Temporal, the sandbox over HTTPS.
 */
let harness: SandboxMirror;

const CROWD = 40;

beforeAll(async () => {
  harness = await startSandboxMirror(
    'status-busy',
    { seed: { leads: 0, events: 6, seed: 'busy' } },
    { reachLimit: 10_000, per: 100 },
  );
  const { sb } = harness.ts;
  const client = createClient({
    baseUrl: sb.baseUrl,
    auth: apiKeyAuth(sb.apiKey),
    ca: readFileSync(sb.caFile ?? ''),
  });
  for (let i = 0; i < CROWD; i++) {
    await client.events.create({
      is_proposal: false,
      contact_type: 'New Customer',
      contact_name: `Crowd ${i}`,
      contact_email: `crowd${i}@example.com`,
      quick_event_bookings_attributes: {
        '0': { event_type_id: 1, starts_at_date: '04-21-2027', starts_at_time: '6:00 PM' },
      },
    });
  }
  // No query reaches past its second result, and each answer takes a while: the crowded day's
  // bookings and their events are some 80 reads by id, about half a minute.
  sb.ctx.limits.reachLimit = 2;
  sb.admin.setFaults({ latencyMs: 1_500 });
}, 240_000);

afterAll(async () => {
  await harness?.close();
});

describe('ebsync status, a pass whose activity reads by id for a while', () => {
  it('says which activity is at work and since when', async () => {
    const { temporal, deps } = harness;
    const taskQueue = temporal.taskQueue();
    const config = scheduleConfig(harness.dir, inject('temporalAddress'), taskQueue);
    const workflowId = `mirror-busy-${taskQueue}`;
    await temporal.withWorker({ taskQueue, activities: createMirrorActivities(deps) }, async () => {
      const handle = await temporal.client.workflow.start(mirrorWorkflow, {
        taskQueue,
        workflowId,
        args: [
          {
            connectionId: 'c1',
            destination: harness.sqlite('busy.db'),
            subjects: ['events'],
            mode: 'full',
          },
        ],
      });
      try {
        const busy = await eventually(
          'the busy activity in the report',
          async () => {
            const pass = (await collectStatus(temporal.client, config)).mirrors.find(
              (m) => m.workflowId === workflowId,
            )?.current;
            return pass?.busy !== undefined ? pass : undefined;
          },
          150_000,
        );
        expect(busy.status).toBe('running');
        expect(busy.busy?.activity).toBe('mirrorPage');
        expect(Date.now() - (busy.busy?.since ?? 0)).toBeGreaterThanOrEqual(15_000);
        const report = await collectStatus(temporal.client, config);
        expect(statusText(report)).toMatch(/reading: mirrorPage has been at work since /);
        // At work, not a problem.
        expect(report.problems).toEqual([]);
      } finally {
        await handle.terminate('test over').catch(() => undefined);
      }
    });
  }, 240_000);
});
