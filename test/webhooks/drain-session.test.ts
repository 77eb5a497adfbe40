import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { drainStatusQuery, drainWorkflowId } from '../../workflows/drain-types.js';
import {
  closeRecordBed,
  eventually,
  hintBody,
  newSecret,
  openRecordBed,
  post,
  receiverOnBed,
  standardHeaders,
  startTestReceiver,
  webhookActivities,
  type RecordBed,
  type TestReceiver,
} from './deliveries.js';

/**
 * A steady stream of deliveries is drained by one activity taking batch after batch (a drain
 * session), and the receiver sends no wake-ups while the session watches the inbox; once it
 * ends, the next delivery is woken for and applied as before.
 */
const CONNECTION = 'session-shop';
const STREAM = 40;
const EVERY_MS = 75;
let bed: RecordBed;

beforeAll(async () => {
  bed = await openRecordBed({ leads: 63, events: 1 }, 'ebsync-drain-session-');
});

afterAll(() => closeRecordBed(bed));

/** A staff edit of a lead's first name at the sandbox, then its delivery, answered 200. */
async function editAndDeliver(
  to: { receiver: TestReceiver; connection: string; secret: string },
  lead: number,
  name: string,
): Promise<void> {
  bed.ts.sb.admin.patchRecord('lead', lead, { first_name: name });
  const id = `evt_${to.connection}_${lead}_${name.replace(/\W/g, '')}`;
  const body = hintBody(id, 'lead', lead);
  const sent = await post(
    to.receiver.url(to.connection),
    body,
    standardHeaders(to.secret, id, body),
  );
  expect(sent.status).toBe(200);
}

it('takes a stream of deliveries in one session of many batches, with no wake-up per batch', async () => {
  const { temporal, deps } = bed;
  const { taskQueue, secret, receiver, names, drain } = await receiverOnBed(bed, CONNECTION);
  // Asking for the connection's client checks the connection with a status query: once per
  // activity, not once per batch.
  let clientsAsked = 0;
  const activities = webhookActivities(
    {
      ...deps,
      clientFor: (connectionId) => {
        clientsAsked += 1;
        return deps.clientFor(connectionId);
      },
    },
    temporal.client,
    taskQueue,
  );
  const deliver = (lead: number, name: string) =>
    editAndDeliver({ receiver, connection: CONNECTION, secret }, lead, name);
  try {
    await temporal.withWorker({ taskQueue, activities }, async () => {
      for (let lead = 1; lead <= STREAM; lead++) {
        await deliver(lead, `Streamed ${lead}`);
        await new Promise((r) => setTimeout(r, EVERY_MS));
      }
      await eventually(
        () => {
          const now = names();
          return Array.from({ length: STREAM }, (_, i) => i + 1).every(
            (lead) => now.get(String(lead)) === `Streamed ${lead}`,
          );
        },
        60_000,
        'every streamed edit in the destination',
      );
      // The session ends after a quiet spell and reports what it applied.
      await eventually(
        async () => (await drain.query(drainStatusQuery)).totals.notices === STREAM,
        30_000,
        'the drain counted the stream',
      );
      const { totals } = await drain.query(drainStatusQuery);
      const history = await drain.fetchHistory();
      const events = history.events ?? [];
      const scheduled = events.filter((e) => e.activityTaskScheduledEventAttributes).length;
      const wakeUps = events.filter((e) => e.workflowExecutionSignaledEventAttributes).length;
      // Three seconds of deliveries: a wake-up every 400 ms and an activity per batch
      // before; now the session's batches, with a wake-up or two before its watch holds.
      expect(totals.batches).toBeGreaterThanOrEqual(5);
      expect(scheduled).toBeLessThanOrEqual(4);
      expect(wakeUps).toBeLessThanOrEqual(4);
      expect(totals.batches).toBeGreaterThan(scheduled);
      expect(clientsAsked).toBeGreaterThan(0);
      expect(clientsAsked).toBeLessThanOrEqual(scheduled);
      expect(await (await deps.inbox()).watching(CONNECTION)).toBeNull();

      // The session is over: a delivery now is woken for, and applied.
      await deliver(STREAM + 1, 'After the session');
      await eventually(
        () => names().get(String(STREAM + 1)) === 'After the session',
        30_000,
        'the delivery after the session in the destination',
      );
      expect(await (await deps.inbox()).pending(CONNECTION, 10)).toEqual([]);
    });
  } finally {
    await receiver.close();
    await drain.terminate('test over').catch(() => undefined);
  }
}, 180_000);

it('holds no more sessions at once than its slots: past them a drain takes a batch per activity', async () => {
  const { temporal, dir, deps } = bed;
  const taskQueue = temporal.taskQueue();
  const connections = ['slots-a', 'slots-b'];
  const secret = newSecret();
  const receiver = await startTestReceiver({
    // A file each: a destination has one writer.
    hooks: new Map(
      connections.map((c) => [c, { secret, destination: `sqlite:${join(dir, `slots-${c}.db`)}` }]),
    ),
    deps,
    client: temporal.client,
    taskQueue,
  });
  const drains = connections.map((c) => temporal.client.workflow.getHandle(drainWorkflowId(c)));
  const activities = webhookActivities(
    { ...deps, session: { slots: 1 } },
    temporal.client,
    taskQueue,
  );
  try {
    await temporal.withWorker({ taskQueue, activities }, async () => {
      for (let i = 0; i < 30; i++) {
        const connection = connections[i % 2]!;
        const id = `slot_${i}`;
        const body = hintBody(id, 'lead', 1 + (i % 20));
        const sent = await post(receiver.url(connection), body, standardHeaders(secret, id, body));
        expect(sent.status).toBe(200);
        await new Promise((r) => setTimeout(r, 75));
      }
      await eventually(
        async () => {
          for (const drain of drains) {
            if ((await drain.query(drainStatusQuery)).totals.notices !== 15) return false;
          }
          return true;
        },
        60_000,
        'both drains counted their notices',
      );
      const shapes = await Promise.all(
        drains.map(async (drain) => {
          const { totals } = await drain.query(drainStatusQuery);
          const events = (await drain.fetchHistory()).events ?? [];
          const scheduled = events.filter((e) => e.activityTaskScheduledEventAttributes).length;
          return { batches: totals.batches, scheduled };
        }),
      );
      // One drain had the worker's one session (several batches an activity); the other took
      // a batch per activity, woken for each.
      const inSession = shapes.filter((s) => s.batches > s.scheduled);
      const perBatch = shapes.filter((s) => s.batches <= s.scheduled);
      expect(inSession).toHaveLength(1);
      expect(perBatch).toHaveLength(1);
      expect(perBatch[0]!.batches).toBeGreaterThanOrEqual(3);
    });
  } finally {
    await receiver.close();
    for (const drain of drains) await drain.terminate('test over').catch(() => undefined);
  }
}, 180_000);

it('counts what a session applied before the service failed, and applies the rest once it answers', async () => {
  const { ts, temporal } = bed;
  const connection = 'session-outage';
  const { taskQueue, secret, receiver, names, drain, activities } = await receiverOnBed(
    bed,
    connection,
  );
  const deliver = (lead: number, name: string) =>
    editAndDeliver({ receiver, connection, secret }, lead, name);
  try {
    await temporal.withWorker({ taskQueue, activities }, async () => {
      for (let lead = 41; lead <= 50; lead++) await deliver(lead, `Before ${lead}`);
      await eventually(
        () => names().get('50') === 'Before 50',
        30_000,
        'the first deliveries applied',
      );
      // The session is still looking at the inbox (it ends after 2 s of quiet).
      const faultsBefore = ts.sb.admin.counters().faults_injected;
      ts.sb.admin.setFaults({ errorRate: 1, errorStatuses: [503] });
      for (let lead = 51; lead <= 55; lead++) await deliver(lead, `During ${lead}`);
      await eventually(
        () => ts.sb.admin.counters().faults_injected >= faultsBefore + 3,
        60_000,
        'reads tried and refused',
      );
      ts.sb.admin.clearFaults();
      await eventually(
        () => names().get('55') === 'During 55',
        90_000,
        'the rest applied once the service answers',
      );
      // Every notice counted once: the session's batches before the failure too.
      await eventually(
        async () => (await drain.query(drainStatusQuery)).totals.notices === 15,
        30_000,
        'the drain counted all 15 notices',
      );
    });
  } finally {
    await receiver.close();
    await drain.terminate('test over').catch(() => undefined);
  }
}, 240_000);

it('counts the notices a batch applied before a rate limit stopped its other reads', async () => {
  const { ts, temporal } = bed;
  const connection = 'session-partial';
  const { taskQueue, secret, receiver, names, drain, activities } = await receiverOnBed(
    bed,
    connection,
  );
  const leads = [56, 57, 58, 59, 60];
  try {
    // Stored before a worker runs, so the first batch holds all five and reads four at once:
    // two are let through in the sandbox's second, the others refused with a 429.
    for (const lead of leads) {
      await editAndDeliver({ receiver, connection, secret }, lead, `Limited ${lead}`);
    }
    ts.sb.admin.setRateLimit({ perSecond: 2, mode: '429' });
    const limitedBefore = ts.sb.admin.counters().rate_limited;
    await temporal.withWorker({ taskQueue, activities }, async () => {
      await eventually(
        () => leads.every((lead) => names().get(String(lead)) === `Limited ${lead}`),
        60_000,
        'every edit applied under the rate limit',
      );
      expect(ts.sb.admin.counters().rate_limited).toBeGreaterThan(limitedBefore);
      // The batches cut short by a 429 applied some notices: each is counted, once.
      await eventually(
        async () => (await drain.query(drainStatusQuery)).totals.notices === leads.length,
        30_000,
        `the drain counted ${leads.length} notices`,
      );
    });
  } finally {
    ts.sb.admin.setRateLimit({ perSecond: 0 });
    await receiver.close();
    await drain.terminate('test over').catch(() => undefined);
  }
}, 240_000);

it('a record answered out of spec holds back only its own notices: the others go on, and it follows once it reads', async () => {
  const { ts, temporal, deps } = bed;
  const connection = 'session-unreadable';
  const { taskQueue, secret, receiver, names, drain, activities } = await receiverOnBed(
    bed,
    connection,
  );
  const broken = 61;
  const setFirstName = (lead: number, value: unknown): void => {
    const stored = ts.sb.ctx.records.get('lead', ts.sb.businessId, lead);
    expect(stored).toBeDefined();
    // Straight into the sandbox's store: no admin edit may serve a lead out of spec.
    ts.sb.ctx.records.update(stored!, { first_name: value });
  };
  try {
    await temporal.withWorker({ taskQueue, activities }, async () => {
      setFirstName(broken, 12_345);
      const id = `evt_${connection}_${broken}`;
      const body = hintBody(id, 'lead', broken);
      expect(
        (await post(receiver.url(connection), body, standardHeaders(secret, id, body))).status,
      ).toBe(200);
      await eventually(
        // The receiver starts the drain after its 200: until then there is none to ask.
        () =>
          drain.query(drainStatusQuery).then(
            (status) => status.lastRefusal !== null,
            () => false,
          ),
        60_000,
        'the drain met the lead it cannot read',
      );
      // Before: the next deliveries waited 30 s behind it, every time it was tried again.
      for (const lead of [62, 63])
        await editAndDeliver({ receiver, connection, secret }, lead, `After ${lead}`);
      await eventually(
        () => [62, 63].every((lead) => names().get(String(lead)) === `After ${lead}`),
        20_000,
        'the other deliveries applied, not held behind the unreadable one',
      );
      const pending = await (await deps.inbox()).pending(connection, 10);
      expect(pending.map((notice) => notice.recordId)).toEqual([String(broken)]);

      setFirstName(broken, 'Mended');
      await eventually(
        () => names().get(String(broken)) === 'Mended',
        90_000,
        'the held notice applied once its lead reads',
      );
      await eventually(
        async () => (await drain.query(drainStatusQuery)).totals.notices === 3,
        30_000,
        'the drain counted all three notices',
      );
    });
  } finally {
    await receiver.close();
    await drain.terminate('test over').catch(() => undefined);
  }
}, 240_000);
