import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { exitCodeOf, summaryText } from '../../cli/mirror-summary.js';
import type { MirrorDeps } from '../../activities/mirror/pass.js';
import { writeRecords } from '../../activities/mirror/write-records.js';
import { PipedriveDestination } from '../../destinations/pipedrive-destination.js';
import { canonicalRecord } from '../../records/canonical.js';
import { openLedger } from '../../store/open-ledger.js';
import { setupPipedrive } from '../../destinations/pipedrive-setup.js';
import { startPipedriveFake, type PipedriveFake } from '../../sandbox/crm/fakes.js';
import type { PipedriveRecord } from '../../sandbox/crm/pipedrive/state.js';
import type { MirrorSummary } from '../../workflows/mirror-types.js';
import { sourceIds } from '../mirror/source-truth.js';
import { EVENTS, LEADS, useCrmMirror } from './crm-mirror.js';

const crm = useCrmMirror('pipedrive', startPipedriveFake, (fake) => ({
  pipedrive: { baseUrl: fake.baseUrl, token: fake.token },
}));

/** The key of a deal custom field, by name (setup made it). */
const fieldKey = (fake: PipedriveFake, name: string): string =>
  [...fake.state.fields.deals.values()].find((f) => f.name === name)?.key ?? '';
const dealsKeyed = (fake: PipedriveFake, name: string): PipedriveRecord[] => {
  const key = fieldKey(fake, name);
  return fake.state.live('deals').filter((d) => d.custom_fields[key]);
};
const totalUpdated = (fake: PipedriveFake): number =>
  fake.state.counters.updated.persons + fake.state.counters.updated.deals;

describe('Pipedrive fake', () => {
  it('keeps the envelope, the rate headers and x-api-token; custom fields get 40-character keys', async () => {
    const fake = await crm.newFake();
    const lines = await setupPipedrive({ baseUrl: fake.baseUrl, token: fake.token });
    expect(lines.map((l) => l.outcome)).toEqual(['created', 'created']);
    for (const line of lines) expect(line.key).toMatch(/^[0-9a-f]{40}$/);
    const again = await setupPipedrive({ baseUrl: fake.baseUrl, token: fake.token });
    expect(again).toEqual(lines.map((l) => ({ ...l, outcome: 'exists' })));

    const post = (token: string) =>
      fetch(`${fake.baseUrl}/api/v2/persons`, {
        method: 'POST',
        headers: { 'x-api-token': token, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Ada', emails: [{ value: 'ada@example.com' }] }),
      });
    const made = await post(fake.token);
    expect(made.status).toBe(200);
    expect(made.headers.get('x-ratelimit-limit')).toBe('80');
    expect(made.headers.get('x-daily-requests-left')).toBe('9997');
    expect(await made.json()).toMatchObject({ success: true, data: { name: 'Ada' } });
    const refused = await post('wrong');
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({ success: false, error: 'unauthorized access' });
    const search = await fetch(
      `${fake.baseUrl}/api/v2/persons/search?term=ADA%40example.com&fields=email&exact_match=true`,
      { headers: { 'x-api-token': fake.token } },
    );
    expect(((await search.json()) as { data: { items: unknown[] } }).data.items).toHaveLength(1);
  });
});

describe('mirror into Pipedrive (2,000 leads, 300 events)', () => {
  let fake: PipedriveFake;
  let deps: MirrorDeps;
  let first: MirrorSummary;

  beforeAll(async () => {
    fake = await crm.newFake();
    // A roomy window: this block is about what is written (pacing is tested below).
    fake.state.limits = { perWindow: 5_000, dailyWrites: 100_000 };
    deps = crm.depsFor(fake);
    await setupPipedrive({ baseUrl: fake.baseUrl, token: fake.token });
    first = await crm.runPass(deps, { subjects: ['leads', 'events'], mode: 'full' });
  }, 600_000);

  it('fails with the setup command to run when the deal fields are missing', async () => {
    const bare = await crm.newFake();
    const failure = await crm.failureOf(crm.depsFor(bare), { subjects: ['events'], mode: 'full' });
    expect(failure).toMatch(/mirror pass failed: .*run 'ebsync destinations setup pipedrive' once/);
    expect(bare.state.counters.writes).toBe(0);
  });

  it('makes a deal per lead and per event, a person per distinct lead email, linked', () => {
    expect(first.phase).toBe('done');
    const leadKey = fieldKey(fake, 'ebs_lead_id');
    const leadDeals = dealsKeyed(fake, 'ebs_lead_id');
    expect(new Set(leadDeals.map((d) => d.custom_fields[leadKey]))).toEqual(
      sourceIds(crm.sb, 'lead'),
    );
    expect(leadDeals).toHaveLength(LEADS);
    const eventKey = fieldKey(fake, 'ebs_event_id');
    const eventDeals = dealsKeyed(fake, 'ebs_event_id');
    expect(new Set(eventDeals.map((d) => d.custom_fields[eventKey]))).toEqual(
      sourceIds(crm.sb, 'event'),
    );
    expect(eventDeals).toHaveLength(EVENTS);
    const leadEmails = crm.leadEmails();
    const personByEmail = new Map<string, PipedriveRecord>();
    for (const p of fake.state.live('persons')) {
      for (const e of p.fields.emails as { value: string }[]) personByEmail.set(e.value, p);
    }
    for (const email of leadEmails) expect(personByEmail.has(email ?? '')).toBe(true);
    // No email was made into two persons.
    expect(personByEmail.size).toBe(fake.state.live('persons').length);
    const linked = leadDeals.filter((d) => typeof d.fields.person_id === 'number');
    expect(linked.length).toBeGreaterThan(0);
  });

  it('sets the deal status from the event status through the default mapping', () => {
    const statusOf: Record<string, string> = {
      proposal: 'open',
      confirmed: 'won',
      completed: 'won',
      canceled: 'lost',
    };
    const statuses = crm.eventStageKeys();
    // Canceled and completed are booleans of the event, not status values.
    expect([...statuses.values()]).toContain('canceled');
    const key = fieldKey(fake, 'ebs_event_id');
    const deals = dealsKeyed(fake, 'ebs_event_id');
    expect(new Set(deals.map((d) => d.fields.status)).size).toBeGreaterThan(1);
    for (const deal of deals) {
      const status = statuses.get(deal.custom_fields[key] ?? '') ?? '';
      expect(deal.fields.status).toBe(statusOf[status] ?? 'open');
    }
  });

  it('writes nothing on a second pass; one edited lead updates one Pipedrive record', async () => {
    const before = structuredClone(fake.state.counters);
    const again = await crm.runPass(deps, { subjects: ['leads', 'events'], mode: 'full' });
    expect(again.phase).toBe('done');
    expect(again.counts.written).toBe(0);
    expect(fake.state.counters.writes).toBe(before.writes);
    expect(fake.state.counters.created).toEqual(before.created);

    const [leadId] = [...sourceIds(crm.sb, 'lead')].slice(42, 43);
    crm.sb.admin.patchRecord('lead', Number(leadId), { first_name: 'Edited' });
    const searchesBefore = fake.state.counters.searches;
    const updatedBefore = totalUpdated(fake);
    const edited = await crm.runPass(deps, { subjects: ['leads'], mode: 'incremental' });
    expect(edited.phase).toBe('done');
    expect(totalUpdated(fake)).toBe(updatedBefore + 1);
    expect(fake.state.counters.updated.persons).toBe(before.updated.persons + 1);
    expect(fake.state.counters.created).toEqual(before.created);
    // Updated by the ids the ledger kept: no search.
    expect(fake.state.counters.searches).toBe(searchesBefore);
    const email = crm.leadEmail(leadId);
    const person = fake.state
      .live('persons')
      .find((p) =>
        (p.fields.emails as { value: string }[]).some((e) => e.value === email?.toLowerCase()),
      );
    expect(String(person?.fields.name)).toMatch(/^Edited\b/);
  }, 600_000);

  it('counts the records written without a contact, for want of an email address, and stays complete', async () => {
    await crm.expectWithoutEmailCounted(first, deps);
  }, 300_000);

  it('deletes the deal of a deleted lead on the next full pass (onDelete: delete)', async () => {
    const [leadId] = [...sourceIds(crm.sb, 'lead')].slice(7, 8);
    crm.sb.admin.deleteRecord('lead', Number(leadId));
    const deletedBefore = fake.state.counters.deleted;
    const pass = await crm.runPass(deps, { subjects: ['leads'], mode: 'full' });
    expect(pass.phase).toBe('done');
    expect(pass.counts.deleted).toBe(1);
    expect(fake.state.counters.deleted).toBe(deletedBefore + 1);
    const key = fieldKey(fake, 'ebs_lead_id');
    const deal = [...fake.state.records.deals.values()].find(
      (d) => d.custom_fields[key] === leadId,
    );
    expect(deal?.is_deleted).toBe(true);
  }, 600_000);

  // Nothing is written for such a lead: a pass that counted it written ended complete, exit 0.
  it('under createDeal: false, a lead with no email address is refused: named in the summary, exit 3', async () => {
    const noDeals = new PipedriveDestination({
      baseUrl: fake.baseUrl,
      token: fake.token,
      mapping: { leads: { createDeal: false } },
    });
    crm.closeLater(noDeals);
    const [leadId] = [...sourceIds(crm.sb, 'lead')].slice(500, 501);
    crm.sb.admin.patchRecord('lead', Number(leadId), { email: null });
    const pass = await crm.runPass(
      { ...deps, destination: () => Promise.resolve(noDeals) },
      { subjects: ['leads'], mode: 'incremental' },
    );
    expect(pass.counts).toMatchObject({ written: 0, refused: 1 });
    expect(pass.counts.withoutEmail ?? 0).toBe(0);
    expect(exitCodeOf(pass)).toBe(3);
    expect(summaryText(pass)).toContain(
      `leads ${leadId} refused: NOTHING_TO_WRITE: no email address, and EBSYNC_PIPEDRIVE_MAPPING leads.createDeal is false`,
    );
  }, 300_000);
});

/** An event record as the mirror hands it over, with the ids the ledger kept when given. */
const event = (id: string, email: string, destinationKey?: string) => ({
  resource: 'events' as const,
  id,
  attributes: { customer_emails: email, status: 'confirmed' },
  raw: {},
  ...(destinationKey === undefined ? {} : { destinationKey }),
});

describe('Pipedrive persons', () => {
  const lead = (id: string, email: string) => ({
    resource: 'leads' as const,
    id,
    attributes: { email, first_name: 'Ada', last_name: null },
    raw: {},
  });

  // Leads and events are written by concurrent activities: a lead and an event of one
  // customer, each searching before either created, once made two persons in CI.
  it('makes one person for an email that concurrent batches of leads and events share', async () => {
    const fake = await crm.newFake();
    await setupPipedrive({ baseUrl: fake.baseUrl, token: fake.token });
    const destination = new PipedriveDestination({ baseUrl: fake.baseUrl, token: fake.token });
    const [leads, events] = await Promise.all([
      destination.upsert('leads', [lead('1', 'ada@example.com'), lead('2', 'bo@example.com')]),
      destination.upsert('events', [event('7', 'ada@example.com'), event('8', 'bo@example.com')]),
      destination.upsert('events', [event('9', 'ada@example.com')]),
    ]);
    const persons = fake.state.live('persons');
    expect(persons).toHaveLength(2);
    const idOf = (key: string): string => /p(\d+)/.exec(key)?.[1] ?? '';
    expect(idOf(leads.keys[0]!)).toBe(idOf(events.keys[0]!));
    expect(idOf(leads.keys[1]!)).toBe(idOf(events.keys[1]!));
    const ada = persons.find((p) => idOf(leads.keys[0]!) === String(p.id));
    // The lead's name, whichever batch found or made the person first.
    expect(ada?.fields.name).toBe('Ada');
  });

  it('does not search again for a person it found or made: a search may trail the writes', async () => {
    const fake = await crm.newFake();
    await setupPipedrive({ baseUrl: fake.baseUrl, token: fake.token });
    const destination = new PipedriveDestination({ baseUrl: fake.baseUrl, token: fake.token });
    await destination.upsert('leads', [lead('1', 'ada@example.com')]);
    const searches = fake.state.counters.searches;
    const again = await destination.upsert('events', [event('7', 'ada@example.com')]);
    // The event's deal is searched for by its id; its person is not.
    expect(fake.state.counters.searches - searches).toBe(1);
    expect(fake.state.live('persons')).toHaveLength(1);
    expect(again.keys[0]).toMatch(/^p\d+\.d\d+$/);
  });
});

// A deal's title is required: a lead whose subject was emptied (or only spaces), or an event
// whose title was, sent that as the title, and Pipedrive refused the record on every pass.
describe('Pipedrive deal titles', () => {
  const lead = (id: string, subject: string | null, destinationKey?: string) => ({
    resource: 'leads' as const,
    id,
    attributes: { email: `lead${id}@example.com`, subject },
    raw: {},
    ...(destinationKey === undefined ? {} : { destinationKey }),
  });

  it('names a deal Lead N or Event N when its subject or title is empty or blank', async () => {
    const fake = await crm.newFake();
    await setupPipedrive({ baseUrl: fake.baseUrl, token: fake.token });
    const destination = new PipedriveDestination({ baseUrl: fake.baseUrl, token: fake.token });
    crm.closeLater(destination);
    const made = await destination.upsert('leads', [
      lead('1', 'Wedding'),
      lead('2', ''),
      lead('3', '   '),
    ]);
    expect(made.refused).toBeUndefined();
    // Changed afterwards: the update (a PATCH by the kept ids) names it the same way.
    const changed = await destination.upsert('leads', [lead('1', '', made.keys[0])]);
    expect(changed.refused).toBeUndefined();
    const blankEvent = {
      resource: 'events' as const,
      id: '7',
      attributes: { customer_emails: 'ada@example.com', status: 'confirmed', title: '' },
      raw: {},
    };
    expect((await destination.upsert('events', [blankEvent])).refused).toBeUndefined();
    const titles = fake.state
      .live('deals')
      .map((d) => d.fields.title)
      .sort();
    expect(titles).toEqual(['Event 7', 'Lead 1', 'Lead 2', 'Lead 3']);
  });
});

// The mirror keeps timestamps in UTC: a deal closing on the day of starts_at took the UTC day,
// so an event at 7:30 PM in New York (00:30 the next day in UTC) closed a day late.
describe('Pipedrive event close dates', () => {
  it("closes an event's deal on its start day in the business time zone", async () => {
    const fake = await crm.newFake();
    await setupPipedrive({ baseUrl: fake.baseUrl, token: fake.token });
    const destination = new PipedriveDestination({ baseUrl: fake.baseUrl, token: fake.token });
    crm.closeLater(destination);
    const evening = {
      resource: 'events' as const,
      id: '27',
      attributes: {
        customer_emails: 'ada@example.com',
        status: 'confirmed',
        title: 'Evening',
        starts_at: '2025-12-15T00:30:00.000Z',
        starts_at_date: '2025-12-14',
      },
      raw: {},
    };
    expect((await destination.upsert('events', [evening])).refused).toBeUndefined();
    expect(fake.state.live('deals').map((d) => d.fields.expected_close_date)).toEqual([
      '2025-12-14',
    ]);
  });
});

describe('Pipedrive leads without deals (createDeal: false)', () => {
  const lead = (id: string, email: string | null) => ({
    resource: 'leads' as const,
    id,
    attributes: { email, first_name: 'Ada' },
    raw: {},
  });

  /** A new fake, set up, and a destination into it whose leads make no deal. */
  const withoutDeals = async () => {
    const fake = await crm.newFake();
    await setupPipedrive({ baseUrl: fake.baseUrl, token: fake.token });
    const destination = new PipedriveDestination({
      baseUrl: fake.baseUrl,
      token: fake.token,
      mapping: { leads: { createDeal: false } },
    });
    crm.closeLater(destination);
    return { fake, destination };
  };

  // Such a lead is only a person, found by email: one without an address had nothing written
  // for it, yet counted as written, and the pass ended complete (exit 0).
  it('refuses a lead with no email address, saying why and what lets it through', async () => {
    const { fake, destination } = await withoutDeals();
    const result = await destination.upsert('leads', [
      lead('1', 'ada@example.com'),
      lead('2', 'n/a'),
      lead('3', null),
    ]);
    const refusal = {
      code: 'NOTHING_TO_WRITE',
      message:
        'no email address, and EBSYNC_PIPEDRIVE_MAPPING leads.createDeal is false: such a lead is only a Pipedrive person, which needs one; give the lead an email or set createDeal to true',
    };
    expect(result.refused).toEqual([
      { index: 1, ...refusal },
      { index: 2, ...refusal },
    ]);
    expect(result.inserted).toBe(1);
    expect(result.updated).toBe(0);
    expect(result.withoutEmail).toBeUndefined();
    expect(fake.state.live('persons')).toHaveLength(1);
    expect(fake.state.live('deals')).toEqual([]);
    // A batch of such leads only is each one's refusal, not a failure of the batch.
    const none = await destination.upsert('leads', [lead('4', ''), lead('5', null)]);
    expect(none.refused?.map((r) => [r.index, r.code])).toEqual([
      [0, 'NOTHING_TO_WRITE'],
      [1, 'NOTHING_TO_WRITE'],
    ]);
    expect(none.inserted + none.updated).toBe(0);
  });

  // A slice read again in the same pass (after a worker was killed, or a write failed, its
  // batches already counted) sent the refused lead again and counted it refused twice.
  it('counts a lead refused once in a pass, however often the pass writes it', async () => {
    const { destination } = await withoutDeals();
    const dir = mkdtempSync(join(tmpdir(), 'ebsync-refused-once-'));
    const ledger = await openLedger(`sqlite:${join(dir, 'store.db')}`);
    const target = { connectionId: 'refused-once', ledger, destination };
    try {
      const records = [
        canonicalRecord('leads', { id: '1', type: 'lead', attributes: { email: 'a@example.com' } }),
        canonicalRecord('leads', { id: '2', type: 'lead', attributes: { email: null } }),
      ];
      const first = await writeRecords(target, 1, records);
      expect(first).toMatchObject({ written: 1, refused: 1, again: 0 });
      const again = await writeRecords(target, 1, records);
      expect(again).toMatchObject({ written: 0, refused: 0, unchanged: 0, again: 2 });
      // Its line is said again (the first may have been lost with its attempt).
      expect(again.refusals).toEqual([expect.stringMatching(/^leads 2 refused: NOTHING_TO_WRITE/)]);
      // The next pass counts it again, as it tries it again.
      const next = await writeRecords(target, 2, records);
      expect(next).toMatchObject({ written: 0, refused: 1, unchanged: 1, again: 0 });
    } finally {
      await ledger.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('Pipedrive refusals', () => {
  const lead = (id: string, budgetCents: number) => ({
    resource: 'leads' as const,
    id,
    attributes: {
      email: `lead${id}@example.com`,
      subject: `Lead ${id}`,
      estimated_budget_cents: budgetCents,
    },
    raw: {},
  });

  it('a record Pipedrive refuses (400) is reported by its index; the others are written', async () => {
    const fake = await crm.newFake();
    await setupPipedrive({ baseUrl: fake.baseUrl, token: fake.token });
    const destination = new PipedriveDestination({ baseUrl: fake.baseUrl, token: fake.token });
    // A negative deal value: Pipedrive (the fake) answers 400 to that deal only.
    const result = await destination.upsert('leads', [
      lead('1', 120_000),
      lead('2', -5_000),
      lead('3', 80_000),
    ]);
    expect(result.refused).toEqual([
      {
        index: 1,
        code: 'PIPEDRIVE_400',
        message: expect.stringMatching(
          /^Pipedrive answered 400 to POST \/api\/v2\/deals: value/,
        ) as string,
      },
    ]);
    expect(result.inserted).toBe(2);
    expect(result.keys[1]).toBe('2');
    const leadKey = fieldKey(fake, 'ebs_lead_id');
    const deals = fake.state.live('deals');
    expect(deals.map((d) => d.custom_fields[leadKey]).sort()).toEqual(['1', '3']);
    expect(deals.find((d) => d.custom_fields[leadKey] === '3')?.fields.value).toBe(800);
  });

  /** Leads of one customer (one email), named as given. */
  const ofAda = (id: string, firstName: string) => {
    const base = lead(id, 10_000);
    return {
      ...base,
      attributes: { ...base.attributes, email: 'ada@example.com', first_name: firstName },
    };
  };

  it("a person refused for one lead's values is written with the next lead's of that email", async () => {
    const fake = await crm.newFake();
    await setupPipedrive({ baseUrl: fake.baseUrl, token: fake.token });
    const destination = new PipedriveDestination({ baseUrl: fake.baseUrl, token: fake.token });
    await destination.ensureSchema([]);
    // The batch's first person write, lead 1's, is refused as a value Pipedrive does not take
    // would be. That says nothing of leads 2 and 3, whose values differ: they are written,
    // sharing one person, made with lead 2's values.
    fake.state.fault = { status: 400, count: 1, route: 'POST /api/v2/:entity' };
    const result = await destination.upsert('leads', [
      ofAda('1', 'Bad'),
      ofAda('2', 'Ada'),
      ofAda('3', 'Ada'),
    ]);
    expect(result.refused).toEqual([
      {
        index: 0,
        code: 'PIPEDRIVE_400',
        message: expect.stringMatching(
          /^Pipedrive answered 400 to POST \/api\/v2\/persons: injected fault/,
        ) as string,
      },
    ]);
    expect(result.inserted).toBe(2);
    const leadKey = fieldKey(fake, 'ebs_lead_id');
    const deals = fake.state.live('deals');
    expect(deals.map((d) => d.custom_fields[leadKey]).sort()).toEqual(['2', '3']);
    const persons = fake.state.live('persons');
    expect(persons.map((p) => p.fields.name)).toEqual(['Ada']);
    expect(new Set(deals.map((d) => d.fields.person_id))).toEqual(new Set([persons[0]?.id]));
  });

  it('a person refused for values all its leads share, or a refused search, is tried once', async () => {
    const fake = await crm.newFake();
    await setupPipedrive({ baseUrl: fake.baseUrl, token: fake.token });
    const destination = new PipedriveDestination({ baseUrl: fake.baseUrl, token: fake.token });
    await destination.ensureSchema([]);
    // The same values: trying them again for the next lead would be refused again. Every lead
    // of the batch refused the same way fails the write as one, with the reason.
    fake.state.fault = { status: 400, count: 1, route: 'POST /api/v2/:entity' };
    const same = [ofAda('1', 'Ada'), ofAda('2', 'Ada'), ofAda('3', 'Ada')];
    await expect(destination.upsert('leads', same)).rejects.toThrow(
      /^Pipedrive refused each of 3 leads the same way: Pipedrive answered 400 to POST \/api\/v2\/persons: injected fault/,
    );
    expect(fake.state.counters.requests['POST /api/v2/:entity']).toBe(1);
    // A refused search sent no values of a lead's: the others share its refusal.
    fake.state.fault = { status: 400, count: 1, route: 'GET /api/v2/:entity/search' };
    const searches = fake.state.counters.requests['GET /api/v2/:entity/search'] ?? 0;
    await expect(
      destination.upsert('leads', [ofAda('4', 'Bad'), ofAda('5', 'Ada')]),
    ).rejects.toThrow(/^Pipedrive refused each of 2 leads the same way: .*search/);
    expect(fake.state.counters.requests['GET /api/v2/:entity/search']).toBe(searches + 1);
    expect(fake.state.live('persons')).toEqual([]);
  });

  it('deal fields made again: the batch fails with the reason, and the next batch reads the new keys', async () => {
    const fake = await crm.newFake();
    await setupPipedrive({ baseUrl: fake.baseUrl, token: fake.token });
    const destination = new PipedriveDestination({ baseUrl: fake.baseUrl, token: fake.token });
    await destination.upsert('leads', [lead('1', 120_000)]);
    // Deleted in Pipedrive and made again by setup, while this destination (another worker's,
    // whose pass did not ensure the schema) holds the old keys.
    for (const [key, field] of fake.state.fields.deals) {
      if (field.name.startsWith('ebs_')) fake.state.fields.deals.delete(key);
    }
    await setupPipedrive({ baseUrl: fake.baseUrl, token: fake.token });
    await expect(destination.upsert('leads', [lead('2', 1_000), lead('3', 2_000)])).rejects.toThrow(
      /^Pipedrive refused each of 2 leads the same way: Pipedrive answered 400 to POST \/api\/v2\/deals: Unknown custom field/,
    );
    const again = await destination.upsert('leads', [lead('2', 1_000), lead('3', 2_000)]);
    expect(again.refused).toBeUndefined();
    expect(again.inserted).toBe(2);
  });

  it('a refusal of anything but one record still fails the write (403)', async () => {
    const fake = await crm.newFake();
    await setupPipedrive({ baseUrl: fake.baseUrl, token: fake.token });
    const destination = new PipedriveDestination({ baseUrl: fake.baseUrl, token: fake.token });
    await destination.ensureSchema([]);
    // Forbidden: the token's permissions, the same for every record.
    fake.state.fault = { status: 403, count: 100 };
    await expect(destination.upsert('leads', [lead('1', 120_000)])).rejects.toThrow(
      /Pipedrive answered 403 to /,
    );
  });
});

describe('Pipedrive persons gone', () => {
  it("links an event's deal to a person found again when its known person was deleted or merged away", async () => {
    const fake = await crm.newFake();
    await setupPipedrive({ baseUrl: fake.baseUrl, token: fake.token });
    const destination = new PipedriveDestination({ baseUrl: fake.baseUrl, token: fake.token });
    const first = await destination.upsert('events', [event('7', 'ada@example.com')]);
    const key = first.keys[0]!;
    const gone = Number(/p(\d+)/.exec(key)?.[1]);
    // Deleted in Pipedrive (a merge removes the duplicate the same way).
    const deleted = await fetch(`${fake.baseUrl}/api/v2/persons/${gone}`, {
      method: 'DELETE',
      headers: { 'x-api-token': fake.token },
    });
    expect(deleted.status).toBe(200);
    const again = await destination.upsert('events', [event('7', 'ada@example.com', key)]);
    const person = Number(/p(\d+)/.exec(again.keys[0]!)?.[1]);
    expect(person).not.toBe(gone);
    expect(fake.state.live('persons').map((p) => p.id)).toEqual([person]);
    const deal = fake.state.live('deals')[0];
    expect(deal?.fields.person_id).toBe(person);
  });
});

describe('Pipedrive deal fields made again', () => {
  it('are read again by the next pass, not kept from the first for the life of the worker', async () => {
    const fake = await crm.newFake();
    await setupPipedrive({ baseUrl: fake.baseUrl, token: fake.token });
    const destination = new PipedriveDestination({ baseUrl: fake.baseUrl, token: fake.token });
    await destination.ensureSchema([]);
    await destination.upsert('events', [event('7', 'ada@example.com')]);
    // Deleted in Pipedrive, then made again by setup: new keys.
    for (const [key, field] of fake.state.fields.deals) {
      if (field.name.startsWith('ebs_')) fake.state.fields.deals.delete(key);
    }
    await setupPipedrive({ baseUrl: fake.baseUrl, token: fake.token });
    // What the next pass does first.
    await destination.ensureSchema([]);
    const again = await destination.upsert('events', [event('8', 'bo@example.com')]);
    expect(again.keys[0]).toMatch(/^p\d+\.d\d+$/);
    const eventKey = fieldKey(fake, 'ebs_event_id');
    expect(fake.state.live('deals').filter((d) => d.custom_fields[eventKey] === '8')).toHaveLength(
      1,
    );
  });
});

describe('Pipedrive rate limits', () => {
  it('429 of the 2-second window: paced from the rate headers, and nothing fails', async () => {
    const fake = await crm.newFake();
    await setupPipedrive({ baseUrl: fake.baseUrl, token: fake.token });
    fake.state.limits = { perWindow: 60, dailyWrites: 100_000 };
    const pass = await crm.runPass(crm.depsFor(fake), { subjects: ['events'], mode: 'full' });
    expect(pass.phase).toBe('done');
    const key = fieldKey(fake, 'ebs_event_id');
    expect(new Set(dealsKeyed(fake, 'ebs_event_id').map((d) => d.custom_fields[key]))).toEqual(
      sourceIds(crm.sb, 'event'),
    );
    // Several activities share the window: the rare 429 is waited out, never a failure.
    expect(fake.state.counters.rateLimited.window ?? 0).toBeLessThan(20);
  }, 600_000);

  it('daily POST/PUT allowance spent: pauses until midnight UTC without a retry storm, then resumes', async () => {
    const fake = await crm.newFake();
    await setupPipedrive({ baseUrl: fake.baseUrl, token: fake.token });
    fake.state.limits = { perWindow: 5_000, dailyWrites: 60 };
    const deps = crm.depsFor(fake);
    const paused = await crm.runPass(deps, { subjects: ['events'], mode: 'full' });
    expect(paused.phase).toBe('paused');
    const today = new Date(fake.state.now()).toISOString().slice(0, 10);
    expect((paused.pausedUntil ?? '').slice(0, 10) > today).toBe(true);
    expect(paused.error).toMatch(/daily POST\/PUT allowance/);
    const refusals = fake.state.counters.rateLimited.daily ?? 0;
    expect(refusals).toBeGreaterThan(0);
    // Each in-flight write learns of it once; nothing retries into the wall.
    expect(refusals).toBeLessThanOrEqual(40);
    // Nothing silent: the deals made before the pause are counted written, with the requests
    // and reads that made them (a paused pass said "0 read, 0 written, 0 requests").
    const made = dealsKeyed(fake, 'ebs_event_id').length;
    expect(made).toBeGreaterThan(0);
    expect(paused.counts.written).toBe(made);
    expect(paused.counts.read).toBeGreaterThanOrEqual(made);
    expect(paused.counts.requests).toBeGreaterThan(0);
    expect(summaryText(paused)).toMatch(new RegExp(`written +${made} changed or new`));

    // The next UTC day, with room for the rest (60 writes would pause it again).
    fake.state.clockOffsetMs = Date.parse(paused.pausedUntil ?? '') - Date.now() + 1_000;
    fake.state.limits.dailyWrites = 100_000;
    const writesBefore = fake.state.counters.writes;
    const personsBefore = fake.state.counters.created.persons;
    const resumed = await crm.runPass(deps, { subjects: ['events'], mode: 'full' });
    expect(resumed.phase).toBe('done');
    // The ledger holds what the paused pass wrote: those records are up to date, not looked
    // up by search and written again (nor, should the search trail, created twice).
    expect(resumed.counts.written).toBe(EVENTS - made);
    expect(fake.state.counters.created.deals).toBe(EVENTS);
    expect(dealsKeyed(fake, 'ebs_event_id')).toHaveLength(EVENTS);
    // Its only writes are the deals still missing and their new persons (no PATCH of a deal).
    const personsMade = fake.state.counters.created.persons - personsBefore;
    expect(fake.state.counters.writes - writesBefore).toBe(EVENTS - made + personsMade);
    const key = fieldKey(fake, 'ebs_event_id');
    expect(new Set(dealsKeyed(fake, 'ebs_event_id').map((d) => d.custom_fields[key]))).toEqual(
      sourceIds(crm.sb, 'event'),
    );
  }, 600_000);
});
