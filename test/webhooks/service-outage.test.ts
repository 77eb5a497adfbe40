import { afterAll, beforeAll, expect, it } from 'vitest';
import { drainStatusQuery } from '../../workflows/drain-types.js';
import {
  closeRecordBed,
  eventually,
  hintBody,
  openRecordBed,
  post,
  receiverOnBed,
  standardHeaders,
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
  const { ts, temporal, deps } = bed;
  const { taskQueue, secret, receiver, names, drain, activities } = await receiverOnBed(
    bed,
    CONNECTION,
  );
  const pending = async () => (await deps.inbox()).pending(CONNECTION, 10);

  try {
    await temporal.withWorker({ taskQueue, activities }, async () => {
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
      // The drain's activity counts what it applied when it ends (after a quiet spell).
      await eventually(
        async () => (await drain.query(drainStatusQuery)).totals.notices > 0,
        30_000,
        'the drain counted the notice',
      );
      const status = await drain.query(drainStatusQuery);
      // One notice, one read; the lead written with its bookings.
      expect(status.totals).toMatchObject({ notices: 1, records: 1 });
      expect(status.totals.written).toBeGreaterThanOrEqual(1);
    });
  } finally {
    await receiver.close();
    await drain.terminate('test over').catch(() => undefined);
  }
}, 240_000);
