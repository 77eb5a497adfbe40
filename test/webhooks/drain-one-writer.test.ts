import { afterAll, beforeAll, expect, it } from 'vitest';
import { addDrainRefusals } from '../../cli/status-model.js';
import type { InboxView } from '../../cli/status-sections.js';
import { destinationIdentity } from '../../destinations/destination-targets.js';
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
 * A webhook drain writes into a destination only as its one writer (Ledger.claimDestination),
 * as a pass does: registered with `--to` a destination another connection mirrors into, its
 * batches are refused before they write, the notices wait in the inbox, the drain's status
 * says why, and once the other connection's mirror is forgotten they are applied.
 */
const CONNECTION = 'claimed-drain-shop';
const OTHER = 'claimed-drain-other';
let bed: RecordBed;

beforeAll(async () => {
  bed = await openRecordBed({ leads: 3, events: 0 }, 'ebsync-drain-one-writer-');
});

afterAll(() => closeRecordBed(bed));

it('refuses a batch into a destination another connection writes, and keeps its notices', async () => {
  const { ts, temporal } = bed;
  const { taskQueue, destination, secret, receiver, names, drain, activities } =
    await receiverOnBed(bed, CONNECTION);
  const ledger = await bed.deps.ledger();
  const id = destinationIdentity(destination);
  expect(await ledger.claimDestination(id, OTHER)).toEqual([]);
  try {
    ts.sb.admin.patchRecord('lead', 1, { first_name: 'Kept Waiting' });
    const body = hintBody('evt_claimed_1', 'lead', 1);
    const sent = await post(
      receiver.url(CONNECTION),
      body,
      standardHeaders(secret, 'evt_claimed_1', body),
    );
    expect(sent.status).toBe(200);
    // The drain's log lines, as the worker's logger gets them.
    const warnings: string[] = [];
    const level = (keep: boolean) => ({
      fn: (_info: unknown, message: string) => {
        if (keep) warnings.push(message);
      },
    });
    // The SDK's name for the workflow logger's sink a worker may be given (the reserved
    // `__temporal_logger` it stands for cannot be).
    const defaultWorkerLogger = {
      trace: level(false),
      debug: level(false),
      info: level(false),
      warn: level(true),
      error: level(true),
    };
    await temporal.withWorker(
      { taskQueue, activities, sinks: { defaultWorkerLogger } },
      async () => {
        await eventually(
          async () => ((await drain.query(drainStatusQuery)).lastRefusal ?? '').includes(OTHER),
          60_000,
          "the drain's refusal names the other connection",
        );
        expect((await drain.query(drainStatusQuery)).lastRefusal).toContain(
          `already holds the records of connection ${OTHER}, keyed by the service's ids alone, so connection ${CONNECTION}'s would overwrite them; nothing was written`,
        );
        expect(names().get('1')).toBeUndefined();
        // The log says what refused: the destination, not the service (which was never asked).
        expect(warnings).toContain(
          "webhook notices wait: their destination holds another connection's records, so nothing was written",
        );
        expect(warnings).not.toContain(
          'webhook notices wait: the service refused to let them be read',
        );
        // `ebsync status` asks the drain why its notices wait: it said only "is a worker running?".
        const view: InboxView = {
          store: '',
          error: null,
          connections: [
            {
              connectionId: CONNECTION,
              pending: 1,
              oldestPendingAt: Date.now(),
              drainedLastMinute: 0,
              drainedPerSecond: 0,
            },
          ],
        };
        await addDrainRefusals(temporal.client, view);
        expect(view.connections[0]!.lastRefusal).toContain(
          `already holds the records of connection ${OTHER}`,
        );
        expect((await (await bed.deps.inbox()).pending(CONNECTION, 10)).length).toBe(1);

        // The other connection's mirror forgotten: the waiting notice goes through after the
        // drain's wait (30 s after a first refusal).
        await ledger.forgetDestination(id, OTHER);
        await eventually(
          () => names().get('1') === 'Kept Waiting',
          90_000,
          'the notice applied after the other connection was forgotten',
        );
        expect(await (await bed.deps.inbox()).pending(CONNECTION, 10)).toEqual([]);
        expect(await ledger.claimDestination(id, OTHER)).toEqual([CONNECTION]);
      },
    );
  } finally {
    await receiver.close();
    await drain.terminate('test over').catch(() => undefined);
  }
}, 180_000);
