import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CliProcess, runCli } from '../helpers/cli.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { SEED_EPOCH } from '../../sandbox/seed.js';
import { startSandbox } from '../../sandbox/server.js';

type Json = any;

const LEADS = 500;
let a: TestSandbox;
let twin: TestSandbox;
let other: TestSandbox;
const tmp = mkdtempSync(join(tmpdir(), 'ebsync-seed-'));

beforeAll(async () => {
  [a, twin, other] = await Promise.all([
    startTestSandbox({ seed: { leads: LEADS, seed: 'alpha' } }),
    startTestSandbox({ seed: { leads: LEADS, seed: 'alpha' } }),
    startTestSandbox({ seed: { leads: LEADS, seed: 'beta' } }),
  ]);
});

afterAll(async () => {
  for (const t of [a, twin, other]) {
    expect(t.internalErrors).toEqual([]);
    await t.close();
  }
  rmSync(tmp, { recursive: true, force: true });
});

async function ok(t: TestSandbox, path: string, query: Record<string, string | number> = {}) {
  const res = await t.request('GET', path, { query });
  expect(res.status, `${path} ${JSON.stringify(query)}: ${res.text.slice(0, 300)}`).toBe(200);
  return res.body;
}

/** Every lead, with its bookings sideloaded, page by page. */
async function allLeads(t: TestSandbox, query: Record<string, string> = {}) {
  const data: Json[] = [];
  const included: Json[] = [];
  for (let page = 1; ; page += 1) {
    const body = await ok(t, '/api/v1/leads', {
      ...query,
      per: 100,
      page,
      include: 'lead_bookings',
    });
    data.push(...body.data);
    included.push(...(body.included ?? []));
    if (page >= body.meta.total_pages) return { data, included, total: body.meta.total_count };
  }
}

/** created_at_description reads the wall clock; everything else must match exactly. */
function withoutClockWords(body: Json): Json {
  for (const item of [...(body.data ?? []), ...(body.included ?? [])]) {
    delete item.attributes.created_at_description;
  }
  return body;
}

const ids = (t: TestSandbox, type: string, where = '1'): number[] =>
  (
    t.sb.ctx.db
      .prepare(`SELECT id FROM records WHERE type = ? AND ${where} ORDER BY id`)
      .all(type) as { id: number }[]
  ).map((r) => r.id);

describe('generated data: deterministic for a seed', () => {
  it('gives the same lead pages, with bookings, for the same seed', async () => {
    for (const page of [1, 3, 5]) {
      const query = { per: 100, page, include: 'lead_bookings' };
      const left = withoutClockWords(await ok(a, '/api/v1/leads', query));
      const right = withoutClockWords(await ok(twin, '/api/v1/leads', query));
      expect(left.data).toHaveLength(100);
      expect(right).toEqual(left);
    }
  });

  it('gives the same events, event bookings, appointments, expenses and questionnaires', async () => {
    const events = ids(a, 'event');
    expect(events.length).toBeGreaterThan(5);
    expect(ids(twin, 'event')).toEqual(events);
    for (const id of events) {
      const left = await ok(a, `/api/v1/events/${id}`);
      expect(await ok(twin, `/api/v1/events/${id}`)).toEqual(left);
      // Timestamps too: derived from a fixed epoch, not from when the sandbox started.
      expect(Date.parse(left.data.attributes.created_at)).toBeLessThanOrEqual(SEED_EPOCH);
    }
    const query = { per: 100 };
    expect(await ok(twin, '/api/v1/event_bookings', query)).toEqual(
      await ok(a, '/api/v1/event_bookings', query),
    );
    expect(await ok(twin, '/api/v1/appointments', query)).toEqual(
      await ok(a, '/api/v1/appointments', query),
    );
    for (const id of ids(a, 'expense', 'deleted_at IS NULL')) {
      expect(await ok(twin, `/api/v1/expenses/${id}`)).toEqual(
        await ok(a, `/api/v1/expenses/${id}`),
      );
    }
    const withQuestionnaire = a.sb.ctx.db
      .prepare("SELECT DISTINCT parent_id AS id FROM records WHERE type = 'questionnaire'")
      .all() as { id: number }[];
    expect(withQuestionnaire.length).toBeGreaterThanOrEqual(2);
    for (const { id } of withQuestionnaire) {
      const left = await ok(a, '/api/v1/questionnaires', { event_id: id });
      expect(left.data.length).toBeGreaterThan(0);
      expect(await ok(twin, '/api/v1/questionnaires', { event_id: id })).toEqual(left);
    }
    expect(await ok(twin, '/api/v1/questionnaire_templates')).toEqual(
      await ok(a, '/api/v1/questionnaire_templates'),
    );
  });

  it('stores the same rows for the same seed, soft-delete times included', () => {
    const rows = (t: TestSandbox) =>
      t.sb.ctx.db
        .prepare('SELECT * FROM records ORDER BY type, id')
        .raw()
        .all()
        .map((row) => JSON.stringify(row));
    const left = rows(a);
    expect(left.length).toBeGreaterThan(LEADS);
    expect(ids(a, 'expense', 'deleted_at IS NOT NULL').length).toBeGreaterThan(0);
    expect(rows(twin)).toEqual(left);
  });

  it('stores the same rows and finds the same leads when leads are made on a worker thread', async () => {
    const seed = { leads: 1200, seed: 'threads' };
    const [here, worker] = await Promise.all([
      startTestSandbox({ seed: { ...seed, workerFrom: Infinity } }),
      startTestSandbox({ seed: { ...seed, workerFrom: 0 } }),
    ]);
    try {
      const dump = (t: TestSandbox) =>
        ['records', 'lead_index', 'lead_booking_index', 'lead_counts', 'sequences'].map((table) =>
          t.sb.ctx.db
            .prepare(`SELECT * FROM ${table} ORDER BY 1, 2`)
            .raw()
            .all()
            .map((row) => JSON.stringify(row)),
        );
      const rows = dump(here);
      expect(rows[0]?.length).toBeGreaterThan(seed.leads);
      expect(dump(worker)).toEqual(rows);
      for (const query of [{ text: 'garcia' }, { text: 'ana' }, { origin: 'Contact Form' }]) {
        const left = await ok(here, '/api/v1/leads', { ...query, per: 100 });
        expect(left.meta.total_count, JSON.stringify(query)).toBeGreaterThan(0);
        expect(
          withoutClockWords(await ok(worker, '/api/v1/leads', { ...query, per: 100 })),
        ).toEqual(withoutClockWords(left));
      }
    } finally {
      await Promise.all([here.close(), worker.close()]);
    }
  });

  it('gives different data for a different seed', async () => {
    const left = await ok(a, '/api/v1/leads', { per: 50 });
    const right = await ok(other, '/api/v1/leads', { per: 50 });
    const emails = (body: Json) => body.data.map((l: Json) => l.attributes.email);
    expect(right.meta.total_count).toBe(LEADS);
    expect(emails(right)).not.toEqual(emails(left));
    const tokens = (body: Json) => body.data.map((l: Json) => l.attributes.token);
    expect(tokens(right)).not.toEqual(tokens(left));
  });
});

describe('generated data: counts and variety', () => {
  it('makes the leads asked for, and reports what it made', async () => {
    const plain = await startTestSandbox();
    try {
      const before = (await ok(plain, '/api/v1/leads', { per: 1 })).meta.total_count as number;
      expect(plain.sb.seeded).toBeUndefined();
      const body = await ok(a, '/api/v1/leads', { per: 1 });
      expect(body.meta.total_count).toBe(LEADS + before);
    } finally {
      expect(plain.internalErrors).toEqual([]);
      await plain.close();
    }
    const seeded = a.sb.seeded;
    expect(seeded).toMatchObject({ seed: 'alpha', leads: LEADS, events: 20 });
    const bookings = await ok(a, '/api/v1/lead_bookings', { per: 1 });
    expect(bookings.meta.total_count).toBe(seeded?.leadBookings);
    expect(ids(a, 'event')).toHaveLength(20);
    expect(seeded?.records).toBeGreaterThan(LEADS + (seeded?.leadBookings ?? 0));
  });

  it('varies the leads: unicode names, missing fields, spam, archived, bookings or none', async () => {
    const { data, total } = await allLeads(a);
    expect(data).toHaveLength(total);
    const attrs = data.map((l: Json) => l.attributes);
    const count = (test: (x: Json) => boolean) => attrs.filter(test).length;
    const names = attrs.map((x: Json) => `${x.first_name ?? ''} ${x.last_name ?? ''}`);
    expect(names.filter((n: string) => /[^\u0020-\u007e]/.test(n)).length).toBeGreaterThan(50);
    expect(names.some((n: string) => /\p{Script=Han}/u.test(n))).toBe(true);
    expect(names.some((n: string) => n.includes("'"))).toBe(true);
    expect(names.some((n: string) => /\p{L}-\p{L}/u.test(n))).toBe(true);
    expect(count((x) => x.phone === null)).toBeGreaterThan(50);
    expect(count((x) => x.phone !== null)).toBeGreaterThan(200);
    expect(count((x) => x.venue_name === null)).toBeGreaterThan(50);
    expect(count((x) => x.event_date === null)).toBeGreaterThan(50);
    expect(count((x) => x.spam)).toBeGreaterThan(2);
    expect(count((x) => x.spam)).toBeLessThan(50);
    expect(count((x) => x.archived)).toBeGreaterThan(2);
    expect(count((x) => x.archived)).toBeLessThan(60);
    expect(count((x) => x.converted_to_event)).toBeGreaterThan(0);
    expect(count((x) => x.utm_source !== null)).toBeGreaterThan(50);
    expect(count((x) => x.utm_source === null)).toBeGreaterThan(200);
    expect(new Set(attrs.map((x: Json) => x.origin)).size).toBeGreaterThanOrEqual(5);
    expect(new Set(attrs.map((x: Json) => x.source)).size).toBeGreaterThanOrEqual(5);
    expect(new Set(attrs.map((x: Json) => x.lead_type)).size).toBeGreaterThanOrEqual(5);
    const booked = data.filter((l: Json) => l.relationships.lead_bookings.data.length > 0);
    expect(booked.length).toBeGreaterThan(200);
    expect(data.length - booked.length).toBeGreaterThan(50);
    expect(count((x) => x.package_name !== null && x.starts_at !== null)).toBeGreaterThan(100);
    for (const x of attrs) {
      expect(x.email).toBe(x.email.toLowerCase());
      expect(x.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[-+]\d\d:\d\d$/);
      expect(Date.parse(x.created_at)).toBeLessThanOrEqual(SEED_EPOCH);
    }
  });

  it('varies the events: proposals and confirmed, canceled, postponed, completed, converted leads', async () => {
    const events: Json[] = [];
    for (const id of ids(a, 'event')) events.push((await ok(a, `/api/v1/events/${id}`)).data);
    const attrs = events.map((e) => e.attributes);
    const statuses = new Set(attrs.map((x) => x.status));
    expect(statuses).toEqual(new Set(['confirmed', 'proposal', 'proposal_date_reserved']));
    expect(attrs.some((x) => x.canceled)).toBe(true);
    expect(attrs.some((x) => x.postponed)).toBe(true);
    expect(attrs.some((x) => x.completed)).toBe(true);
    const starts = attrs.map((x) => Date.parse(x.starts_at));
    expect(starts.some((s) => s < SEED_EPOCH)).toBe(true);
    expect(starts.some((s) => s > SEED_EPOCH)).toBe(true);
    expect(events.some((e) => e.relationships.notes.data.length > 0)).toBe(true);
    const bookings = await ok(a, '/api/v1/event_bookings', { per: 100 });
    expect(bookings.data.length).toBeGreaterThanOrEqual(events.length);
    // Converted leads: the lead says so, and the event carries the lead's source.
    const converted = a.sb.ctx.db
      .prepare(
        "SELECT id, json_extract(attrs, '$.lead_id') AS lead FROM records WHERE type = 'event' AND json_extract(attrs, '$.lead_id') IS NOT NULL",
      )
      .all() as { id: number; lead: number }[];
    expect(converted.length).toBeGreaterThan(0);
    for (const { lead } of converted) {
      expect((await ok(a, `/api/v1/leads/${lead}`)).data.attributes.converted_to_event).toBe(true);
    }
  });

  it('has canceled and soft-deleted appointments, and soft-deleted expenses that are gone', async () => {
    const list = await ok(a, '/api/v1/appointments', { per: 100 });
    const live = ids(a, 'appointment', 'deleted_at IS NULL');
    expect(list.meta.total_count).toBe(live.length);
    expect(list.data.some((x: Json) => x.attributes.canceled === true)).toBe(true);
    expect(list.data.some((x: Json) => x.attributes.canceled === false)).toBe(true);
    const deleted = ids(a, 'appointment', 'deleted_at IS NOT NULL');
    expect(deleted.length).toBeGreaterThan(0);
    for (const id of deleted) {
      expect((await a.request('GET', `/api/v1/appointments/${id}`)).status).toBe(404);
    }
    const goneExpenses = ids(a, 'expense', 'deleted_at IS NOT NULL');
    expect(goneExpenses.length).toBeGreaterThan(0);
    for (const id of goneExpenses) {
      expect((await a.request('GET', `/api/v1/expenses/${id}`)).status).toBe(404);
    }
    // What the banner says: the appointments and expenses the API lists, the deleted apart.
    const seeded = a.sb.seeded!;
    expect(seeded.appointments).toBe(list.meta.total_count);
    expect(seeded.expenses).toBe(ids(a, 'expense', 'deleted_at IS NULL').length);
    expect(seeded.deleted).toBe(deleted.length + goneExpenses.length);
    const liveExpense = ids(a, 'expense', 'deleted_at IS NULL')[0];
    const expense = await ok(a, `/api/v1/expenses/${liveExpense}`);
    expect(expense.data.attributes.amount_cents).toEqual(expect.any(Number));
  });
});

describe('generated data: found by the lead list filters', () => {
  it('finds a seeded lead by exact e-mail', async () => {
    const { data } = await allLeads(a);
    const sample = data.filter((_: Json, i: number) => i % 97 === 0);
    for (const lead of sample) {
      const email = lead.attributes.email as string;
      const found = await ok(a, '/api/v1/leads', { email: email.toUpperCase(), per: 100 });
      const expected = data
        .filter((l: Json) => l.attributes.email === email)
        .map((l: Json) => l.id);
      expect(found.data.map((l: Json) => l.id)).toEqual(expected);
      expect(expected).toContain(lead.id);
    }
  });

  it('finds seeded leads by surname in text search, accents or not', async () => {
    const { data } = await allLeads(a);
    const surnames = new Map<string, string[]>();
    for (const l of data) {
      const last = l.attributes.last_name as string | null;
      if (last && /^[\p{L}]+$/u.test(last) && /[^a-z]/i.test(last)) {
        surnames.set(last, [...(surnames.get(last) ?? []), l.id]);
      }
    }
    const [surname, expected] = [...surnames].sort((x, y) => y[1].length - x[1].length)[0] ?? [];
    expect(surname, 'a seeded surname with accents').toBeDefined();
    for (const text of [surname!, surname!.normalize('NFD').replace(/\p{M}/gu, '')]) {
      const found = await allLeads(a, { text });
      const got = found.data.map((l: Json) => l.id);
      for (const id of expected!) expect(got).toContain(id);
    }
  });

  it('filters seeded leads by origin', async () => {
    const { data } = await allLeads(a);
    const expected = data
      .filter((l: Json) => l.attributes.origin === 'Contact Form')
      .map((l: Json) => l.id);
    expect(expected.length).toBeGreaterThan(10);
    const found = await allLeads(a, { origin: 'Contact Form' });
    expect(found.data.map((l: Json) => l.id)).toEqual(expected);
  });

  it('writes leads and bookings exactly as createLead would from the same fields', async () => {
    const { data, included } = await allLeads(a);
    const bookingsById = new Map(included.map((b: Json) => [b.id, b.attributes]));
    const pick = (test: (lead: Json, booking: Json) => boolean) =>
      data.find((l: Json) => {
        const refs = l.relationships.lead_bookings.data;
        return refs.length === 1 && test(l.attributes, bookingsById.get(refs[0].id));
      });
    const samples = [
      pick((l, b) => b.event_type_id !== null && b.starts_at !== null && l.event_time !== null),
      pick((l, b) => b.event_type_id !== null && l.event_time === null && b.starts_at !== null),
      pick((_, b) => b.event_type_id === null && b.starts_at !== null),
      pick((l, b) => b.staff_id !== null && l.phone !== null && l.utm_source !== null),
    ];
    const fields = [
      'email',
      'first_name',
      'last_name',
      'company_name',
      'phone',
      'venue_name',
      'venue_address',
      'venue_city',
      'venue_state',
      'venue_zip',
      'estimated_budget',
      'estimated_number_guests',
      'subject',
      'message',
      'notes',
      'lead_type',
      'indoor_outdoor',
      'utm_source',
      'utm_campaign',
      'utm_medium',
      'utm_term',
      'utm_content',
      'ad_click_id',
      'next_follow_up_on',
      'event_date',
      'event_time',
      'referred_by_user_id',
    ];
    for (const seeded of samples) {
      expect(seeded, 'a seeded lead of each kind').toBeDefined();
      const l = seeded.attributes;
      const booking = bookingsById.get(seeded.relationships.lead_bookings.data[0].id);
      const body: Record<string, unknown> = { lead_source: l.source };
      for (const f of fields) if (l[f] !== null) body[f] = l[f];
      if (l.length_in_minutes !== null) body.length_in_minutes = l.length_in_minutes;
      if (booking.event_type_id !== null) body.package_id = booking.event_type_id;
      else if (booking.event_category_id !== null) body.service_id = booking.event_category_id;
      if (booking.staff_id !== null) body.staff_id = booking.staff_id;
      const made = await a.request('POST', '/api/v1/leads', { json: body });
      expect(made.status, made.text).toBe(200);
      const fresh = await ok(a, `/api/v1/leads/${made.body.data.id}`, { include: 'lead_bookings' });
      const differs = new Set([
        'id',
        'token',
        'resume_booking_link',
        'created_at',
        'created_at_description',
        'origin',
        'spam',
        'archived',
        'converted_to_event',
        'times_contacted',
        'last_contact_at',
        'lead_event_type',
      ]);
      const strip = (x: Json, keys: Set<string>) =>
        Object.fromEntries(Object.entries(x).filter(([k]) => !keys.has(k)));
      expect(strip(fresh.data.attributes, differs)).toEqual(strip(l, differs));
      const bookingDiffers = new Set(['id', 'lead_id', 'created_at', 'lead_name', 'title']);
      expect(strip(fresh.included[0].attributes, bookingDiffers)).toEqual(
        strip(booking, bookingDiffers),
      );
    }
  });
});

describe('generated data: skewed (--skew)', () => {
  it('skews leads as a real inbox: one origin, one provider, few types or sources, Zipf names', async () => {
    const skewed = await startSandbox({
      http: true,
      seed: { leads: 5_000, seed: 's', skew: true },
    });
    const again = await startSandbox({ http: true, seed: { leads: 5_000, seed: 's', skew: true } });
    try {
      const rows = (sb: typeof skewed) =>
        (
          sb.ctx.db.prepare(`SELECT attrs FROM records WHERE type = 'lead' ORDER BY id`).all() as {
            attrs: string;
          }[]
        ).map((r) => JSON.parse(r.attrs) as Record<string, string | null>);
      const leads = rows(skewed);
      expect(leads).toHaveLength(5_000);
      const share = (test: (lead: Record<string, string | null>) => boolean) =>
        leads.filter(test).length / leads.length;
      expect(share((l) => l.origin === 'Lead Form')).toBeGreaterThan(0.8);
      expect(share((l) => (l.email ?? '').endsWith('@mail.example'))).toBeGreaterThan(0.65);
      expect(share((l) => l.lead_type !== null)).toBeLessThan(0.1);
      expect(share((l) => l.source !== null)).toBeLessThan(0.1);
      // Zipf: the commonest first name is far commoner than the median one, and a long tail
      // of names is seen once.
      const counts = new Map<string, number>();
      for (const l of leads)
        if (l.first_name) counts.set(l.first_name, (counts.get(l.first_name) ?? 0) + 1);
      const sorted = [...counts.values()].sort((x, y) => y - x);
      expect(sorted[0]!).toBeGreaterThan(10 * sorted[Math.floor(sorted.length / 2)]!);
      expect(sorted.filter((n) => n === 1).length).toBeGreaterThan(50);
      // A lead without a name has a phone: something a search can tell it apart by.
      expect(leads.filter((l) => !l.first_name && !l.last_name && !l.phone)).toEqual([]);
      // The same seed, the same data.
      expect(rows(again)).toEqual(leads);
    } finally {
      await Promise.all([skewed.close(), again.close()]);
    }
  });
});

describe('generated data: a database file', () => {
  it('keeps nothing of a seed that failed, so the next start seeds it', async () => {
    const file = join(tmp, 'interrupted.db');
    const seed = { leads: 20_000, seed: 3, workerFrom: Infinity };
    await expect(
      startSandbox({
        http: true,
        db: file,
        seed: {
          ...seed,
          onProgress: () => {
            throw new Error('interrupted');
          },
        },
      }),
    ).rejects.toThrow('interrupted');
    const again = await startTestSandbox({ db: file, seed });
    try {
      expect(again.sb.seeded?.leads).toBe(20_000);
      expect((await ok(again, '/api/v1/leads', { per: 1 })).meta.total_count).toBe(20_000);
    } finally {
      expect(again.internalErrors).toEqual([]);
      await again.close();
    }
  });

  it('is seeded once: reopening it adds nothing', async () => {
    const file = join(tmp, 'seeded.db');
    const first = await startTestSandbox({ db: file, seed: { leads: 40, seed: 7 } });
    const before = await ok(first, '/api/v1/leads', { per: 100 });
    const records = (
      first.sb.ctx.db.prepare('SELECT count(*) AS n FROM records').get() as {
        n: number;
      }
    ).n;
    expect(first.sb.seeded?.leads).toBe(40);
    expect(first.internalErrors).toEqual([]);
    await first.close();

    const again = await startTestSandbox({ db: file, seed: { leads: 40, seed: 7 } });
    try {
      expect(again.sb.seeded).toBeUndefined();
      expect(withoutClockWords(await ok(again, '/api/v1/leads', { per: 100 }))).toEqual(
        withoutClockWords(before),
      );
      expect(
        (again.sb.ctx.db.prepare('SELECT count(*) AS n FROM records').get() as { n: number }).n,
      ).toBe(records);
      // The reopened file still lists and searches its seeded leads.
      const email = before.data[3].attributes.email as string;
      expect((await ok(again, '/api/v1/leads', { email })).meta.total_count).toBeGreaterThan(0);
    } finally {
      expect(again.internalErrors).toEqual([]);
      await again.close();
    }
  });
});

describe('ebsync sandbox --leads/--events/--seed', () => {
  it('rejects bad values with exit 2', async () => {
    const env = { EBSYNC_DATA_DIR: tmp };
    const cases = [
      ['--leads', '-1'],
      ['--leads', 'many'],
      ['--events', '1.5'],
      ['--seed', ''],
      ['--seed', 'a\tb'],
    ];
    const results = await Promise.all(
      cases.map((args) => runCli(['sandbox', '--http', '--port', '0', ...args], env)),
    );
    results.forEach((result, i) => {
      const args = cases[i] ?? [];
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toMatch(new RegExp(`option '${args[0]} <`));
    });
  });

  it('prints what it generated and how long it took', async () => {
    const cli = new CliProcess(
      ['sandbox', '--http', '--port', '0', '--leads', '300', '--events', '12', '--seed', 'x'],
      { EBSYNC_DATA_DIR: tmp },
    );
    try {
      const line = await cli.waitForLine(/^\s+data\s/, 60_000);
      expect(line).toMatch(
        /300 leads .*12 events.* records in all \(event bookings and the catalog included\) in \d+\.\d s \(seed "x"\)/,
      );
      await cli.waitForLine(/Stop: Ctrl-C/, 10_000);
      const result = await cli.stop('SIGTERM', 10_000);
      expect(result.code).toBe(0);
    } finally {
      cli.killAll();
    }
  });
});
