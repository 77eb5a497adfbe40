import { WorkflowNotFoundError } from '@temporalio/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Destination } from '../../destinations/destination.js';
import { PipedriveDestination } from '../../destinations/pipedrive-destination.js';
import { setupPipedrive } from '../../destinations/pipedrive-setup.js';
import { SalesforceDestination } from '../../destinations/salesforce-destination.js';
import {
  startPipedriveFake,
  startSalesforceFake,
  type SalesforceFake,
} from '../../sandbox/crm/fakes.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { webhookDrainWorkflow } from '../../workflows/drain.js';
import {
  drainStatusQuery,
  drainWorkflowId,
  emptyDrainTotals,
  type DrainStatus,
  type DrainTotals,
} from '../../workflows/drain-types.js';
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

/** Webhook notices of leads drained into a Salesforce org: what the drain's totals count. */
let bed: RecordBed;
let fake: SalesforceFake;
let destination: SalesforceDestination;

beforeAll(async () => {
  bed = await openRecordBed({ leads: 5, events: 1 }, 'ebsync-sf-drain-');
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

/** What a test does with a connection's receiver and drain running into the org. */
interface Drained {
  deps: RecordBed['deps'];
  /** Sends a signed notice (delivery `id`) that a lead changed. */
  notify: (id: string, lead: number) => Promise<void>;
  totals: () => Promise<DrainTotals>;
  status: () => Promise<DrainStatus>;
}

/** Where a test drains into: the destination and its registration's name for it. */
interface Into {
  destination: Destination;
  name: string;
  /** The drain started with this bound on a pause's wait (else the receiver starts it). */
  maxPauseMs?: number;
}

/** Runs `work` with a receiver for `connection` and a worker draining it into the org. */
async function drainInto(
  connection: string,
  work: (d: Drained) => Promise<void>,
  into: Into = { destination, name: 'salesforce' },
): Promise<void> {
  const { temporal } = bed;
  const taskQueue = temporal.taskQueue();
  const secret = newSecret();
  const deps = { ...bed.deps, destination: () => Promise.resolve(into.destination) };
  const receiver = await startTestReceiver({
    hooks: new Map([[connection, { secret, destination: into.name }]]),
    deps,
    client: temporal.client,
    taskQueue,
  });
  const drain = temporal.client.workflow.getHandle(drainWorkflowId(connection));
  const notify = async (id: string, lead: number) => {
    const body = hintBody(id, 'lead', lead);
    const sent = await post(receiver.url(connection), body, standardHeaders(secret, id, body));
    expect(sent.status).toBe(200);
  };
  const status = () => drain.query(drainStatusQuery);
  // The receiver answers once the notice is in the inbox and starts the drain after: until it
  // has, there is no drain to ask, and nothing applied.
  const totals = async (): Promise<DrainTotals> =>
    status().then(
      (answer) => answer.totals,
      (error: unknown) => {
        if (error instanceof WorkflowNotFoundError) return emptyDrainTotals();
        throw error;
      },
    );
  if (into.maxPauseMs !== undefined) {
    // Started before the first notice: the receiver's wake-up then signals this run.
    await temporal.client.workflow.start(webhookDrainWorkflow, {
      workflowId: drainWorkflowId(connection),
      taskQueue,
      args: [{ connectionId: connection, destination: into.name, maxPauseMs: into.maxPauseMs }],
    });
  }
  try {
    await temporal.withWorker(
      { taskQueue, activities: webhookActivities(deps, temporal.client, taskQueue) },
      () => work({ deps, notify, totals, status }),
    );
  } finally {
    await receiver.close();
    await drain.terminate('test over').catch(() => undefined);
    // The next test's connection writes the same org, which has one writer: this one's mirror
    // is forgotten, as `ebsync sync --forget` would.
    await (await deps.ledger()).forgetDestination(into.destination.describe().id, connection);
  }
}

/**
 * A lead deleted at the service whose org refuses to delete its Lead (a before-delete
 * trigger): the drain counts it refused, logs why, and leaves it live in the ledger for the
 * next full pass. Before, the item's `success: false` was dropped unsaid and the ledger marked
 * it deleted for good.
 */
it('a deletion Salesforce refuses is counted refused and the ledger keeps the record live', async () => {
  const LEAD = 3;
  const leadOf = () =>
    [...fake.state.records.Lead.values()].find((l) => l.fields.EBS_Lead_Id__c === String(LEAD));
  await drainInto('sf-delete-shop', async ({ deps, notify, totals }) => {
    await notify('evt_sf_edit', LEAD);
    await eventually(() => leadOf() !== undefined, 60_000, 'the Lead written');
    fake.state.deleteRefused.add(leadOf()!.Id);

    bed.ts.sb.admin.deleteRecord('lead', LEAD);
    await notify('evt_sf_delete', LEAD);
    await eventually(async () => (await totals()).notices === 2, 60_000, 'both applied');
    expect(await totals()).toMatchObject({ deleted: 0, refused: 1 });
    expect(fake.state.counters.itemErrors).toEqual({ FIELD_CUSTOM_VALIDATION_EXCEPTION: 1 });
    expect(leadOf()?.IsDeleted).toBe(false);
    // Still live in the ledger: the next full pass's sweep tries the deletion again.
    const ledger = await deps.ledger();
    const [entry] = await ledger.get(
      { connectionId: 'sf-delete-shop', destination: destination.describe().id, resource: 'leads' },
      [String(LEAD)],
    );
    expect(entry?.deletedAt).toBeNull();
  });
}, 120_000);

/**
 * Leads with no email address (none, and text that is none) are counted in the drain's totals
 * as a mirror pass counts them (MirrorCounts.withoutEmail). Before, a drain said only that
 * they were written, and nothing told them from leads with an Email.
 */
it('a lead written without an email address is counted withoutEmail in the drain totals', async () => {
  await drainInto('sf-no-email-shop', async ({ notify, totals }) => {
    const before = fake.state.records.Lead.size;
    bed.ts.sb.admin.patchRecord('lead', 2, { email: null });
    bed.ts.sb.admin.patchRecord('lead', 4, { email: 'n/a' });
    await notify('evt_no_email_1', 1);
    await notify('evt_no_email_2', 2);
    await notify('evt_no_email_4', 4);
    await eventually(async () => (await totals()).notices === 3, 60_000, 'all applied');
    expect(await totals()).toMatchObject({ written: 3, refused: 0, withoutEmail: 2 });
    expect(fake.state.records.Lead.size - before).toBe(3);
    expect([...fake.state.records.Lead.values()].filter((l) => !l.fields.Email)).toHaveLength(2);
  });
}, 120_000);

/**
 * Pipedrive's daily POST/PUT allowance spent in the middle of a batch: the deals made before
 * the pause are counted written in the drain's totals, and the batch tried again after the
 * reset finds them up to date (no PATCH, no second count). Before, a paused batch counted
 * nothing, and the batch tried again looked each of them up and wrote it again.
 *
 * Meanwhile the drain waits for the reset, and its status says until when: not one call to
 * Pipedrive. Before, the batch was tried again after 30 s, doubling to 5 minutes, each try a
 * call against the spent allowance. The reset here is the fake's next day, hours away: the
 * drain's wait is bounded at 50 s instead of the hour, and the fake's clock is moved past the
 * reset before that.
 */
it('a batch Pipedrive pauses counts what it wrote, once, waits for the reset without a call, and the batch after writes the rest', async () => {
  const pd = await startPipedriveFake({ adminToken: 'admin-token-for-tests' });
  const into = new PipedriveDestination({ baseUrl: pd.baseUrl, token: pd.token });
  try {
    // Leads the tests above left alone or gave back an email (lead 3 they deleted): four new
    // leads cost four persons and four deals. Setup's two deal fields, then six writes: some
    // deals are left unmade.
    const leads = [1, 2, 4, 5];
    for (const lead of leads) {
      bed.ts.sb.admin.patchRecord('lead', lead, { email: `pd-paused-${lead}@example.com` });
    }
    pd.state.limits = { perWindow: 5_000, dailyWrites: 2 + 6 };
    await setupPipedrive({ baseUrl: pd.baseUrl, token: pd.token });
    const deals = () => pd.state.counters.created.deals;
    await drainInto(
      'pd-paused-shop',
      async ({ notify, totals, status }) => {
        await Promise.all(leads.map((lead) => notify(`evt_pd_paused_${lead}`, lead)));
        await eventually(
          () => (pd.state.counters.rateLimited.daily ?? 0) > 0,
          60_000,
          'the allowance spent',
        );
        const pausedAt = Date.now();
        await eventually(async () => (await totals()).written === deals(), 30_000, 'counted');
        const made = deals();
        expect(made).toBeGreaterThan(0);
        expect(made).toBeLessThan(4);
        // Past the 30 s after which the batch used to be tried again, and short of the wait.
        const calls = () => Object.values(pd.state.counters.requests).reduce((a, b) => a + b, 0);
        const callsPaused = calls();
        await sleep(Math.max(0, pausedAt + 38_000 - Date.now()));
        expect(calls()).toBe(callsPaused);
        const paused = await status();
        expect(Date.parse(paused.pausedUntil ?? '')).toBeGreaterThan(Date.now());
        expect(paused.lastRefusal).toContain(`the next batch waits until ${paused.pausedUntil}`);
        expect(paused.lastRefusal).toContain("Pipedrive's daily POST/PUT allowance is spent");
        // The next UTC day, with room for the rest.
        pd.state.clockOffsetMs = 86_400_000;
        pd.state.limits.dailyWrites = 100_000;
        const writesBefore = pd.state.counters.writes;
        await eventually(async () => (await totals()).notices === 4, 120_000, 'all applied');
        expect(await totals()).toMatchObject({ written: 4, refused: 0 });
        expect(deals()).toBe(4);
        // Only the leads not written were: a person and a deal each (no PATCH of a deal made).
        expect(pd.state.counters.writes - writesBefore).toBe(2 * (4 - made));
        const resumed = await status();
        expect(resumed.pausedUntil).toBeUndefined();
        // Batches apply again: the last refusal says the pause is over, not that the next
        // batch waits (it said so until the drain continued as new).
        expect(resumed.lastRefusal).not.toContain('the next batch waits until');
        expect(resumed.lastRefusal).toMatch(
          /^its destination paused writes \(Pipedrive's daily .*\); batches apply again since /,
        );
      },
      { destination: into, name: 'pipedrive', maxPauseMs: 50_000 },
    );
  } finally {
    await into.close();
    await pd.close();
  }
}, 240_000);
