import { afterAll, beforeAll, expect, it } from 'vitest';
import { SalesforceDestination } from '../../destinations/salesforce-destination.js';
import { startSalesforceFake, type SalesforceFake } from '../../sandbox/crm/fakes.js';
import { drainStatusQuery, drainWorkflowId } from '../../workflows/drain-types.js';
import {
  closeRecordBed,
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
 * Webhook notices of leads drained into Salesforce, one of them with no email address: the
 * drain's totals count it as a mirror pass counts it (MirrorCounts.withoutEmail). Before, a
 * drain said only that it was written, and nothing told it apart from a lead with an Email.
 */
const CONNECTION = 'sf-no-email-shop';
let bed: RecordBed;
let fake: SalesforceFake;
let destination: SalesforceDestination;

beforeAll(async () => {
  bed = await openRecordBed({ leads: 5, events: 1 }, 'ebsync-sf-no-email-');
  fake = await startSalesforceFake({ adminToken: 'admin-token-for-tests' });
  destination = new SalesforceDestination({
    loginUrl: fake.baseUrl,
    clientId: fake.clientId,
    clientSecret: fake.clientSecret,
    refreshToken: fake.token,
  });
}, 120_000);

afterAll(async () => {
  await destination?.close();
  await fake?.close();
  await closeRecordBed(bed);
});

it('a lead written without an email address is counted withoutEmail in the drain totals', async () => {
  const { ts, temporal } = bed;
  const taskQueue = temporal.taskQueue();
  const secret = newSecret();
  const deps = { ...bed.deps, destination: () => Promise.resolve(destination) };
  const receiver = await startTestReceiver({
    hooks: new Map([[CONNECTION, { secret, destination: 'salesforce' }]]),
    deps,
    client: temporal.client,
    taskQueue,
  });
  const drain = temporal.client.workflow.getHandle(drainWorkflowId(CONNECTION));
  const notify = async (id: string, lead: number) => {
    const body = hintBody(id, 'lead', lead);
    const sent = await post(receiver.url(CONNECTION), body, standardHeaders(secret, id, body));
    expect(sent.status).toBe(200);
  };
  const totals = async () => (await drain.query(drainStatusQuery)).totals;
  try {
    await temporal.withWorker(
      { taskQueue, activities: webhookActivities(deps, temporal.client, taskQueue) },
      async () => {
        ts.sb.admin.patchRecord('lead', 2, { email: null });
        ts.sb.admin.patchRecord('lead', 4, { email: 'n/a' });
        await notify('evt_no_email_1', 1);
        await notify('evt_no_email_2', 2);
        await notify('evt_no_email_4', 4);
        await eventually(async () => (await totals()).notices === 3, 60_000, 'all applied');
        expect(await totals()).toMatchObject({ written: 3, refused: 0, withoutEmail: 2 });
        const leads = [...fake.state.records.Lead.values()];
        expect(leads.filter((l) => !l.fields.Email)).toHaveLength(2);
      },
    );
  } finally {
    await receiver.close();
    await drain.terminate('test over').catch(() => undefined);
  }
}, 120_000);
