import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type ServerResponse } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toActivityFailure } from '../../activities/failures.js';
import { ConfigError, loadConfig } from '../../config/index.js';
import {
  DestinationAuthError,
  DestinationPausedError,
  DestinationRateLimitedError,
  DestinationSchemaError,
  DestinationTargetError,
  DestinationUnavailableError,
  DestinationWriteError,
} from '../../destinations/errors.js';
import { HubSpotClient, nextPortalMidnight } from '../../destinations/hubspot-client.js';
import { HubSpotDestination, unsuitedMapping } from '../../destinations/hubspot-destination.js';
import { setupHubSpot } from '../../destinations/hubspot-setup.js';
import { hubspotMapping } from '../../destinations/hubspot-mapping.js';
import { openDestination, parseDestinationTarget } from '../../destinations/open-destination.js';
import { databaseOpeners } from '../../store/database-openers.js';
import { startHubSpotFake, type HubSpotFake } from '../../sandbox/crm/fakes.js';

/** How the HubSpot destination's failures reach Temporal, and how its settings load. */
let fake: HubSpotFake;
let destination: HubSpotDestination;
const dir = mkdtempSync(join(tmpdir(), 'ebsync-crm-errors-'));
/**
 * The contact and deal properties the default mapping writes, as a portal lists them (pass
 * start checks both lists; the hand-made portals below answer this one for either).
 */
const PROPERTIES = [
  { name: 'email', type: 'string' },
  { name: 'firstname', type: 'string' },
  { name: 'lastname', type: 'string' },
  { name: 'phone', type: 'string' },
  { name: 'company', type: 'string' },
  { name: 'dealname', type: 'string' },
  { name: 'amount', type: 'number' },
  { name: 'closedate', type: 'datetime' },
];

/** Makes a custom property of type `type` in the fake portal, as a portal admin would. */
async function makeProperty(
  portal: HubSpotFake,
  object: 'contacts' | 'deals',
  name: string,
  type: 'number' | 'date',
): Promise<void> {
  const made = await fetch(`${portal.baseUrl}/crm/v3/properties/${object}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${portal.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      name,
      label: name,
      type,
      fieldType: type,
      groupName: object === 'deals' ? 'dealinformation' : 'contactinformation',
    }),
  });
  expect(made.status).toBe(201);
}

/** When the hand-made portals' day's allowance is spent: 18:30 in New York. */
const SPENT_AT = 'Sun, 06 Dec 2026 23:30:00 GMT';

/** A HubSpot 500, as an answer to the portal's account-info read. */
const internalError = (response: ServerResponse): void => {
  response.statusCode = 500;
  response.end(JSON.stringify({ status: 'error', message: 'internal error' }));
};

/**
 * A hand-made HubSpot portal, for time zone reads the fake cannot be made to fail or bloat.
 * `accountInfo` answers GET /account-info/v3/details; any other call is answered as a schema
 * check wants (the key property, with unique values, and PROPERTIES) until the day's allowance
 * is spent (`spent`, or `spend()`), then with a 429 DAILY dated `date()` (SPENT_AT).
 */
async function handMadePortal(options: {
  accountInfo: (response: ServerResponse) => void;
  spent?: boolean;
  date?: () => string;
}): Promise<{ baseUrl: string; spend(): void; close(): Promise<void> }> {
  let spent = options.spent ?? false;
  const server = createHttpServer((request, response) => {
    response.setHeader('content-type', 'application/json');
    if (request.url === '/account-info/v3/details') {
      options.accountInfo(response);
      return;
    }
    if (!spent) {
      response.end(
        JSON.stringify({ name: 'ebs_lead_id', hasUniqueValue: true, results: PROPERTIES }),
      );
      return;
    }
    response.setHeader('date', options.date?.() ?? SPENT_AT);
    response.statusCode = 429;
    response.end(JSON.stringify({ status: 'error', errorType: 'RATE_LIMIT', policyName: 'DAILY' }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    spend: () => {
      spent = true;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const lead = (id: string, email: string) => ({
  resource: 'leads' as const,
  id,
  attributes: { email, first_name: 'Ada', subject: null },
  raw: {},
});

/** A lead whose deal name (its subject) is given. */
const named = (id: string, subject: string) => ({
  ...lead(id, `${id}@example.com`),
  attributes: { email: `${id}@example.com`, first_name: 'Ada', subject },
});

/** Sets one of the fake portal's switches through its admin route. */
async function putAdmin(route: string, body: object): Promise<void> {
  const answer = await fetch(`${fake.baseUrl}/_admin/${route}`, {
    method: 'PUT',
    headers: { 'x-admin-token': 'crm-errors-admin', 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(answer.status).toBe(200);
}

/** Sets the fake portal's property validation rules. */
const setRules = (rules: object[]) => putAdmin('validation-rules', { rules });

beforeAll(async () => {
  fake = await startHubSpotFake({ adminToken: 'crm-errors-admin' });
  await setupHubSpot({ baseUrl: fake.baseUrl, token: fake.token });
  destination = new HubSpotDestination({ baseUrl: fake.baseUrl, token: fake.token });
});
afterAll(async () => {
  await fake?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('HubSpot destination failures', () => {
  it('a 502 is retryable; the same batch then writes once', async () => {
    fake.state.fault = { status: 502, count: 1 };
    const failed = await destination
      .upsert('leads', [lead('1', 'ada@example.com')])
      .catch((e) => e);
    expect(failed).toBeInstanceOf(DestinationUnavailableError);
    expect((toActivityFailure(failed) as Error).constructor.name).toBe(
      'DestinationUnavailableError',
    );
    const written = await destination.upsert('leads', [lead('1', 'ada@example.com')]);
    expect(written).toMatchObject({ inserted: 1, updated: 0 });
    const again = await destination.upsert('leads', [lead('1', 'ada@example.com')]);
    expect(again).toMatchObject({ inserted: 0, updated: 1, keys: written.keys });
    expect(fake.state.counters.created).toEqual({ contacts: 1, deals: 1 });
  });

  it('a contact HubSpot refuses (207) leaves its deal written and unlinked, reported as written in part', async () => {
    await setRules([{ objectType: 'contacts', property: 'firstname', maxLength: 2 }]);
    try {
      const result = await destination.upsert('leads', [lead('2', 'long-name@example.com')]);
      expect(result.inserted).toBe(1);
      expect(result.refused).toEqual([
        {
          index: 0,
          code: 'VALIDATION_ERROR',
          message: expect.stringMatching(/firstname/) as string,
          partial: true,
        },
      ]);
      const deal = [...fake.state.objects.deals.values()].find(
        (d) => d.properties.ebs_lead_id === '2',
      );
      expect(deal).toBeDefined();
      expect([...fake.state.dealContacts].some((p) => p.startsWith(`${deal?.id}|`))).toBe(false);
    } finally {
      await setRules([]);
    }
  });

  it('a deal HubSpot will not link to its contact (207 from the associations API) is reported as written in part, and linked on the next write', async () => {
    fake.state.contactsPerDeal = 0;
    try {
      const result = await destination.upsert('leads', [lead('3', 'linked-later@example.com')]);
      expect(result.inserted).toBe(1);
      expect(result.refused).toEqual([
        {
          index: 0,
          code: 'VALIDATION_ERROR',
          message: expect.stringMatching(/limit of 0 associated contacts/) as string,
          partial: true,
        },
      ]);
    } finally {
      fake.state.contactsPerDeal = null;
    }
    const deal = [...fake.state.objects.deals.values()].find(
      (d) => d.properties.ebs_lead_id === '3',
    );
    const linked = () => [...fake.state.dealContacts].some((p) => p.startsWith(`${deal?.id}|`));
    expect(linked()).toBe(false);
    const again = await destination.upsert('leads', [lead('3', 'linked-later@example.com')]);
    expect(again.refused).toBeUndefined();
    expect(linked()).toBe(true);
  });

  it('a deal a validation rule refuses (207) is reported by its index; the others are written', async () => {
    await setRules([{ objectType: 'deals', property: 'dealname', pattern: '^[^#]*$' }]);
    try {
      const result = await destination.upsert('leads', [
        named('r1', 'Wedding'),
        named('r2', 'Gala #2'),
        named('r3', 'Launch'),
      ]);
      expect(result.refused).toEqual([
        {
          index: 1,
          code: 'VALIDATION_ERROR',
          message: expect.stringMatching(/dealname/) as string,
        },
      ]);
      expect(result.inserted).toBe(2);
      const dealOf = (id: string) =>
        [...fake.state.objects.deals.values()].find((d) => d.properties.ebs_lead_id === id);
      expect(dealOf('r1')?.properties.dealname).toBe('Wedding');
      expect(dealOf('r2')).toBeUndefined();
      expect(dealOf('r3')?.properties.dealname).toBe('Launch');
      // The refused lead's key is its own id (no HubSpot deal), the others their deal ids.
      expect(result.keys[1]).toBe('r2');
      expect(result.keys[0]).toBe(dealOf('r1')?.id);
    } finally {
      await setRules([]);
    }
  });

  it.each([
    ['by its id when the error carries no trace id', 'ids' as const],
    ['as not written, with the reason, when the error names no input', 'none' as const],
  ])('a refused deal is placed %s', async (_, context) => {
    await setRules([{ objectType: 'deals', property: 'dealname', pattern: '^[^#]*$' }]);
    fake.state.itemErrorContext = context;
    try {
      const result = await destination.upsert('leads', [
        named(`${context}1`, 'Wedding'),
        named(`${context}2`, 'Gala #2'),
      ]);
      // Either way the one deal HubSpot did not write is refused, and only that one.
      expect(result.refused).toEqual([
        {
          index: 1,
          code: 'VALIDATION_ERROR',
          message: expect.stringMatching(/dealname/) as string,
        },
      ]);
      expect(result.inserted).toBe(1);
    } finally {
      fake.state.itemErrorContext = 'trace';
      await setRules([]);
    }
  });

  it.each([
    ['the inputs it names', 'ids' as const],
    ['every input not read when it names none', 'none' as const],
  ])(
    'a deletion whose deal HubSpot did not read for another reason than not-found is refused: %s',
    async (_, context) => {
      const ids = [`del-${context}1`, `del-${context}2`, `del-${context}3`];
      await destination.upsert(
        'leads',
        ids.map((id) => named(id, 'Wedding')),
      );
      const dealOf = (id: string) =>
        [...fake.state.objects.deals.values()].find((d) => d.properties.ebs_lead_id === id);
      await putAdmin('read-refusals', {
        ids: [dealOf(ids[0] ?? '')?.id],
        category: 'VALIDATION_ERROR',
        message: 'Could not read it',
      });
      fake.state.itemErrorContext = context;
      try {
        // The third was never written: HubSpot names it not found, which is already gone.
        const result = await destination.markDeleted('leads', [
          ids[0] ?? '',
          ids[1] ?? '',
          'none-such',
        ]);
        expect(result).toEqual({
          marked: 1,
          refused: [{ id: ids[0], code: 'VALIDATION_ERROR', message: 'Could not read it' }],
        });
        expect(dealOf(ids[0] ?? '')?.archived).toBe(false);
        expect(dealOf(ids[1] ?? '')?.archived).toBe(true);
      } finally {
        fake.state.itemErrorContext = 'trace';
        await putAdmin('read-refusals', { ids: [] });
      }
    },
  );

  it('an unreachable portal is retryable, and the error names neither the token nor the request', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const token = 'pat-na1-unreachable-secret';
    const failed: unknown = await new HubSpotDestination({
      baseUrl: `http://127.0.0.1:${port}`,
      token,
    })
      .upsert('leads', [lead('u1', 'u1@example.com')])
      .catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(DestinationUnavailableError);
    expect((failed as Error).message).toMatch(/HubSpot could not be reached.*ECONNREFUSED/);
    expect(inspect(failed, { depth: 10 })).not.toContain(token);
  });

  it('a hung call fails within the request timeout as retryable; the next call is answered', async () => {
    await putAdmin('stall', { ms: 3_000, count: 1 });
    const impatient = new HubSpotDestination({
      baseUrl: fake.baseUrl,
      token: fake.token,
      timeoutMs: 500,
    });
    const started = Date.now();
    const failed: unknown = await impatient
      .upsert('leads', [lead('h1', 'h1@example.com')])
      .catch((e: unknown) => e);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(failed).toBeInstanceOf(DestinationUnavailableError);
    expect((failed as Error).message).toMatch(/HubSpot did not answer .* within 500 ms/);
    expect((failed as DestinationUnavailableError).retryable).toBe(true);
    expect(toActivityFailure(failed)).toBe(failed);
    const written = await impatient.upsert('leads', [lead('h1', 'h1@example.com')]);
    expect(written.inserted + written.updated).toBe(1);
  });

  it('a refused token is a non-retryable auth error that does not repeat the token', async () => {
    const token = 'pat-na1-wrong-secret';
    const failed: unknown = await new HubSpotDestination({ baseUrl: fake.baseUrl, token })
      .upsert('leads', [lead('w1', 'w1@example.com')])
      .catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(DestinationAuthError);
    expect((failed as Error).message).toMatch(/set a valid one in EBSYNC_HUBSPOT_TOKEN/);
    expect(inspect(failed, { depth: 10 })).not.toContain(token);
  });

  it('DAILY: a paused destination with the next UTC midnight, non-retryable', async () => {
    fake.state.limits.daily = 1;
    try {
      const paused = await destination
        .upsert('leads', [lead('3', 'b@example.com')])
        .catch((e) => e);
      expect(paused).toBeInstanceOf(DestinationPausedError);
      const next = new Date(fake.state.now());
      next.setUTCHours(24, 0, 0, 0);
      expect((paused as DestinationPausedError).resumeAt).toBe(next.toISOString());
      const failure = toActivityFailure(paused) as ApplicationFailure;
      expect(failure).toBeInstanceOf(ApplicationFailure);
      expect(failure.type).toBe('DestinationPausedError');
      expect(failure.nonRetryable).toBe(true);
      expect(failure.details).toEqual([{ resumeAt: next.toISOString() }]);
    } finally {
      fake.state.limits.daily = 625_000;
    }
  });

  it("DAILY at a batch's associations: the pause says the deals written, in part, and the next write links them", async () => {
    const read = await fetch(`${fake.baseUrl}/crm/v3/properties/deals/ebs_lead_id`, {
      headers: { authorization: `Bearer ${fake.token}` },
    });
    const used =
      fake.state.limits.daily - Number(read.headers.get('x-hubspot-ratelimit-daily-remaining'));
    // The batch's contacts and its deals, then the day's allowance is spent.
    fake.state.limits.daily = used + 2;
    const batch = [lead('41', 'cut-a@example.com'), lead('42', 'cut-b@example.com')];
    const deals = () =>
      [...fake.state.objects.deals.values()].filter((d) =>
        ['41', '42'].includes(d.properties.ebs_lead_id ?? ''),
      );
    const linked = (deal: string) =>
      [...fake.state.dealContacts].some((p) => p.startsWith(`${deal}|`));
    try {
      const paused = await destination.upsert('leads', batch).catch((e: unknown) => e);
      expect(paused).toBeInstanceOf(DestinationPausedError);
      const part = (paused as DestinationPausedError).partial;
      const leftOut = {
        code: 'PAUSED',
        message: expect.stringMatching(
          /^its contacts .* left for after the pause: HubSpot's daily/,
        ) as string,
        partial: true,
      };
      expect(part).toEqual({
        indexes: [0, 1],
        result: {
          inserted: 2,
          updated: 0,
          unchanged: 0,
          keys: deals().map((d) => d.id),
          refused: [
            { index: 0, ...leftOut },
            { index: 1, ...leftOut },
          ],
        },
      });
      // The associations' call refused: the deals are not linked.
      for (const deal of deals()) expect(linked(deal.id)).toBe(false);
    } finally {
      fake.state.limits.daily = 625_000;
    }
    const again = await destination.upsert('leads', batch);
    expect(again).toMatchObject({ inserted: 0, updated: 2 });
    expect(again.refused).toBeUndefined();
    for (const deal of deals()) expect(linked(deal.id)).toBe(true);
  });

  it('a schema check HubSpot refuses (403: a scope the app lacks) says so, not that setup is missing', async () => {
    const checker = new HubSpotDestination({ baseUrl: fake.baseUrl, token: fake.token });
    fake.state.fault = { status: 403, count: 1 };
    const failed: unknown = await checker.ensureSchema([]).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(DestinationWriteError);
    expect((failed as Error).message).toBe(
      "HubSpot answered 403 to GET /crm/v3/properties/deals/ebs_lead_id: injected fault (the private app's scopes: see docs/crm.md, HubSpot setup)",
    );
    // Once HubSpot answers, the check passes: the properties are there.
    await expect(checker.ensureSchema([])).resolves.toEqual({
      createdTables: [],
      addedColumns: [],
    });
  });

  it('a read of the contact properties HubSpot refuses (403) names the scope it needs', async () => {
    const client = new HubSpotClient({ baseUrl: fake.baseUrl, token: fake.token });
    fake.state.fault = { status: 403, count: 1 };
    const failed: unknown = await unsuitedMapping(client, hubspotMapping({})).catch(
      (e: unknown) => e,
    );
    expect(failed).toBeInstanceOf(DestinationWriteError);
    expect((failed as Error).message).toBe(
      'HubSpot answered 403 to GET /crm/v3/properties/contacts: injected fault: the private app needs the scope crm.schemas.contacts.read (docs/crm.md, HubSpot setup)',
    );
  });

  it('a key property made without unique values is named as such: setup cannot fix it', async () => {
    const portal = await startHubSpotFake({ adminToken: 'crm-errors-admin' });
    try {
      await setupHubSpot({ baseUrl: portal.baseUrl, token: portal.token });
      const made = portal.state.properties.deals.get('ebs_event_id');
      if (made) made.hasUniqueValue = false;
      const failed: unknown = await new HubSpotDestination({
        baseUrl: portal.baseUrl,
        token: portal.token,
      })
        .ensureSchema([])
        .catch((e: unknown) => e);
      expect(failed).toBeInstanceOf(DestinationSchemaError);
      expect((failed as Error).message).toMatch(
        /^HubSpot deal property ebs_event_id exists without unique values, which HubSpot cannot change: delete it in HubSpot/,
      );
    } finally {
      await portal.close();
    }
  });

  it('a mapping that puts a column into a deal property of a type that cannot take it is refused at the start, in one line', async () => {
    await makeProperty(fake, 'deals', 'guest_count', 'number');
    const checked = (mapping: object, mappingFile?: string) =>
      new HubSpotDestination({
        baseUrl: fake.baseUrl,
        token: fake.token,
        mapping,
        ...(mappingFile ? { mappingFile } : {}),
      })
        .ensureSchema([])
        .then(
          () => undefined,
          (e: unknown) => e,
        );
    const inputs = fake.state.counters.upsertInputs;
    const text = await checked({ events: { deal: { guest_count: 'title' } } });
    expect(text).toBeInstanceOf(DestinationSchemaError);
    expect((text as Error).message).toBe(
      "EBSYNC_HUBSPOT_MAPPING events.deal.guest_count='title' is not allowed: HubSpot deal property guest_count is of type number, which takes a money or number column (cents, integer, number), and title is text (docs/mirror.md, Tables)",
    );
    const day = await checked(
      { leads: { deal: { amount: 'event_date', closedate: 'subject' } } },
      '/etc/ebsync.json',
    );
    expect((day as Error).message).toBe(
      "crm.hubspot.mapping.leads.deal.amount in /etc/ebsync.json='event_date' is not allowed: HubSpot deal property amount is of type number, which takes a money or number column (cents, integer, number), and event_date is date; crm.hubspot.mapping.leads.deal.closedate in /etc/ebsync.json='subject' is not allowed: HubSpot deal property closedate is of type datetime, which takes a date or time column (date, timestamp), and subject is text (docs/mirror.md, Tables)",
    );
    expect(fake.state.counters.upsertInputs).toBe(inputs);
    // A number column into it, and text into text properties, are fine.
    expect(await checked({ events: { deal: { guest_count: 'starting_balance_cents' } } })).toBe(
      undefined,
    );
  });

  it('a mapping that puts a column into a contact property of a type that cannot take it, or one the portal lacks, is refused at the start and by setup', async () => {
    const portal = await startHubSpotFake({ adminToken: 'crm-errors-admin' });
    try {
      await makeProperty(portal, 'contacts', 'wedding_day', 'date');
      const settings = { baseUrl: portal.baseUrl, token: portal.token };
      await setupHubSpot(settings);
      const mapping = { leads: { contact: { wedding_day: 'subject', venue_size: 'venue_name' } } };
      const line =
        "EBSYNC_HUBSPOT_MAPPING leads.contact.wedding_day='subject' is not allowed: HubSpot contact property wedding_day is of type date, which takes a date column (date), and subject is text; EBSYNC_HUBSPOT_MAPPING leads.contact.venue_size='venue_name' is not allowed: HubSpot has no contact property venue_size (create it there, or map the column to one it has) (docs/mirror.md, Tables)";
      const failed: unknown = await new HubSpotDestination({ ...settings, mapping })
        .ensureSchema([])
        .catch((e: unknown) => e);
      expect(failed).toBeInstanceOf(DestinationSchemaError);
      expect((failed as Error).message).toBe(line);
      const refused: unknown = await setupHubSpot(settings, hubspotMapping(mapping)).catch(
        (e: unknown) => e,
      );
      expect(refused).toBeInstanceOf(DestinationSchemaError);
      expect((refused as Error).message).toBe(line);
      // A date column into it is fine, as is the default contact mapping (text into text).
      const fine = { leads: { contact: { wedding_day: 'event_date' } } };
      await expect(
        new HubSpotDestination({ ...settings, mapping: fine }).ensureSchema([]),
      ).resolves.toBeDefined();
      expect(portal.state.counters.upsertInputs).toBe(0);
    } finally {
      await portal.close();
    }
  });

  it('setup that HubSpot refuses (403) says why, not that the property it did not make is missing', async () => {
    const portal = await startHubSpotFake({ adminToken: 'crm-errors-admin' });
    try {
      const settings = { baseUrl: portal.baseUrl, token: portal.token };
      portal.state.fault = { status: 403, count: 1 };
      const failed: unknown = await setupHubSpot(settings).catch((e: unknown) => e);
      expect(failed).toBeInstanceOf(DestinationWriteError);
      expect((failed as Error).message).toBe(
        "HubSpot answered 403 to POST /crm/v3/properties/deals: injected fault (the private app's scopes: see docs/crm.md, HubSpot setup)",
      );
      await expect(setupHubSpot(settings)).resolves.toEqual([
        { property: 'ebs_lead_id', outcome: 'created' },
        { property: 'ebs_event_id', outcome: 'created' },
      ]);
    } finally {
      await portal.close();
    }
  });

  it('setup at an address that is not the API origin (a path after it) names the setting', async () => {
    const failed: unknown = await setupHubSpot({
      baseUrl: `${fake.baseUrl}/crm/v3`,
      token: fake.token,
    }).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(DestinationTargetError);
    expect((failed as Error).message).toMatch(
      /^HubSpot answered 404 to POST \/crm\/v3\/properties\/deals: .*: check EBSYNC_HUBSPOT_URL \(HubSpot's API origin, https:\/\/api\.hubapi\.com, with no path\)$/,
    );
  });

  it("DAILY: the pause ends at the portal's midnight, when HubSpot resets the limit, not UTC's", async () => {
    // A portal at UTC-5 whose day's allowance is spent once it has told its time zone.
    const portal = await handMadePortal({
      spent: true,
      accountInfo: (response) => {
        response.setHeader('date', SPENT_AT);
        response.end(
          JSON.stringify({
            portalId: 1,
            timeZone: 'US/Eastern',
            utcOffsetMilliseconds: -18_000_000,
          }),
        );
      },
    });
    try {
      const paused: unknown = await new HubSpotDestination({
        baseUrl: portal.baseUrl,
        token: 'pat-na1-daily',
      })
        .ensureSchema([])
        .catch((e: unknown) => e);
      expect(paused).toBeInstanceOf(DestinationPausedError);
      // 18:30 in New York: its midnight is 05:00 UTC; midnight UTC would meet a spent limit.
      expect((paused as DestinationPausedError).resumeAt).toBe('2026-12-07T05:00:00.000Z');
    } finally {
      await portal.close();
    }
    // East of UTC the portal's midnight comes first: 00:30 in Paris is 23:00 UTC the next day.
    expect(nextPortalMidnight(Date.parse('2026-12-06T23:30:00Z'), 3_600_000)).toBe(
      '2026-12-07T23:00:00.000Z',
    );
    // By the zone's name, daylight saving is the midnight's own: New York's is 04:00 UTC in
    // summer, and on the night clocks move (8 March 2026) the offset after the change counts.
    expect(nextPortalMidnight(Date.parse('2026-07-06T23:30:00Z'), 'US/Eastern')).toBe(
      '2026-07-07T04:00:00.000Z',
    );
    expect(nextPortalMidnight(Date.parse('2026-03-08T06:00:00Z'), 'America/New_York')).toBe(
      '2026-03-09T04:00:00.000Z',
    );
  });

  it("a portal that cannot tell its time zone now (a 500) leaves the pass going, the pause at UTC's midnight", async () => {
    const portal = await handMadePortal({ accountInfo: internalError });
    try {
      const destination = new HubSpotDestination({
        baseUrl: portal.baseUrl,
        token: 'pat-na1-clockless',
      });
      await expect(destination.ensureSchema([])).resolves.toBeDefined();
      portal.spend();
      const paused: unknown = await destination
        .markDeleted('leads', ['1'])
        .catch((e: unknown) => e);
      expect(paused).toBeInstanceOf(DestinationPausedError);
      expect((paused as DestinationPausedError).resumeAt).toBe('2026-12-07T00:00:00.000Z');
    } finally {
      await portal.close();
    }
  });

  it('a clock that cannot be read costs one re-read per pause, not one per DAILY refusal', async () => {
    let date = SPENT_AT;
    let reads = 0;
    const portal = await handMadePortal({
      accountInfo: (response) => {
        reads += 1;
        internalError(response);
      },
      date: () => date,
    });
    try {
      const destination = new HubSpotDestination({
        baseUrl: portal.baseUrl,
        token: 'pat-na1-clock-failing',
      });
      await destination.ensureSchema([]);
      expect(reads).toBe(1);
      portal.spend();
      const pausedUntil = async (): Promise<string | undefined> => {
        const paused: unknown = await destination
          .markDeleted('leads', ['1'])
          .catch((e: unknown) => e);
        expect(paused).toBeInstanceOf(DestinationPausedError);
        return (paused as DestinationPausedError).resumeAt;
      };
      // The first refusal reads the clock once more; it fails: midnight UTC.
      expect(await pausedUntil()).toBe('2026-12-07T00:00:00.000Z');
      expect(reads).toBe(2);
      // More refusals within that pause (other activities, a sync run again) do not read it.
      expect(await pausedUntil()).toBe('2026-12-07T00:00:00.000Z');
      expect(await pausedUntil()).toBe('2026-12-07T00:00:00.000Z');
      expect(reads).toBe(2);
      // Once that pause is over, a refusal may read it again (it may be readable now).
      date = 'Mon, 07 Dec 2026 00:30:00 GMT';
      expect(await pausedUntil()).toBe('2026-12-08T00:00:00.000Z');
      expect(reads).toBe(3);
    } finally {
      await portal.close();
    }
  });

  it("an account-info answer past 64 KiB is not read: the pause stays at UTC's midnight and the pass goes on", async () => {
    // A valid answer naming a zone, padded past the cap: read whole, it would move the pause.
    const padded = JSON.stringify({
      portalId: 1,
      padding: 'x'.repeat(100 * 1024),
      timeZone: 'US/Eastern',
      utcOffsetMilliseconds: -18_000_000,
    });
    const portal = await handMadePortal({ accountInfo: (response) => response.end(padded) });
    try {
      const destination = new HubSpotDestination({
        baseUrl: portal.baseUrl,
        token: 'pat-na1-oversized',
      });
      await expect(destination.ensureSchema([])).resolves.toBeDefined();
      portal.spend();
      const paused: unknown = await destination
        .markDeleted('leads', ['1'])
        .catch((e: unknown) => e);
      expect(paused).toBeInstanceOf(DestinationPausedError);
      expect((paused as DestinationPausedError).resumeAt).toBe('2026-12-07T00:00:00.000Z');
    } finally {
      await portal.close();
    }
  });

  describe("DAILY before the portal's clock is known", () => {
    let portal: HubSpotFake;
    /** A portal in New York whose day's allowance is spent from its first call, at 18:30 there. */
    beforeAll(async () => {
      portal = await startHubSpotFake({ adminToken: 'crm-errors-admin' });
      await setupHubSpot({ baseUrl: portal.baseUrl, token: portal.token });
    });
    afterAll(() => portal?.close());
    const spentAt = async (countsAgainstLimits: boolean) => {
      portal.state.reset();
      const answer = await fetch(`${portal.baseUrl}/_admin/account`, {
        method: 'PUT',
        headers: { 'x-admin-token': 'crm-errors-admin', 'content-type': 'application/json' },
        body: JSON.stringify({ timeZone: 'US/Eastern', countsAgainstLimits }),
      });
      expect(answer.status).toBe(200);
      portal.state.limits.daily = 0;
      portal.state.clockOffsetMs = Date.parse('2026-12-06T23:30:00Z') - Date.now();
      return new HubSpotDestination({ baseUrl: portal.baseUrl, token: portal.token });
    };
    const details = 'GET /account-info/v3/details';

    it("a write before any schema check (a worker restarted mid-pass) reads the clock then: the pause ends at the portal's midnight", async () => {
      const paused: unknown = await (
        await spentAt(false)
      )
        .upsert('leads', [lead('d1', 'd1@example.com')])
        .catch((e: unknown) => e);
      expect(paused).toBeInstanceOf(DestinationPausedError);
      expect((paused as DestinationPausedError).resumeAt).toBe('2026-12-07T05:00:00.000Z');
      expect(portal.state.counters.requests[details]).toBe(1);
    });

    it("the schema check's own read, answered while the allowance is spent, sets the portal's midnight", async () => {
      const paused: unknown = await (
        await spentAt(false)
      )
        .ensureSchema([])
        .catch((e: unknown) => e);
      expect(paused).toBeInstanceOf(DestinationPausedError);
      expect((paused as DestinationPausedError).resumeAt).toBe('2026-12-07T05:00:00.000Z');
    });

    it('an account-info read that counts against the spent limit is not asked again within its pause: midnight UTC', async () => {
      const destination = await spentAt(true);
      const paused: unknown = await destination.ensureSchema([]).catch((e: unknown) => e);
      expect(paused).toBeInstanceOf(DestinationPausedError);
      expect((paused as DestinationPausedError).resumeAt).toBe('2026-12-07T00:00:00.000Z');
      expect(portal.state.counters.requests[details]).toBe(1);
      // A later refused write within that pause does not ask: it would be refused too.
      const again: unknown = await destination
        .upsert('leads', [lead('d2', 'd2@example.com')])
        .catch((e: unknown) => e);
      expect((again as DestinationPausedError).resumeAt).toBe('2026-12-07T00:00:00.000Z');
      expect(portal.state.counters.requests[details]).toBe(1);
      // Past midnight UTC (still before New York's, so the limit is still spent) it asks once
      // more; refused again, the pause goes to the next midnight UTC.
      portal.state.clockOffsetMs = Date.parse('2026-12-07T00:30:00Z') - Date.now();
      const later: unknown = await destination
        .upsert('leads', [lead('d3', 'd3@example.com')])
        .catch((e: unknown) => e);
      expect((later as DestinationPausedError).resumeAt).toBe('2026-12-08T00:00:00.000Z');
      expect(portal.state.counters.requests[details]).toBe(2);
    });
  });

  it('a short-window rate limit retries after the window, with jitter', () => {
    const failure = toActivityFailure(
      new DestinationRateLimitedError('HubSpot rate limited', 10_000),
      () => 0.5,
    ) as ApplicationFailure;
    expect(failure.nonRetryable).toBe(false);
    expect(failure.nextRetryDelay).toBe(11_000);
  });
});

describe('HubSpot settings', () => {
  it('--to hubspot names the portal of the settings; without a token it says which to set', () => {
    expect(parseDestinationTarget('hubspot')).toEqual({ kind: 'hubspot' });
    expect(() => openDestination(databaseOpeners, 'hubspot', loadConfig({}).crm)).toThrow(
      "destination hubspot needs a private-app token: set EBSYNC_HUBSPOT_TOKEN in the workers' environment and restart them (see docs/crm.md)",
    );
    const opened = openDestination(databaseOpeners, 'hubspot', {
      hubspot: { baseUrl: fake.baseUrl, token: fake.token },
    });
    expect(opened.describe()).toMatchObject({
      kind: 'hubspot',
      id: `hubspot:${new URL(fake.baseUrl).host}`,
    });
    expect(JSON.stringify(opened.describe())).not.toContain(fake.token);
  });

  it('refuses plain HTTP to a non-loopback HubSpot address', () => {
    let thrown: unknown;
    try {
      loadConfig({ EBSYNC_HUBSPOT_URL: 'http://crm.example.com' });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    expect((thrown as ConfigError).lines).toEqual([
      "EBSYNC_HUBSPOT_URL='http://crm.example.com' is not allowed: expected an https:// URL (http:// only to loopback in development)",
    ]);
  });

  it('takes the mapping as an object in the config file, and refuses a bad one in one line', () => {
    const file = join(dir, 'config.json');
    writeFileSync(
      file,
      JSON.stringify({ crm: { hubspot: { mapping: { leads: { onDelete: 'keep' } } } } }),
    );
    const config = loadConfig({ EBSYNC_CONFIG: file, EBSYNC_HUBSPOT_TOKEN: 'pat-secret-1' });
    expect(config.crm.hubspot.mapping).toEqual({ leads: { onDelete: 'keep' } });
    expect(config.crm.hubspot.baseUrl).toBe('https://api.hubapi.com');
    let thrown: unknown;
    try {
      loadConfig({ EBSYNC_HUBSPOT_MAPPING: '{"leads":{"onDelete":"drop"}}' });
    } catch (error) {
      thrown = error;
    }
    expect((thrown as ConfigError).lines[0]).toMatch(
      /^EBSYNC_HUBSPOT_MAPPING='.*' is not allowed: leads.onDelete: expected archive or keep/,
    );
  });
});
