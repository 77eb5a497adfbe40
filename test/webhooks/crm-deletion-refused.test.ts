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
 * A webhook notice of a lead deleted at the service, drained into Salesforce, whose org
 * refuses to delete its Lead (a before-delete trigger): the drain counts it refused, logs
 * why, and leaves it live in the ledger for the next full pass. Before, the item's
 * `success: false` was dropped unsaid and the ledger marked it deleted for good.
 */
const CONNECTION = 'sf-delete-shop';
const LEAD = 3;
let bed: RecordBed;
let fake: SalesforceFake;
let destination: SalesforceDestination;

beforeAll(async () => {
  bed = await openRecordBed({ leads: 5, events: 1 }, 'ebsync-sf-delete-');
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

it('a deletion Salesforce refuses is counted refused and the ledger keeps the record live', async () => {
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
  const notify = async (id: string) => {
    const body = hintBody(id, 'lead', LEAD);
    const sent = await post(receiver.url(CONNECTION), body, standardHeaders(secret, id, body));
    expect(sent.status).toBe(200);
  };
  const totals = async () => (await drain.query(drainStatusQuery)).totals;
  const leadOf = () =>
    [...fake.state.records.Lead.values()].find((l) => l.fields.EBS_Lead_Id__c === String(LEAD));
  try {
    await temporal.withWorker(
      { taskQueue, activities: webhookActivities(deps, temporal.client, taskQueue) },
      async () => {
        await notify('evt_sf_edit');
        await eventually(() => leadOf() !== undefined, 60_000, 'the Lead written');
        fake.state.deleteRefused.add(leadOf()!.Id);

        ts.sb.admin.deleteRecord('lead', LEAD);
        await notify('evt_sf_delete');
        await eventually(async () => (await totals()).notices === 2, 60_000, 'both applied');
        expect(await totals()).toMatchObject({ deleted: 0, refused: 1 });
        expect(fake.state.counters.itemErrors).toEqual({ FIELD_CUSTOM_VALIDATION_EXCEPTION: 1 });
        expect(leadOf()?.IsDeleted).toBe(false);
        // Still live in the ledger: the next full pass's sweep tries the deletion again.
        const ledger = await deps.ledger();
        const [entry] = await ledger.get(
          {
            connectionId: CONNECTION,
            destination: destination.describe().id,
            resource: 'leads',
          },
          [String(LEAD)],
        );
        expect(entry?.deletedAt).toBeNull();
      },
    );
  } finally {
    await receiver.close();
    await drain.terminate('test over').catch(() => undefined);
  }
}, 120_000);
