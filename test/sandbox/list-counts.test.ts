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
