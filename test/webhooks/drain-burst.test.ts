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
  webhookActivities,
  type RecordBed,
} from './deliveries.js';

/**
 * A burst of notices about a few records (each edited many times) is applied with one read per
 * record: a batch that reads a record takes every notice of it already in the inbox, not only
 * those among its oldest EBSYNC_WEBHOOK_BATCH. Before, each batch of the burst read the same
 * records again: 60 notices about 3 leads, 10 a batch, took 6 batches and 18 reads.
 */
const CONNECTION = 'burst-shop';
const LEADS = [1, 2, 3];
const PER_LEAD = 20;
let bed: RecordBed;

beforeAll(async () => {
  bed = await openRecordBed({ leads: 5, events: 1 }, 'ebsync-drain-burst-');
});

afterAll(() => closeRecordBed(bed));

it('reads each record of a burst once, however many batches its notices fill', async () => {
  const { ts, temporal } = bed;
  const { taskQueue, secret, receiver, names, drain } = await receiverOnBed(bed, CONNECTION);
  const deps = { ...bed.deps, batchSize: 10 };
  const activities = webhookActivities(deps, temporal.client, taskQueue);
  try {
    // The burst is in the inbox before any worker drains it.
    for (let round = 1; round <= PER_LEAD; round++) {
      for (const lead of LEADS) {
        ts.sb.admin.patchRecord('lead', lead, { first_name: `Burst ${lead}.${round}` });
        const id = `evt_burst_${lead}_${round}`;
        const body = hintBody(id, 'lead', lead);
        const sent = await post(receiver.url(CONNECTION), body, standardHeaders(secret, id, body));
        expect(sent.status).toBe(200);
      }
    }
    const readsBefore = ts.sb.admin.counters().requests['leads.get']?.['200'] ?? 0;
    await temporal.withWorker({ taskQueue, activities }, async () => {
      await eventually(
        async () =>
          (await drain.query(drainStatusQuery)).totals.notices === LEADS.length * PER_LEAD,
        60_000,
        'the drain applied the burst',
      );
      for (const lead of LEADS) expect(names().get(String(lead))).toBe(`Burst ${lead}.${PER_LEAD}`);
      const { totals } = await drain.query(drainStatusQuery);
      expect(totals.records).toBe(LEADS.length);
      expect(totals.batches).toBe(1);
      const reads = (ts.sb.admin.counters().requests['leads.get']?.['200'] ?? 0) - readsBefore;
      expect(reads).toBe(LEADS.length);
      expect(await (await deps.inbox()).pending(CONNECTION, 10)).toEqual([]);
    });
  } finally {
    await receiver.close();
    await drain.terminate('test over').catch(() => undefined);
  }
}, 120_000);
