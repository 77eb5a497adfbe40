import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

/**
 * An unfiltered lead or lead-booking list takes its total_count from a maintained counter
 * (lead_counts), not a count over every row; these check it against a fresh count through a
 * filter (which still counts rows) as records come, go soft and go hard, and after seeding.
 */

interface ListBody {
  data: { id: string; attributes: Record<string, unknown> }[];
  meta: { total_count: number };
}

let t: TestSandbox;

beforeAll(async () => {
  t = await startTestSandbox({ seed: { leads: 300, seed: 'counts' } });
});

afterAll(async () => {
  expect(t.internalErrors).toEqual([]);
  await t.close();
});

async function total(path: string, query: Record<string, string> = {}): Promise<number> {
  const res = await t.request('GET', path, { query: { per: '1', ...query } });
  expect(res.status).toBe(200);
  return (res.body as ListBody).meta.total_count;
}

function liveCount(type: string): number {
  return (
    t.sb.ctx.db
      .prepare('SELECT count(*) AS n FROM records WHERE type = ? AND deleted_at IS NULL')
      .get(type) as { n: number }
  ).n;
}

describe('unfiltered list totals', () => {
  it('match the live records after seeding', async () => {
    expect(await total('/api/v1/leads')).toBe(liveCount('lead'));
    expect(await total('/api/v1/lead_bookings')).toBe(liveCount('lead_booking'));
    expect(liveCount('lead')).toBe(300);
  });

  it('follow creates, soft deletes and hard deletes', async () => {
    const leadsBefore = await total('/api/v1/leads');
    const bookingsBefore = await total('/api/v1/lead_bookings');
    const created = await t.request('POST', '/api/v1/leads', {
      json: { email: 'count.me@example.com', event_date: '2031-05-04' },
    });
    expect(created.status).toBe(200);
    const leadId = Number((created.body as { data: { id: string } }).data.id);
    expect(await total('/api/v1/leads')).toBe(leadsBefore + 1);
    expect(await total('/api/v1/lead_bookings')).toBe(bookingsBefore + 1);

    const bookings = await t.request('GET', '/api/v1/lead_bookings', {
      query: { event_date_start: '2031-05-04', event_date_end: '2031-05-04' },
    });
    const bookingId = (bookings.body as ListBody).data[0]?.id;
    expect(bookingId).toBeDefined();
    expect((await t.request('DELETE', `/api/v1/lead_bookings/${bookingId}`)).status).toBe(200);
    expect(await total('/api/v1/lead_bookings')).toBe(bookingsBefore);

    t.sb.admin.deleteRecord('lead', leadId);
    expect(await total('/api/v1/leads')).toBe(leadsBefore);
    expect(await total('/api/v1/leads', { email: 'count.me@example.com' })).toBe(0);
    t.sb.admin.deleteRecord('lead', leadId, { hard: true });
    expect(await total('/api/v1/leads')).toBe(leadsBefore);

    const firstLead = Number(
      ((await t.request('GET', '/api/v1/leads')).body as ListBody).data[0]?.id,
    );
    t.sb.admin.deleteRecord('lead', firstLead, { hard: true });
    expect(await total('/api/v1/leads')).toBe(leadsBefore - 1);
    expect(await total('/api/v1/leads')).toBe(liveCount('lead'));
    expect(await total('/api/v1/lead_bookings')).toBe(liveCount('lead_booking'));
  });
});

/**
 * Deep pages of unfiltered lists start from page anchors (every 500th live id) instead of
 * skipping every row before them; these check the pages against the ids a plain OFFSET gives,
 * as records come and go between reads.
 */
describe('deep pages of unfiltered lists', () => {
  let deep: TestSandbox;
  beforeAll(async () => {
    deep = await startTestSandbox({ seed: { leads: 1300, seed: 'anchors' } });
  });
  afterAll(async () => {
    expect(deep.internalErrors).toEqual([]);
    await deep.close();
  });

  const expected = (type: string, offset: number, per: number): string[] =>
    (
      deep.sb.ctx.db
        .prepare(
          `SELECT id FROM records WHERE type = ? AND business_id = ? AND deleted_at IS NULL
             ORDER BY id LIMIT ? OFFSET ?`,
        )
        .pluck()
        .all(type, deep.sb.businessId, per, offset) as number[]
    ).map(String);

  async function page(path: string, pageNo: number, per: number): Promise<string[]> {
    const res = await deep.request('GET', path, {
      query: { per: String(per), page: String(pageNo) },
    });
    expect(res.status).toBe(200);
    return (res.body as ListBody).data.map((d) => d.id);
  }

  it('gives the rows a plain OFFSET gives, before and after leads come and go', async () => {
    const check = async () => {
      for (const [pageNo, per] of [
        [6, 100],
        [8, 100],
        [12, 100],
        [11, 50],
        [26, 50],
      ] as const) {
        const want = expected('lead', (pageNo - 1) * per, per);
        expect(want.length, `page ${pageNo} per ${per}`).toBeGreaterThan(0);
        expect(await page('/api/v1/leads', pageNo, per), `page ${pageNo} per ${per}`).toEqual(want);
      }
    };
    await check();
    const early = (id: number) => {
      const record = deep.sb.ctx.records.get('lead', deep.sb.businessId, id);
      if (!record) throw new Error(`no lead ${id}`);
      return record;
    };
    const ids = expected('lead', 0, 20).map(Number);
    // Each change shifts every later page by one; a stale anchor would show it.
    deep.sb.ctx.records.softDelete(early(ids[3] ?? 0), deep.sb.ctx.clock.iso());
    await check();
    deep.sb.ctx.records.hardDelete(early(ids[7] ?? 0));
    await check();
    const restored = deep.sb.ctx.records.get('lead', deep.sb.businessId, ids[3] ?? 0, {
      includeDeleted: true,
    });
    if (!restored) throw new Error('deleted lead not found');
    deep.sb.ctx.records.update({ ...restored, deletedAt: null }, {});
    await check();
    const late = await deep.request('POST', '/api/v1/leads', {
      json: { email: 'late@example.com' },
    });
    expect(late.status).toBeLessThan(300);
    await check();
  });

  it('gives filtered pages the rows a fresh query gives, as leads move in and out of the filter', async () => {
    const origin = 'Lead Form';
    const match = '"example.com"*';
    const fresh = (withText: boolean): string[] =>
      (
        deep.sb.ctx.db
          .prepare(
            `SELECT id FROM records WHERE type = 'lead' AND business_id = ? AND deleted_at IS NULL
               AND json_extract(attrs, '$.origin') = ?
               ${withText ? 'AND id IN (SELECT rowid FROM lead_search WHERE lead_search MATCH ?)' : ''}
             ORDER BY id`,
          )
          .pluck()
          .all(deep.sb.businessId, origin, ...(withText ? [match] : [])) as number[]
      ).map(String);
    const listed = async (withText: boolean): Promise<{ ids: string[]; total: number }> => {
      const ids: string[] = [];
      let total = 0;
      for (let pageNo = 1; ; pageNo += 1) {
        const query: Record<string, string> = { per: '20', page: String(pageNo), origin };
        if (withText) query.text = 'example.com';
        const res = await deep.request('GET', '/api/v1/leads', { query });
        expect(res.status).toBe(200);
        const body = res.body as ListBody;
        total = body.meta.total_count;
        ids.push(...body.data.map((d) => d.id));
        if (body.data.length < 20) return { ids, total };
      }
    };
    const check = async () => {
      for (const withText of [false, true]) {
        const want = fresh(withText);
        expect(want.length).toBeGreaterThan(20);
        expect(await listed(withText), `text ${withText}`).toEqual({
          ids: want,
          total: want.length,
        });
      }
    };
    await check();
    const [, moved, gone] = fresh(true).map(Number);
    const lead = (id: number | undefined) => {
      const record = deep.sb.ctx.records.get('lead', deep.sb.businessId, id ?? 0);
      if (!record) throw new Error(`no lead ${id}`);
      return record;
    };
    // Every change below is asked for right after the same lists were read whole.
    deep.sb.ctx.records.update(lead(moved), { origin: 'API' });
    await check();
    deep.sb.ctx.records.update(lead(moved), { origin, email: 'moved@elsewhere.test' });
    await check();
    deep.sb.ctx.records.update(lead(moved), { email: 'moved@example.com' });
    await check();
    deep.sb.ctx.records.softDelete(lead(gone), deep.sb.ctx.clock.iso());
    await check();
  });

  it('pages lead bookings the same way', async () => {
    for (const [pageNo, per] of [
      [7, 100],
      [9, 100],
    ] as const) {
      expect(await page('/api/v1/lead_bookings', pageNo, per)).toEqual(
        expected('lead_booking', (pageNo - 1) * per, per),
      );
    }
  });
});
