import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { inspect } from 'node:util';
import type { ApplicationFailure } from '@temporalio/common';
import { beforeAll, describe, expect, it } from 'vitest';
import { toActivityFailure } from '../../activities/failures.js';
import type { MirrorDeps } from '../../activities/mirror/pass.js';
import {
  DestinationAuthError,
  DestinationPausedError,
  DestinationSchemaError,
  DestinationUnavailableError,
} from '../../destinations/errors.js';
import { openDestination } from '../../destinations/open-destination.js';
import { databaseOpeners } from '../../store/database-openers.js';
import { SalesforceDestination } from '../../destinations/salesforce-destination.js';
import { sqliteRefreshTokenStore } from '../../store/crm-refresh-tokens.js';
import { startSalesforceFake, type SalesforceFake } from '../../sandbox/crm/fakes.js';
import { SALESFORCE_DAY_MS, type SObjectRecord } from '../../sandbox/crm/salesforce/state.js';
import { EncryptionCodec } from '../../worker/codec.js';
import type { MirrorSummary } from '../../workflows/mirror-types.js';
import { exitCodeOf, summaryText } from '../../cli/mirror-summary.js';
import { sourceIds } from '../mirror/source-truth.js';
import { EVENTS, LEADS, useCrmMirror } from './crm-mirror.js';

const settingsOf = (fake: SalesforceFake) => ({
  baseUrl: fake.baseUrl,
  clientId: fake.clientId,
  clientSecret: fake.clientSecret,
  refreshToken: fake.token,
});

const crm = useCrmMirror('salesforce', startSalesforceFake, (fake) => ({
  salesforce: settingsOf(fake),
}));

const destinationFor = (fake: SalesforceFake): SalesforceDestination =>
  new SalesforceDestination({
    loginUrl: fake.baseUrl,
    clientId: fake.clientId,
    clientSecret: fake.clientSecret,
    refreshToken: fake.token,
  });

/** What getting a session through the login URL `loginUrl` with the fake's app throws. */
const sessionErrorAt = (fake: SalesforceFake, loginUrl: string): Promise<unknown> =>
  new SalesforceDestination({
    loginUrl,
    clientId: fake.clientId,
    clientSecret: fake.clientSecret,
    refreshToken: fake.token,
  })
    .ensureSchema([])
    .catch((e: unknown) => e);

const keyed = (fake: SalesforceFake, type: 'Lead' | 'Opportunity', field: string) =>
  fake.state.live(type).filter((r) => typeof r.fields[field] === 'string');
const keysOf = (records: SObjectRecord[], field: string) =>
  new Set(records.map((r) => r.fields[field]));

/** A session for the fake's data API, as a connected app gets one. */
async function session(fake: SalesforceFake): Promise<string> {
  const answer = await fetch(`${fake.baseUrl}/services/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'refresh_token',
      client_id: fake.clientId,
      client_secret: fake.clientSecret,
      refresh_token: fake.token,
    }),
  });
  expect(answer.status).toBe(200);
  const body = (await answer.json()) as Record<string, string>;
  expect(body).toMatchObject({ instance_url: fake.baseUrl, token_type: 'Bearer' });
  expect(body.issued_at).toMatch(/^\d+$/);
  expect(body.signature).toMatch(/^[A-Za-z0-9+/]+=*$/);
  return body.access_token ?? '';
}

const lead = (id: string, email: string, lastName = 'Lovelace') => ({
  attributes: { type: 'Lead' },
  EBS_Lead_Id__c: id,
  LastName: lastName,
  Company: 'Analytical',
  Email: email,
});

describe('Salesforce fake', () => {
  let fake: SalesforceFake;
  let token: string;
  const call = (method: string, path: string, body?: unknown, bearer = token) =>
    fetch(`${fake.baseUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${bearer}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const upsertPath = '/services/data/v62.0/composite/sobjects/Lead/EBS_Lead_Id__c';

  beforeAll(async () => {
    fake = await crm.newFake();
    token = await session(fake);
  });

  it('refuses a wrong refresh token at the token endpoint, and a wrong session with 401', async () => {
    const refused = await fetch(`${fake.baseUrl}/services/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        client_id: fake.clientId,
        refresh_token: 'not-the-token',
      }),
    });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: 'invalid_grant' });
    const stranger = await call(
      'GET',
      '/services/data/v62.0/sobjects/Lead/describe',
      undefined,
      'x',
    );
    expect(stranger.status).toBe(401);
    expect(await stranger.json()).toEqual([
      { message: 'Session expired or invalid', errorCode: 'INVALID_SESSION_ID', fields: [] },
    ]);
  });

  it('serves v62.0 and newer only, with Sforce-Limit-Info on every answer', async () => {
    const old = await call('GET', '/services/data/v61.0/sobjects/Lead/describe');
    expect(old.status).toBe(404);
    expect(((await old.json()) as { errorCode: string }[])[0]?.errorCode).toBe('NOT_FOUND');
    const now = await call('GET', '/services/data/v62.0/sobjects/Lead/describe');
    expect(now.status).toBe(200);
    expect(now.headers.get('sforce-limit-info')).toMatch(/^api-usage=\d+\/15000$/);
    const described = (await now.json()) as { fields: { name: string; externalId: boolean }[] };
    expect(described.fields.find((f) => f.name === 'EBS_Lead_Id__c')?.externalId).toBe(true);
  });

  it('upserts up to 200 records in order; 201 is a 400, and so is a malformed body', async () => {
    const records = Array.from({ length: 200 }, (_, i) => lead(`f${i}`, `f${i}@example.com`));
    const made = await call('PATCH', upsertPath, { records });
    expect(made.status).toBe(200);
    const results = (await made.json()) as { id: string; success: boolean; created: boolean }[];
    expect(results).toHaveLength(200);
    expect(results.every((r) => r.success && r.created && r.id.startsWith('00Q'))).toBe(true);
    const again = (await (await call('PATCH', upsertPath, { records })).json()) as typeof results;
    expect(again.map((r) => r.id)).toEqual(results.map((r) => r.id));
    expect(again.every((r) => r.success && !r.created)).toBe(true);

    const tooMany = await call('PATCH', upsertPath, {
      records: [...records, lead('f200', 'f200@example.com')],
    });
    expect(tooMany.status).toBe(400);
    expect(((await tooMany.json()) as { errorCode: string }[])[0]?.errorCode).toBe(
      'EXCEEDED_ID_LIMIT',
    );
    const malformed = await call('PATCH', upsertPath, { rows: [] });
    expect(malformed.status).toBe(400);
    expect((await malformed.json()) as unknown[]).toEqual([
      expect.objectContaining({ errorCode: expect.any(String), message: expect.any(String) }),
    ]);
  });

  it('allOrNone rolls every record back when one fails; without it the rest are written', async () => {
    const bad = { attributes: { type: 'Lead' }, EBS_Lead_Id__c: 'g2', Company: 'No last name' };
    const all = await call('PATCH', upsertPath, {
      allOrNone: true,
      records: [lead('g1', 'g1@example.com'), bad],
    });
    // An item's error names its code statusCode, as Salesforce's collection answers do.
    const allResults = (await all.json()) as {
      success: boolean;
      errors: { statusCode: string }[];
    }[];
    expect(allResults.map((r) => r.errors[0]?.statusCode)).toEqual([
      'ALL_OR_NONE_OPERATION_ROLLED_BACK',
      'REQUIRED_FIELD_MISSING',
    ]);
    expect(fake.state.byField('Lead', 'EBS_Lead_Id__c', 'g1')).toHaveLength(0);
    const some = await call('PATCH', upsertPath, { records: [lead('g1', 'g1@example.com'), bad] });
    const someResults = (await some.json()) as { success: boolean }[];
    expect(someResults.map((r) => r.success)).toEqual([true, false]);
    expect(fake.state.byField('Lead', 'EBS_Lead_Id__c', 'g1')).toHaveLength(1);
  });

  it('an external id held by several records: the item fails, and a single upsert answers 300', async () => {
    fake.state.insert('Lead', { EBS_Lead_Id__c: 'twice', LastName: 'A', Company: 'A' });
    fake.state.insert('Lead', { EBS_Lead_Id__c: 'twice', LastName: 'B', Company: 'B' });
    const batch = await call('PATCH', upsertPath, { records: [lead('twice', 'x@example.com')] });
    const [result] = (await batch.json()) as {
      success: boolean;
      errors: { statusCode: string }[];
    }[];
    expect(result?.success).toBe(false);
    expect(result?.errors[0]?.statusCode).toBe('DUPLICATE_EXTERNAL_ID');
    const single = await call('PATCH', '/services/data/v62.0/sobjects/Lead/EBS_Lead_Id__c/twice', {
      LastName: 'C',
    });
    expect(single.status).toBe(300);
    const urls = (await single.json()) as string[];
    expect(urls).toHaveLength(2);
    for (const url of urls) expect(url).toMatch(/^\/services\/data\/v62\.0\/sobjects\/Lead\/00Q/);
    const made = await call('PATCH', '/services/data/v62.0/sobjects/Lead/EBS_Lead_Id__c/once', {
      LastName: 'D',
      Company: 'D',
    });
    expect(made.status).toBe(201);
    expect(await made.json()).toMatchObject({ success: true, created: true });
  });

  it('answers SOQL by pages with a parent lookup, leaves the Recycle Bin out, and refuses what it cannot parse', async () => {
    const opportunity = fake.state.insert('Opportunity', { Name: 'O' });
    const ada = fake.state.insert('Contact', { LastName: 'A', EBS_Email__c: 'ada@example.com' });
    const gone = fake.state.insert('Contact', { LastName: 'G', EBS_Email__c: 'g@example.com' });
    for (const contact of [ada, gone, ada]) {
      fake.state.insert('OpportunityContactRole', {
        OpportunityId: opportunity.Id,
        ContactId: contact.Id,
        IsPrimary: contact === gone,
      });
    }
    const binned = fake.state.live('OpportunityContactRole').at(-1);
    if (binned) binned.IsDeleted = true;
    fake.state.queryBatchSize = 1;
    const query = (q: string) =>
      call('GET', `/services/data/v62.0/query?${new URLSearchParams({ q }).toString()}`);
    const first = await query(
      `SELECT OpportunityId, IsPrimary, Contact.EBS_Email__c FROM OpportunityContactRole WHERE OpportunityId IN ('${opportunity.Id}', '006none')`,
    );
    expect(first.status).toBe(200);
    const page = (await first.json()) as { nextRecordsUrl: string };
    expect(page).toMatchObject({
      totalSize: 2,
      done: false,
      records: [
        {
          attributes: { type: 'OpportunityContactRole' },
          OpportunityId: opportunity.Id,
          IsPrimary: false,
          Contact: { attributes: { type: 'Contact' }, EBS_Email__c: 'ada@example.com' },
        },
      ],
    });
    expect(page.nextRecordsUrl).toMatch(/^\/services\/data\/v62\.0\/query\/01g\w+-1$/);
    const second = await call('GET', page.nextRecordsUrl);
    expect(await second.json()).toMatchObject({
      totalSize: 2,
      done: true,
      records: [{ IsPrimary: true, Contact: { EBS_Email__c: 'g@example.com' } }],
    });
    // A locator serves once.
    expect((await call('GET', page.nextRecordsUrl)).status).toBe(400);
    fake.state.queryBatchSize = 2000;

    const unknown = await query('SELECT Nope FROM OpportunityContactRole');
    expect(unknown.status).toBe(400);
    expect(await unknown.json()).toMatchObject([{ errorCode: 'INVALID_FIELD' }]);
    const malformed = await query('SELECT Id FROM Contact ORDER BY Id');
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject([{ errorCode: 'MALFORMED_QUERY' }]);
  });
});

describe('mirror into Salesforce (2,000 leads, 300 events)', () => {
  let fake: SalesforceFake;
  let deps: MirrorDeps;
  let first: MirrorSummary;

  beforeAll(async () => {
    fake = await crm.newFake();
    fake.state.limits.dailyApiRequests = 100_000;
    deps = crm.depsFor(fake);
    first = await crm.runPass(deps, { subjects: ['leads', 'events'], mode: 'full' });
  }, 600_000);

  it('upserts a Lead per lead and an Opportunity per event, by their external ids, in batches of 200', () => {
    expect(first.phase).toBe('done');
    const leads = keyed(fake, 'Lead', 'EBS_Lead_Id__c');
    expect(leads).toHaveLength(LEADS);
    expect(keysOf(leads, 'EBS_Lead_Id__c')).toEqual(sourceIds(crm.sb, 'lead'));
    const opportunities = keyed(fake, 'Opportunity', 'EBS_Event_Id__c');
    expect(opportunities).toHaveLength(EVENTS);
    expect(keysOf(opportunities, 'EBS_Event_Id__c')).toEqual(sourceIds(crm.sb, 'event'));
    // Required fields are always there, as Salesforce refuses records without them.
    for (const l of leads) expect(l.fields.LastName && l.fields.Company).toBeTruthy();
    const upserts =
      fake.state.counters.requests[
        'PATCH /services/data/:version/composite/sobjects/:sobject/:field'
      ];
    // Leads: at least 10 requests of 200; never one request per record.
    expect(upserts).toBeLessThan((LEADS + EVENTS) / 20);
  });

  it('links each Opportunity to a Contact per customer email by an OpportunityContactRole', () => {
    const roles = fake.state.live('OpportunityContactRole');
    expect(roles.length).toBeGreaterThan(0);
    const contacts = new Map(fake.state.live('Contact').map((c) => [c.Id, c]));
    const opportunities = new Set(fake.state.live('Opportunity').map((o) => o.Id));
    for (const role of roles) {
      expect(opportunities.has(role.fields.OpportunityId as string)).toBe(true);
      expect(contacts.get(role.fields.ContactId as string)?.fields.EBS_Email__c).toBeTruthy();
    }
    // One primary contact per linked Opportunity.
    const primaries = roles.filter((r) => r.fields.IsPrimary === true);
    expect(new Set(primaries.map((r) => r.fields.OpportunityId)).size).toBe(primaries.length);
  });

  it('sets StageName from the event status through the default mapping', () => {
    const stageOf: Record<string, string> = {
      proposal: 'Proposal/Price Quote',
      confirmed: 'Closed Won',
      completed: 'Closed Won',
      canceled: 'Closed Lost',
    };
    const statuses = crm.eventStageKeys();
    // Canceled and completed are booleans of the event, not status values.
    expect([...statuses.values()]).toContain('canceled');
    const opportunities = keyed(fake, 'Opportunity', 'EBS_Event_Id__c');
    expect(new Set(opportunities.map((o) => o.fields.StageName)).size).toBeGreaterThan(1);
    for (const o of opportunities) {
      const status = statuses.get(o.fields.EBS_Event_Id__c as string) ?? '';
      expect(o.fields.StageName).toBe(stageOf[status] ?? 'Prospecting');
    }
  });

  it('writes nothing on a second pass; one edited lead updates one Salesforce record', async () => {
    const before = structuredClone(fake.state.counters);
    const again = await crm.runPass(deps, { subjects: ['leads', 'events'], mode: 'full' });
    expect(again.phase).toBe('done');
    expect(again.counts.written).toBe(0);
    expect(fake.state.counters.writes).toBe(before.writes);

    const [leadId] = [...sourceIds(crm.sb, 'lead')].slice(42, 43);
    crm.sb.admin.patchRecord('lead', Number(leadId), { first_name: 'Edited' });
    const edited = await crm.runPass(deps, { subjects: ['leads'], mode: 'incremental' });
    expect(edited.phase).toBe('done');
    expect(fake.state.counters.writes).toBe(before.writes + 1);
    expect(fake.state.counters.updated.Lead).toBe(before.updated.Lead + 1);
    expect(fake.state.counters.created).toEqual(before.created);
    const [record] = fake.state.byField('Lead', 'EBS_Lead_Id__c', leadId ?? '');
    expect(record?.fields.FirstName).toBe('Edited');
  }, 600_000);

  it('counts the records written without a contact, for want of an email address, and stays complete', async () => {
    await crm.expectWithoutEmailCounted(first, deps);
  }, 300_000);

  it('deletes the Lead of a deleted lead on the next full pass (onDelete: delete)', async () => {
    const [leadId] = [...sourceIds(crm.sb, 'lead')].slice(7, 8);
    crm.sb.admin.deleteRecord('lead', Number(leadId));
    const deletedBefore = fake.state.counters.deleted;
    const pass = await crm.runPass(deps, { subjects: ['leads'], mode: 'full' });
    expect(pass.phase).toBe('done');
    expect(pass.counts.deleted).toBe(1);
    expect(fake.state.counters.deleted).toBe(deletedBefore + 1);
    const record = [...fake.state.records.Lead.values()].find(
      (l) => l.fields.EBS_Lead_Id__c === leadId,
    );
    expect(record?.IsDeleted).toBe(true);
  }, 600_000);
});

describe('Salesforce limits and refusals', () => {
  it('REQUEST_LIMIT_EXCEEDED pauses the mirror without a retry storm; it resumes once the 24 hours have passed', async () => {
    const fake = await crm.newFake();
    // The org's other integrations have spent the allocation today.
    fake.state.limits.dailyApiRequests = 500;
    for (let i = 0; i < 500; i += 1) fake.state.admit();
    const deps = crm.depsFor(fake);
    const paused = await crm.runPass(deps, { subjects: ['events'], mode: 'full' });
    expect(paused.phase).toBe('paused');
    expect(paused.error).toMatch(/daily API allocation/);
    expect(Date.parse(paused.pausedUntil ?? '')).toBeGreaterThan(fake.state.now());
    const refusals = fake.state.counters.rateLimited.daily ?? 0;
    expect(refusals).toBeGreaterThan(0);
    // Each activity in flight learns of it once; nothing retries into the wall.
    expect(refusals).toBeLessThanOrEqual(10);
    expect(fake.state.counters.writes).toBe(0);

    fake.state.clockOffsetMs = SALESFORCE_DAY_MS + 1_000;
    const resumed = await crm.runPass(deps, { subjects: ['events'], mode: 'full' });
    expect(resumed.phase).toBe('done');
    expect(keysOf(keyed(fake, 'Opportunity', 'EBS_Event_Id__c'), 'EBS_Event_Id__c')).toEqual(
      sourceIds(crm.sb, 'event'),
    );
  }, 600_000);

  it("paused after a batch's Opportunities: they are counted and kept with the pause, and the pass after it writes only the rest", async () => {
    const fake = await crm.newFake();
    const deps = crm.depsFor(fake);
    // The pass's describes made first, so that what is left of the allocation is write calls.
    await (await deps.destination('salesforce')).ensureSchema([]);
    // One call before the reserve: the first request of Opportunities (all of them answered
    // or none); its Contacts and roles, and every other batch, pause.
    fake.state.limits.dailyApiRequests = 1000;
    while (fake.state.usage() < 949) fake.state.admit();

    const paused = await crm.runPass(deps, { subjects: ['events'], mode: 'full' });
    expect(paused.phase).toBe('paused');
    const made = keyed(fake, 'Opportunity', 'EBS_Event_Id__c');
    expect(made.length).toBeGreaterThan(0);
    expect(fake.state.live('Contact')).toHaveLength(0);
    // Counted as Salesforce holds them (the pass said 0 written).
    expect(paused.counts.written).toBe(made.length);

    // A day on, in a worker that has not seen the reserve reached (this one keeps to it for
    // an hour of the machine's clock, which the test cannot move): the same ledger.
    fake.state.clockOffsetMs = SALESFORCE_DAY_MS + 1_000;
    const fresh = openDestination(databaseOpeners, 'salesforce', { salesforce: settingsOf(fake) });
    crm.closeLater(fresh);
    const resumed = await crm.runPass(
      { ...deps, destination: () => Promise.resolve(fresh) },
      { subjects: ['events'], mode: 'full' },
    );
    expect(resumed.phase).toBe('done');
    // The Opportunities made are in the ledger: written again are only those the pause left
    // without their Contacts (written in part); the rest are new.
    const withEmail = crm.eventsWithEmail();
    const inPart = made.filter((o) => withEmail.has(String(o.fields.EBS_Event_Id__c))).length;
    expect(resumed.counts.written).toBe(EVENTS - made.length + inPart);
    expect(keyed(fake, 'Opportunity', 'EBS_Event_Id__c')).toHaveLength(EVENTS);
    expect(keysOf(keyed(fake, 'Opportunity', 'EBS_Event_Id__c'), 'EBS_Event_Id__c')).toEqual(
      sourceIds(crm.sb, 'event'),
    );
    // Those written in part got their Contacts and roles: every event with a customer email
    // is linked, each email once.
    const linkedTo = new Map<string, string[]>();
    const contactOf = new Map(fake.state.live('Contact').map((c) => [c.Id, c.fields.EBS_Email__c]));
    for (const role of fake.state.live('OpportunityContactRole')) {
      const list = linkedTo.get(role.fields.OpportunityId as string) ?? [];
      list.push(String(contactOf.get(role.fields.ContactId as string)));
      linkedTo.set(role.fields.OpportunityId as string, list);
    }
    for (const o of keyed(fake, 'Opportunity', 'EBS_Event_Id__c')) {
      const list = linkedTo.get(o.Id) ?? [];
      expect(new Set(list).size).toBe(list.length);
      expect(list.length > 0).toBe(withEmail.has(String(o.fields.EBS_Event_Id__c)));
    }
  }, 600_000);

  it('an Opportunity written in part gets its missing Contact and role on the next write, and no role twice', async () => {
    const fake = await crm.newFake();
    // A role a query page: the pages after the first are read too.
    fake.state.queryBatchSize = 1;
    const destination = destinationFor(fake);
    // Two Contacts hold the same EBS_Email__c (made by hand): that email's Contact is refused.
    fake.state.insert('Contact', { LastName: 'Twin', EBS_Email__c: 'twin@example.com' });
    const twin = fake.state.insert('Contact', {
      LastName: 'Twin',
      EBS_Email__c: 'twin@example.com',
    });
    const event = {
      resource: 'events' as const,
      id: 'e1',
      attributes: { title: 'Gala', customer_emails: 'twin@example.com, solo@example.com' },
      raw: {},
    };
    const first = await destination.upsert('events', [event]);
    expect(first.refused).toEqual([
      {
        index: 0,
        code: 'DUPLICATE_EXTERNAL_ID',
        message: expect.any(String) as string,
        partial: true,
      },
    ]);
    const [opportunity] = fake.state.byField('Opportunity', 'EBS_Event_Id__c', 'e1');
    const rolesOf = () =>
      fake.state
        .live('OpportunityContactRole')
        .filter((r) => r.fields.OpportunityId === opportunity?.Id)
        .map((r) => ({
          email: fake.state.records.Contact.get(r.fields.ContactId as string)?.fields.EBS_Email__c,
          primary: r.fields.IsPrimary,
        }));
    expect(rolesOf()).toEqual([{ email: 'solo@example.com', primary: false }]);

    // A person deletes the extra Contact; the next pass writes the event again (in part).
    twin.IsDeleted = true;
    const queries = () => fake.state.counters.requests['GET /services/data/:version/query'] ?? 0;
    const second = await destination.upsert('events', [event]);
    expect(second).toMatchObject({ inserted: 0, updated: 1 });
    expect(second.refused).toBeUndefined();
    const linked = [
      { email: 'solo@example.com', primary: false },
      // The first email, and the Opportunity had no primary contact yet.
      { email: 'twin@example.com', primary: true },
    ];
    expect(rolesOf()).toEqual(linked);
    // One query for the batch: the Opportunity had one role, a page.
    expect(queries()).toBe(1);

    // Written again (a change, --rewrite): the roles it has are not made twice.
    const creates = () =>
      fake.state.counters.requests['POST /services/data/:version/composite/sobjects'] ?? 0;
    const before = creates();
    const third = await destination.upsert('events', [event]);
    expect(third.refused).toBeUndefined();
    expect(rolesOf()).toEqual(linked);
    expect(creates()).toBe(before);
    // An email added to the event on the service is linked as well, not primary.
    await destination.upsert('events', [
      {
        ...event,
        attributes: {
          ...event.attributes,
          customer_emails: 'twin@example.com solo@example.com new@example.com',
        },
      },
    ]);
    expect(rolesOf()).toEqual([...linked, { email: 'new@example.com', primary: false }]);
  });

  it('stops before the last 5% of the allocation, read from Sforce-Limit-Info, with no 403', async () => {
    const fake = await crm.newFake();
    fake.state.limits.dailyApiRequests = 100;
    for (let i = 0; i < 91; i += 1) fake.state.admit();
    const destination = destinationFor(fake);
    const records = (n: number) =>
      Array.from({ length: n }, (_, i) => ({
        resource: 'leads' as const,
        id: `r${i}`,
        attributes: { email: `r${i}@example.com`, last_name: 'R' },
        raw: {},
      }));
    // describe ×3 and one upsert: 95 of 100, the reserve's edge.
    await destination.upsert('leads', records(10));
    const paused = await destination.upsert('leads', records(20)).catch((e: unknown) => e);
    expect(paused).toBeInstanceOf(DestinationPausedError);
    expect((paused as Error).message).toMatch(/keeps the last 5% .*\(api-usage 95\/100\)/);
    expect(fake.state.counters.rateLimited.daily ?? 0).toBe(0);
    const failure = toActivityFailure(paused) as ApplicationFailure;
    expect(failure.type).toBe('DestinationPausedError');
    expect(failure.nonRetryable).toBe(true);
    // A later pass, still within the pause, is told the same time: the hour counts from the
    // answer that showed the usage, which is when calls are taken again.
    await new Promise((resolve) => setTimeout(resolve, 1200));
    const again = await destination.upsert('leads', records(20)).catch((e: unknown) => e);
    expect((again as DestinationPausedError).resumeAt).toBe(
      (paused as DestinationPausedError).resumeAt,
    );
  });

  it('DUPLICATES_DETECTED on an item is reported and not retried; the rest of the batch is written', async () => {
    const fake = await crm.newFake();
    fake.state.blockDuplicateLeadEmails = true;
    fake.state.insert('Lead', { LastName: 'Old', Company: 'X', Email: 'taken@example.com' });
    const destination = destinationFor(fake);
    const result = await destination.upsert('leads', [
      { resource: 'leads', id: 'd1', attributes: { email: 'taken@example.com' }, raw: {} },
      { resource: 'leads', id: 'd2', attributes: { email: 'free@example.com' }, raw: {} },
    ]);
    expect(result.refused).toEqual([
      { index: 0, code: 'DUPLICATES_DETECTED', message: expect.any(String) as string },
    ]);
    expect(result.inserted).toBe(1);
    expect(
      fake.state.counters.requests[
        'PATCH /services/data/:version/composite/sobjects/:sobject/:field'
      ],
    ).toBe(1);
    expect(fake.state.byField('Lead', 'EBS_Lead_Id__c', 'd1')).toHaveLength(0);
    expect(fake.state.byField('Lead', 'EBS_Lead_Id__c', 'd2')).toHaveLength(1);
    expect(fake.state.counters.itemErrors).toEqual({ DUPLICATES_DETECTED: 1 });
  });

  it('a pass goes on past a refused lead, says which and why, and writes it once the rule is gone', async () => {
    const fake = await crm.newFake();
    fake.state.limits.dailyApiRequests = 100_000;
    const deps = crm.depsFor(fake);
    expect((await crm.runPass(deps, { subjects: ['leads'], mode: 'full' })).counts.refused).toBe(0);

    // A lead now has the e-mail of a Lead someone entered by hand; the org's rule blocks it.
    const [leadId] = [...sourceIds(crm.sb, 'lead')].slice(99, 100);
    crm.sb.admin.patchRecord('lead', Number(leadId), { email: 'already-a-lead@example.com' });
    fake.state.insert('Lead', {
      LastName: 'Entered by hand',
      Company: 'X',
      Email: 'already-a-lead@example.com',
    });
    fake.state.blockDuplicateLeadEmails = true;
    const pass = await crm.runPass(deps, { subjects: ['leads'], mode: 'full' });
    // Not done: a record the destination refused is left out, and the pass says so.
    expect(pass.phase).toBe('incomplete');
    expect(pass.error).toBeNull();
    // Refused, and still known to the ledger: the full pass does not sweep it as deleted.
    expect(pass.counts).toMatchObject({ written: 0, refused: 1, deleted: 0 });
    expect(pass.refusals).toEqual([
      expect.stringMatching(new RegExp(`^leads ${leadId} refused: DUPLICATES_DETECTED: `)),
    ]);
    expect(fake.state.counters.itemErrors).toEqual({ DUPLICATES_DETECTED: 1 });
    const [kept] = fake.state.byField('Lead', 'EBS_Lead_Id__c', leadId ?? '');
    expect(kept?.fields.Email).not.toBe('already-a-lead@example.com');

    fake.state.blockDuplicateLeadEmails = false;
    const next = await crm.runPass(deps, { subjects: ['leads'], mode: 'incremental' });
    expect(next.phase).toBe('done');
    expect(next.counts).toMatchObject({ written: 1, refused: 0 });
    expect(next.refusals).toEqual([]);
    const [written] = fake.state.byField('Lead', 'EBS_Lead_Id__c', leadId ?? '');
    expect(written?.fields.Email).toBe('already-a-lead@example.com');
    expect(keysOf(keyed(fake, 'Lead', 'EBS_Lead_Id__c'), 'EBS_Lead_Id__c')).toEqual(
      sourceIds(crm.sb, 'lead'),
    );
  }, 600_000);

  it('a deletion Salesforce refuses for one record is named with its reason, not dropped, and tried again by the next full pass', async () => {
    const fake = await crm.newFake();
    fake.state.limits.dailyApiRequests = 100_000;
    const deps = crm.depsFor(fake);
    expect((await crm.runPass(deps, { subjects: ['leads'], mode: 'full' })).phase).toBe('done');

    const [kept, gone] = [...sourceIds(crm.sb, 'lead')].slice(120, 122);
    crm.sb.admin.deleteRecord('lead', Number(kept));
    crm.sb.admin.deleteRecord('lead', Number(gone));
    // The org's before-delete trigger refuses the Lead of `kept` (switched over HTTP, as a
    // person trying the fake would).
    const [locked] = fake.state.byField('Lead', 'EBS_Lead_Id__c', kept ?? '');
    const switched = await fetch(`${fake.baseUrl}/_admin/delete-refusals`, {
      method: 'PUT',
      headers: { 'x-admin-token': 'admin-token-for-tests', 'content-type': 'application/json' },
      body: JSON.stringify({ ids: [locked?.Id] }),
    });
    expect(switched.status).toBe(200);

    const pass = await crm.runPass(deps, { subjects: ['leads'], mode: 'full' });
    // Not done: one deletion did not happen, and the pass says which and why.
    expect(pass.phase).toBe('incomplete');
    expect(exitCodeOf(pass)).not.toBe(0);
    expect(pass.counts).toMatchObject({ deleted: 1, refused: 1 });
    expect(pass.refusals).toEqual([
      `leads ${kept} not deleted: FIELD_CUSTOM_VALIDATION_EXCEPTION: Records with open invoices cannot be deleted`,
    ]);
    expect(summaryText(pass)).toContain(`leads ${kept} not deleted: FIELD_CUSTOM_VALIDATION`);
    expect(fake.state.counters.itemErrors).toEqual({ FIELD_CUSTOM_VALIDATION_EXCEPTION: 1 });
    expect(locked?.IsDeleted).toBe(false);
    const deleted = [...fake.state.records.Lead.values()].find(
      (l) => l.fields.EBS_Lead_Id__c === gone,
    );
    expect(deleted?.IsDeleted).toBe(true);

    // The trigger lifted, the next full pass deletes it: the ledger kept it live.
    fake.state.deleteRefused.clear();
    const next = await crm.runPass(deps, { subjects: ['leads'], mode: 'full' });
    expect(next.phase).toBe('done');
    expect(next.counts).toMatchObject({ deleted: 1, refused: 0 });
    expect(next.refusals).toEqual([]);
    expect(locked?.IsDeleted).toBe(true);
  }, 600_000);

  it('a record deleted in Salesforce between the read and the delete counts as deleted, not refused', async () => {
    const fake = await crm.newFake();
    fake.state.limits.dailyApiRequests = 100_000;
    const deps = crm.depsFor(fake);
    expect((await crm.runPass(deps, { subjects: ['leads'], mode: 'full' })).phase).toBe('done');

    const [raced, plain] = [...sourceIds(crm.sb, 'lead')].slice(130, 132);
    crm.sb.admin.deleteRecord('lead', Number(raced));
    crm.sb.admin.deleteRecord('lead', Number(plain));
    const [lead] = fake.state.byField('Lead', 'EBS_Lead_Id__c', raced ?? '');
    fake.state.deletedMeanwhile.add(lead?.Id ?? '');

    const pass = await crm.runPass(deps, { subjects: ['leads'], mode: 'full' });
    // Salesforce answered ENTITY_IS_DELETED for it: what the pass asked is so.
    expect(fake.state.counters.itemErrors).toEqual({ ENTITY_IS_DELETED: 1 });
    expect(pass.phase).toBe('done');
    expect(pass.refusals).toEqual([]);
    expect(pass.counts).toMatchObject({ deleted: 1, refused: 0 });
    expect(lead?.IsDeleted).toBe(true);
    // Gone from the ledger as deleted: the next full pass does not try it again.
    const next = await crm.runPass(deps, { subjects: ['leads'], mode: 'full' });
    expect(next.phase).toBe('done');
    expect(next.counts).toMatchObject({ deleted: 0, refused: 0 });
  }, 600_000);

  it('text longer than its field is cut to the length describe gives, not refused', async () => {
    const fake = await crm.newFake();
    const long = 'L'.repeat(100);
    const written = await destinationFor(fake).upsert('leads', [
      {
        resource: 'leads',
        id: 'long',
        attributes: { last_name: long, company_name: null },
        raw: {},
      },
    ]);
    expect(written).toMatchObject({ inserted: 1 });
    const [record] = fake.state.byField('Lead', 'EBS_Lead_Id__c', 'long');
    expect(record?.fields.LastName).toBe(long.slice(0, 80));
    expect(record?.fields.Company).toBe('[not provided]');
    expect(fake.state.counters.itemErrors).toEqual({});
  });

  it('a required field of spaces alone is written as an empty one is, not refused', async () => {
    const fake = await crm.newFake();
    const destination = destinationFor(fake);
    const leads = await destination.upsert('leads', [
      {
        resource: 'leads',
        id: 'blank',
        attributes: { last_name: '   ', company_name: ' \t ', email: 'blank@example.com' },
        raw: {},
      },
    ]);
    expect(leads).toMatchObject({ inserted: 1 });
    expect(leads.refused ?? []).toEqual([]);
    const [lead] = fake.state.byField('Lead', 'EBS_Lead_Id__c', 'blank');
    expect(lead?.fields.LastName).toBe('[not provided]');
    expect(lead?.fields.Company).toBe('[not provided]');
    const events = await destination.upsert('events', [
      {
        resource: 'events',
        id: 'blank-title',
        attributes: { title: '  ', status: 'proposal' },
        raw: {},
      },
    ]);
    expect(events).toMatchObject({ inserted: 1 });
    expect(events.refused ?? []).toEqual([]);
    const [opportunity] = fake.state.byField('Opportunity', 'EBS_Event_Id__c', 'blank-title');
    expect(opportunity?.fields.Name).toBe('Event blank-title');
    expect(fake.state.counters.itemErrors).toEqual({});
  });

  it('an expired session is renewed once; a refused refresh token names the setting', async () => {
    const fake = await crm.newFake();
    const destination = destinationFor(fake);
    await destination.ensureSchema([]);
    fake.state.sessions.clear();
    await destination.ensureSchema([]);
    const refresh = () => fake.state.counters.requests['POST /services/oauth2/token'] ?? 0;
    expect(refresh()).toBe(1);
    await destination.upsert('leads', [
      { resource: 'leads', id: 's1', attributes: { last_name: 'S' }, raw: {} },
    ]);
    expect(refresh()).toBe(2);

    const wrong = new SalesforceDestination({
      loginUrl: fake.baseUrl,
      clientId: fake.clientId,
      refreshToken: 'revoked-refresh-token',
    });
    const refused = await wrong.ensureSchema([]).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(DestinationAuthError);
    expect((refused as Error).message).toBe(
      'Salesforce refused the token request (invalid_grant): check EBSYNC_SALESFORCE_REFRESH_TOKEN',
    );

    // A login URL with a path: its token "endpoint" is a 404 page, not a refused token.
    const misplaced = await sessionErrorAt(fake, `${fake.baseUrl}/lightning/page`);
    expect(misplaced).toBeInstanceOf(DestinationAuthError);
    expect((misplaced as Error).message).toBe(
      'Salesforce login answered HTTP 404 with no session (the token request): check EBSYNC_SALESFORCE_URL, the login URL (docs/crm.md)',
    );
  });

  it('a 502 is retryable and tried once (jsforce retries nothing); an unreachable login names no secret', async () => {
    const fake = await crm.newFake();
    const destination = destinationFor(fake);
    await destination.ensureSchema([]);
    const lead = { resource: 'leads' as const, id: 'f1', attributes: { last_name: 'F' }, raw: {} };
    fake.state.fault = { status: 502, count: 1 };
    const failed = await destination.upsert('leads', [lead]).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(DestinationUnavailableError);
    expect((failed as Error).message).toMatch(/^Salesforce answered 502 to PATCH /);
    expect(await destination.upsert('leads', [lead])).toMatchObject({ inserted: 1 });
    // jsforce would retry a GET's 5xx on its own five times; ebsync leaves retries to Temporal.
    const requests = () =>
      Object.values(fake.state.counters.requests).reduce((sum, n) => sum + n, 0);
    const before = requests();
    fake.state.fault = { status: 503, count: 1 };
    const read = await destination.client
      .call('GET', '/sobjects/Lead/describe')
      .catch((e: unknown) => e);
    expect(read).toBeInstanceOf(DestinationUnavailableError);
    expect(requests() - before).toBe(1);

    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const unreachable = await sessionErrorAt(fake, `http://127.0.0.1:${port}`);
    expect(unreachable).toBeInstanceOf(DestinationUnavailableError);
    expect((unreachable as Error).message).toBe(
      'Salesforce login could not be reached: ECONNREFUSED',
    );
    const shown = inspect(unreachable, { depth: 10 });
    expect(shown).not.toContain(fake.token);
    expect(shown).not.toContain(fake.clientSecret);
  });

  it('a refresh token Salesforce rotates is kept sealed, and the next run presents it in place of the dead configured one', async () => {
    const fake = await crm.newFake();
    const switched = await fetch(`${fake.baseUrl}/_admin/refresh-token-rotation`, {
      method: 'PUT',
      headers: { 'x-admin-token': 'admin-token-for-tests', 'content-type': 'application/json' },
      body: JSON.stringify({ rotate: true }),
    });
    expect(switched.status).toBe(200);
    const file = join(crm.dir, 'crm-refresh-tokens.db');
    const codec = new EncryptionCodec([{ id: 'k1', key: randomBytes(32) }]);
    /** One run: a new process with the same settings (the configured token) and the store. */
    const run = async () => {
      const store = sqliteRefreshTokenStore(file, codec);
      try {
        await new SalesforceDestination({
          loginUrl: fake.baseUrl,
          clientId: fake.clientId,
          clientSecret: fake.clientSecret,
          refreshToken: fake.token,
          refreshTokens: store,
        }).ensureSchema([]);
      } finally {
        store.close();
      }
    };
    await run();
    const rotated = fake.state.app.refreshToken;
    expect(rotated).not.toBe(fake.token);
    const onDisk = Buffer.concat(
      [file, `${file}-wal`].filter((f) => existsSync(f)).map((f) => readFileSync(f)),
    );
    expect(onDisk.includes(rotated)).toBe(false);
    // Without what was kept, the settings' token is dead: the fake did rotate it.
    const forgetful = new SalesforceDestination({
      loginUrl: fake.baseUrl,
      clientId: fake.clientId,
      clientSecret: fake.clientSecret,
      refreshToken: fake.token,
    });
    expect(await forgetful.ensureSchema([]).catch((e: unknown) => e)).toBeInstanceOf(
      DestinationAuthError,
    );
    await run();
    expect(fake.state.app.refreshToken).not.toBe(rotated);
    await run();
    expect(fake.state.counters.tokens).toBe(3);
  });

  it('a worker renews its session with the token another process rotated since (the store, not its memory)', async () => {
    const fake = await crm.newFake();
    await fetch(`${fake.baseUrl}/_admin/refresh-token-rotation`, {
      method: 'PUT',
      headers: { 'x-admin-token': 'admin-token-for-tests', 'content-type': 'application/json' },
      body: JSON.stringify({ rotate: true }),
    });
    const codec = new EncryptionCodec([{ id: 'k1', key: randomBytes(32) }]);
    const store = sqliteRefreshTokenStore(join(crm.dir, 'crm-refresh-tokens-shared.db'), codec);
    const withStore = () =>
      new SalesforceDestination({
        loginUrl: fake.baseUrl,
        clientId: fake.clientId,
        clientSecret: fake.clientSecret,
        refreshToken: fake.token,
        refreshTokens: store,
      });
    try {
      // The worker's destination rotates the token once; then `ebsync destinations setup
      // salesforce` (another process, the same store) rotates it again.
      const worker = withStore();
      await worker.ensureSchema([]);
      await withStore().ensureSchema([]);
      // The worker's session expires: it renews with the token the setup kept.
      fake.state.sessions.clear();
      expect(
        await worker.upsert('leads', [
          { resource: 'leads', id: 'r1', attributes: { last_name: 'R' }, raw: {} },
        ]),
      ).toMatchObject({ inserted: 1 });
      expect(fake.state.counters.tokens).toBe(3);

      // Two processes renewing at once: this one read the token just before the other's
      // rotation killed it. Refused, it reads the store again and presents the new one.
      const stale = fake.state.app.refreshToken;
      await withStore().ensureSchema([]);
      let reads = 0;
      const racing = new SalesforceDestination({
        loginUrl: fake.baseUrl,
        clientId: fake.clientId,
        clientSecret: fake.clientSecret,
        refreshToken: fake.token,
        refreshTokens: {
          latest: async (account, configured) =>
            (reads += 1) === 1 ? stale : store.latest(account, configured),
          keep: (account, configured, next) => store.keep(account, configured, next),
        },
      });
      await racing.ensureSchema([]);
      expect(reads).toBe(2);
      expect(fake.state.counters.tokens).toBe(5);
    } finally {
      store.close();
    }
  });

  it('the JWT bearer flow: a signed assertion for the pre-authorized user gets a session; another user is refused', async () => {
    const fake = await crm.newFake();
    const keyFile = join(crm.dir, 'salesforce-key.pem');
    writeFileSync(keyFile, fake.privateKey);
    const jwt = { baseUrl: fake.baseUrl, clientId: fake.clientId, privateKeyFile: keyFile };
    const destination = openDestination(databaseOpeners, 'salesforce', {
      salesforce: { ...jwt, username: fake.username },
    });
    crm.closeLater(destination);
    const written = await destination.upsert('leads', [
      { resource: 'leads', id: 'j1', attributes: { last_name: 'Jwt' }, raw: {} },
    ]);
    expect(written).toMatchObject({ inserted: 1 });
    expect(fake.state.counters.tokens).toBe(1);

    const stranger = openDestination(databaseOpeners, 'salesforce', {
      salesforce: { ...jwt, username: 'someone@else.example' },
    });
    const refused = await stranger.ensureSchema([]).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(DestinationAuthError);
    expect((refused as Error).message).toMatch(
      /^Salesforce refused the token request \(invalid_grant\): check EBSYNC_SALESFORCE_USERNAME/,
    );
    const forged = await fetch(`${fake.baseUrl}/services/oauth2/token`, {
      method: 'POST',
      body: new URLSearchParams({
        grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
        assertion: 'eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJ4In0.c2lnbmF0dXJl',
      }),
    });
    expect(forged.status).toBe(400);
    expect(await forged.json()).toMatchObject({ error: 'invalid_grant' });
    expect(() =>
      openDestination(databaseOpeners, 'salesforce', { salesforce: { baseUrl: fake.baseUrl } }),
    ).toThrow(
      /Salesforce needs a connected app: set EBSYNC_SALESFORCE_CLIENT_ID and EBSYNC_SALESFORCE_REFRESH_TOKEN, or EBSYNC_SALESFORCE_USERNAME .*; in the workers' environment and restart them$/,
    );
  });

  it('a missing external-id field fails with what to create', async () => {
    const fake = await crm.newFake();
    fake.state.fields.Opportunity.delete('EBS_Event_Id__c');
    const failed = await destinationFor(fake)
      .ensureSchema([])
      .catch((e: unknown) => e);
    expect((failed as Error).message).toMatch(
      /^Salesforce has no field Opportunity\.EBS_Event_Id__c: create it/,
    );
  });

  it('a text column mapped to a currency or date field fails at once, before any record is written as null', async () => {
    const fake = await crm.newFake();
    const failed = await new SalesforceDestination({
      loginUrl: fake.baseUrl,
      clientId: fake.clientId,
      clientSecret: fake.clientSecret,
      refreshToken: fake.token,
      mapping: { events: { opportunity: { Amount: 'title', CloseDate: 'starts_at' } } },
    })
      .upsert('events', [
        { resource: 'events', id: 'e1', attributes: { title: 'Gala', starts_at: null }, raw: {} },
      ])
      .catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(DestinationSchemaError);
    expect((failed as Error).message).toMatch(
      /^EBSYNC_SALESFORCE_MAPPING maps a column of another kind to a Salesforce field: Opportunity\.Amount \(currency\) ← title \(text\); /,
    );
    expect(fake.state.live('Opportunity')).toEqual([]);
  });
});
