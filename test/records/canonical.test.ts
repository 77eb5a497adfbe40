import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  VOLATILE_FIELDS,
  canonicalAttributes,
  canonicalJson,
  canonicalRecord,
  utcTimestamp,
} from '../../records/canonical.js';
import { splitWindow, type DateWindow } from '../../records/date-windows.js';
import {
  applyPage,
  createPlan,
  partitionPlanSchema,
  planComplete,
  readySteps,
} from '../../records/partition-plan.js';
import { rankDimensions, type LeadSample } from '../../records/lead-dimensions.js';

const event = {
  id: '7',
  type: 'event',
  attributes: {
    id: 7,
    title: 'Wedding',
    created_at: '2026-05-01T09:30:00-04:00',
    starting_balance: '1249.99',
    starting_balance_cents: 124_999,
    starting_balance_currency: 'USD',
    starting_balance_formatted: '$1,249.99',
    deposit_amount_due: '10.50',
    deposit_amount_due_cents: null,
    deposit_amount_due_currency: 'USD',
    deposit_amount_due_formatted: '$10.50',
    primary_image: { hero_variant: 'x.jpg', alt: 'a' },
    booked_at_description: 'Booked today',
    starts_at_date_iso8601: '2026-06-12',
  },
  relationships: {
    event_bookings: {
      data: [
        { id: '3', type: 'event_booking' },
        { id: '1', type: 'event_booking' },
      ],
    },
    photobooth_background: { data: null },
    contacts: { links: {} },
  },
};

describe('canonical records', () => {
  it('keeps an amount no whole number of cents states under its own name, hashed as the general way hashes it', () => {
    const odd = {
      ...event,
      attributes: {
        ...event.attributes,
        deposit_amount_due: '10.505',
        deposit_amount_due_cents: null,
        starting_balance: '1e22',
        starting_balance_cents: 'n/a',
      },
    };
    const record = canonicalRecord('events', odd);
    expect(record.attributes.deposit_amount_due_cents).toBeNull();
    expect(record.attributes.deposit_amount_due).toBe('10.505');
    expect(record.attributes.starting_balance_cents).toBeNull();
    expect(record.attributes.starting_balance).toBe('1e22');
    // The same text gives the same hash, and it is the hash of the sorted canonical text.
    expect(canonicalRecord('events', structuredClone(odd)).hash).toBe(record.hash);
    const { hash, ...body } = record;
    const withoutVolatile = Object.fromEntries(
      Object.entries(body.attributes).filter(([name]) => !VOLATILE_FIELDS.includes(name)),
    );
    expect(hash).toBe(
      createHash('sha256')
        .update(canonicalJson({ ...body, attributes: withoutVolatile }))
        .digest('hex'),
    );
    const lead = canonicalRecord('leads', {
      id: '1',
      type: 'lead',
      attributes: { email: 'a@b.co', estimated_budget: 'about 2k' },
    });
    expect(lead.attributes).toMatchObject({
      estimated_budget_cents: null,
      estimated_budget: 'about 2k',
    });
    // A JSON number with a third decimal too: not rounded to cents the service never sent.
    const precise = canonicalRecord('leads', {
      id: '3',
      type: 'lead',
      attributes: { email: 'a@b.co', estimated_budget: 1234.565 },
    });
    expect(precise.attributes).toMatchObject({
      estimated_budget_cents: null,
      estimated_budget: 1234.565,
    });
    const empty = canonicalRecord('leads', {
      id: '2',
      type: 'lead',
      attributes: { email: 'a@b.co', estimated_budget: null },
    });
    expect(empty.attributes).toEqual({ email: 'a@b.co', estimated_budget_cents: null });
  });

  it('keeps money as integer cents (from the decimal when cents are missing) and drops derived text', () => {
    const { attributes } = canonicalRecord('events', event);
    expect(attributes.starting_balance_cents).toBe(124_999);
    expect(attributes.deposit_amount_due_cents).toBe(1050);
    expect(attributes.starting_balance_currency).toBe('USD');
    for (const gone of ['starting_balance', 'starting_balance_formatted', 'deposit_amount_due']) {
      expect(attributes).not.toHaveProperty(gone);
    }
  });

  it('writes timestamps with an offset as UTC ISO and leaves plain dates alone', () => {
    const { attributes } = canonicalRecord('events', event);
    expect(attributes.created_at).toBe('2026-05-01T13:30:00.000Z');
    expect(attributes.starts_at_date_iso8601).toBe('2026-06-12');
    expect(utcTimestamp('not a time')).toBe('not a time');
  });

  it('turns relationships into ids in the service order and objects into sorted JSON text', () => {
    const record = canonicalRecord('events', event);
    expect(record.relationships).toEqual({
      event_bookings: ['3', '1'],
      photobooth_background: null,
    });
    expect(record.attributes.primary_image).toBe('{"alt":"a","hero_variant":"x.jpg"}');
    expect(canonicalJson({ b: 1, a: { d: 2, c: [3, { f: 1, e: 2 }] } })).toBe(
      '{"a":{"c":[3,{"e":2,"f":1}],"d":2},"b":1}',
    );
  });

  it('hashes over content, not key order, and not over the volatile fields', () => {
    const base = canonicalRecord('events', event);
    const reordered = canonicalRecord('events', {
      ...event,
      attributes: Object.fromEntries(Object.entries(event.attributes).reverse()),
    });
    expect(reordered.hash).toBe(base.hash);
    expect(base.hash).toMatch(/^[0-9a-f]{64}$/);
    const volatile = Object.fromEntries(VOLATILE_FIELDS.map((f) => [f, 'changed just now']));
    const reread = canonicalRecord('events', {
      ...event,
      attributes: { ...event.attributes, ...volatile },
    });
    expect(reread.hash).toBe(base.hash);
    const edited = canonicalRecord('events', {
      ...event,
      attributes: { ...event.attributes, title: 'Gala' },
    });
    expect(edited.hash).not.toBe(base.hash);
  });

  it('hashes a record to the same digest as ledgers already hold', () => {
    // Computed by the code of 80bf2ab: a change to the hash's text makes every record of every
    // ledger look changed once, so it must be a deliberate one.
    const record = canonicalRecord('events', {
      id: '7',
      type: 'event',
      attributes: {
        title: 'Wedding ü "quoted"',
        starts_at: '2027-06-12T14:00:00-04:00',
        total_price: '1250.50',
        total_price_cents: null,
        total_price_currency: 'USD',
        total_price_formatted: '$1,250.50',
        guests: 120,
        indoor: true,
        notes: null,
        tags: ['b', 'a'],
        details: { z: 1, a: [2, { y: 3, b: 4 }] },
        '10': 'integer-like key',
        booked_at_description: '3 days ago',
      },
      relationships: {
        customer: { data: { id: '3', type: 'customer' } },
        staff: {
          data: [
            { id: '9', type: 'user' },
            { id: '4', type: 'user' },
          ],
        },
        brand: { data: null },
      },
    });
    expect(record.hash).toBe('12b29746f6a09fc946cc6d5db347adaddcf08b58a1e7bbe1c81596249fbec258');
  });

  it('hashes the canonical JSON of the record, whatever shapes came before (more than it keeps)', () => {
    // The hash's definition, written plainly: sha256 of canonicalJson without volatile fields.
    const byDefinition = (record: ReturnType<typeof canonicalRecord>) => {
      const attributes = Object.fromEntries(
        Object.entries(record.attributes).filter(([name]) => !VOLATILE_FIELDS.includes(name)),
      );
      const text = canonicalJson({
        resource: record.resource,
        id: record.id,
        attributes,
        relationships: record.relationships,
      });
      return createHash('sha256').update(text).digest('hex');
    };
    const names = Array.from({ length: 45 }, (_, i) => `field_${i}`);
    // 80 shapes (40 key sets, each in two orders; some with integer-like keys), each met
    // twice, 80 records apart: more than the shapes kept, so the second meeting sorts again.
    const items = Array.from({ length: 160 }, (_, n) => {
      const shape = n % 80;
      const keys = names.slice(0, 5 + Math.floor(shape / 2));
      const ordered = shape % 2 === 0 ? keys : [...keys].reverse();
      const attributes: Record<string, unknown> = Object.fromEntries(
        ordered.map((key, i) => [key, i % 3 === 0 ? `v${n}-${i}` : i]),
      );
      if (shape % 7 === 0) attributes['12'] = 'an integer-like key';
      if (shape % 5 === 0) attributes.nested = { b: [1, { d: 2, c: 3 }], a: null };
      // Not what JSON gives, but a caller's object may hold it: left out, as canonicalJson does.
      if (n % 11 === 0) attributes.field_0 = undefined;
      attributes.created_at_description = `${n} minutes ago`;
      return { id: String(n), type: 'event', attributes, relationships: {} };
    });
    for (const item of items) {
      const record = canonicalRecord('events', item);
      expect(record.hash).toBe(byDefinition(record));
      expect(Object.values(record.attributes)).not.toContain(undefined);
      expect(record.attributes).toStrictEqual(canonicalAttributes('events', item.attributes));
    }
  });
});

describe('date windows', () => {
  const covers = (parts: DateWindow[], whole: DateWindow) => {
    expect(parts[0]?.start).toBe(whole.start);
    expect(parts.at(-1)?.end).toBe(whole.end);
    for (let i = 1; i < parts.length; i += 1) {
      const end = parts[i - 1]?.end ?? '';
      const next = new Date(Date.parse(`${end}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
      expect(parts[i]?.start).toBe(next);
    }
  };

  it('cuts at the sample quantiles into contiguous windows covering the same days', () => {
    const dates = Array.from({ length: 100 }, (_, i) => `2026-0${1 + (i % 9)}-1${i % 10}`);
    const parts = splitWindow({}, dates, 1000, 100) ?? [];
    expect(parts.length).toBeGreaterThan(5);
    covers(parts, {});
    const bounded = splitWindow({ start: '2026-01-01', end: '2026-01-02' }, [], 500, 100) ?? [];
    expect(bounded).toEqual([
      { start: '2026-01-01', end: '2026-01-01' },
      { start: '2026-01-02', end: '2026-01-02' },
    ]);
  });

  it('cannot cut a single day (a gap, never a loop)', () => {
    expect(
      splitWindow({ start: '2026-03-03', end: '2026-03-03' }, ['2026-03-03'], 500, 100),
    ).toBeNull();
  });
});

describe('partition plans', () => {
  it('split an over-limit window on its first page, read the parts, report a crowded day as a gap', () => {
    const plan = createPlan('appointments', { reachLimit: 100, per: 50 });
    const [root] = readySteps(plan);
    expect(root).toEqual({ node: 0, epoch: 0, page: 1, per: 50, query: {} });
    applyPage(plan, root!, {
      totalCount: 250,
      perPage: 50,
      items: 50,
      dates: [...Array<string>(25).fill('2026-01-05'), ...Array<string>(25).fill('2026-02-10')],
    });
    const parts = readySteps(plan);
    expect(parts.map((s) => s.query)).toEqual([
      { end_date: '2026-01-05' },
      { start_date: '2026-01-06', end_date: '2026-02-10' },
      { start_date: '2026-02-11' },
    ]);
    applyPage(plan, parts[0]!, { totalCount: 120, perPage: 50, items: 50, dates: [] });
    applyPage(plan, parts[1]!, {
      totalCount: 130,
      perPage: 50,
      items: 50,
      dates: Array<string>(50).fill('2026-02-10'),
    });
    applyPage(plan, parts[2]!, { totalCount: 0, perPage: 50, items: 0, dates: [] });
    // The JSON survives a heartbeat: parse it back and go on from there.
    const resumed = partitionPlanSchema.parse(JSON.parse(JSON.stringify(plan)));
    while (!planComplete(resumed)) {
      const steps = readySteps(resumed);
      expect(steps.length).toBeGreaterThan(0);
      for (const step of steps) {
        expect(step.page * step.per).toBeLessThanOrEqual(100);
        applyPage(resumed, step, { totalCount: 65, perPage: 50, items: 50, dates: [] });
      }
    }
    expect(resumed.gaps).toEqual([]);
  });

  it('reads only the reachable pages of a single day over the limit and reports the rest', () => {
    const plan = createPlan('lead_bookings', {
      reachLimit: 100,
      per: 50,
      query: { event_date_start: '2026-02-10', event_date_end: '2026-02-10' },
    });
    const crowded = {
      totalCount: 130,
      perPage: 50,
      items: 50,
      dates: Array<string>(50).fill('2026-02-10'),
    };
    applyPage(plan, readySteps(plan)[0]!, crowded);
    const rest = readySteps(plan);
    expect(rest.map((s) => s.page)).toEqual([2]);
    applyPage(plan, rest[0]!, crowded);
    expect(planComplete(plan)).toBe(true);
    expect(plan.gaps).toEqual([
      {
        node: 0,
        query: { event_date_start: '2026-02-10', event_date_end: '2026-02-10' },
        reason: 'single_day',
        count: 30,
        tried: ['date'],
      },
    ]);
  });
});

describe('lead cut values', () => {
  const lead = (domain: string): LeadSample => ({
    origin: null,
    lead_type: null,
    source: null,
    domain,
  });

  it('cuts by whole e-mail domains seen, in the sample or before, each expected to hold a lead', () => {
    const samples = ['gmail.com', 'gmail.com', 'mail.example', 'mail.example', 'once.io'].map(lead);
    const text = (shape?: { total: number; per: number; reach: number }) =>
      rankDimensions([], samples, { domain: { 'once.io': 2, 'yahoo.com': 9 } }, shape).find(
        (c) => c.dimension === 'text',
      );
    expect(text()?.values).toEqual(['gmail.com', 'mail.example', 'once.io', 'yahoo.com']);
    expect(text()?.coverage).toBe(1);
    // In a search of 1,000, yahoo.com (never in its sample, a third of what was seen before)
    // should hold leads; in a search of 2 it should not, and is left to a later cut.
    expect(text({ total: 1000, per: 100, reach: 100 })?.values).toContain('yahoo.com');
    expect(text({ total: 2, per: 100, reach: 1 })?.values).toEqual([
      'gmail.com',
      'mail.example',
      'once.io',
    ]);
  });
});
