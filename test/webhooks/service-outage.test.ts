import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { drainStatusQuery, drainWorkflowId } from '../../workflows/drain-types.js';
import {
  closeRecordBed,
  destinationColumn,
  eventually,
  hintBody,
  newSecret,
  openRecordBed,
  post,
  standardHeaders,
  startTestReceiver,
  webhookActivities,
  type RecordBed,
} from './deliveries.js';

/**
 * The service fails every read for a while: the notice waits in the inbox (the batch retries
 * on Temporal's policy, holding nothing in the worker), the drain stays healthy, and the
 * change lands once the service answers again.
 */
const CONNECTION = 'outage-shop';
const LEAD = '5';
// Unset only when opening failed, and closeRecordBed takes that.
let bed: RecordBed;

beforeAll(async () => {
  bed = await openRecordBed({ leads: 20, events: 1 }, 'ebsync-service-outage-');
});

afterAll(() => closeRecordBed(bed));

it('a notice whose read the service keeps failing waits in the inbox, and lands when the service answers', async () => {
  const { ts, temporal, dir, deps } = bed;
  const taskQueue = temporal.taskQueue();
  const destination = `sqlite:${join(dir, 'mirror.db')}`;
  const names = (): Map<string, unknown> =>
    destinationColumn(join(dir, 'mirror.db'), 'leads', 'first_name');
  const secret = newSecret();
  const receiver = await startTestReceiver({
    hooks: new Map([[CONNECTION, { secret, destination }]]),
    deps,
    client: temporal.client,
    taskQueue,
  });
  const pending = async () => (await deps.inbox()).pending(CONNECTION, 10);
  const drain = temporal.client.workflow.getHandle(drainWorkflowId(CONNECTION));

  try {
    await temporal.withWorker(
      { taskQueue, activities: webhookActivities(deps, temporal.client, taskQueue) },
      async () => {
        ts.sb.admin.setFaults({ errorRate: 1, errorStatuses: [503] });
        ts.sb.admin.patchRecord('lead', Number(LEAD), { first_name: 'After the outage' });
        const body = hintBody('evt_outage_1', 'lead', LEAD);
        const sent = await post(
          receiver.url(CONNECTION),
          body,
          standardHeaders(secret, 'evt_outage_1', body),
        );
        expect(sent.status).toBe(200);
        await eventually(
          () => ts.sb.admin.counters().faults_injected >= 3,
          60_000,
          'reads tried and refused',
        );
        expect(names().get(LEAD)).not.toBe('After the outage');
        expect((await pending()).map((n) => n.deliveryId)).toEqual(['evt_outage_1']);
        expect((await drain.describe()).status.name).toBe('RUNNING');

        ts.sb.admin.clearFaults();
        await eventually(
          () => names().get(LEAD) === 'After the outage',
          90_000,
          'the change applied once the service answers',
        );
        expect(await pending()).toEqual([]);
        const status = await drain.query(drainStatusQuery);
        // One notice, one read; the lead written with its bookings.
        expect(status.totals).toMatchObject({ notices: 1, records: 1 });
        expect(status.totals.written).toBeGreaterThanOrEqual(1);
      },
    );
  } finally {
    await receiver.close();
    await drain.terminate('test over').catch(() => undefined);
  }
}, 240_000);
