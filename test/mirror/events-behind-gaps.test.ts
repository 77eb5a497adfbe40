import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiKeyAuth, createClient } from '../../api/index.js';
import { driveMirrorPass, type DrivenPass } from '../helpers/mirror-driver.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

let ts: TestSandbox;
let pass: DrivenPass;

beforeAll(async () => {
  ts = await startTestSandbox({
    https: true,
    reachLimit: 1,
    seed: { leads: 250, events: 20, skew: true, seed: '3' },
  });
  const client = createClient({
    baseUrl: ts.sb.baseUrl,
    auth: apiKeyAuth(ts.sb.apiKey),
    ca: readFileSync(ts.sb.caFile ?? ''),
  });
  pass = await driveMirrorPass({
    client,
    subjects: ['leads', 'events', 'appointments'],
    reachLimit: 10_000,
    per: 100,
  });
}, 240_000);

afterAll(async () => {
  await ts.close();
});

/**
 * Events come only by the ids their bookings name (the spec has no event list): an event whose
 * every booking is out of reach is looked for by id (sandbox --leads 250 --events 20
 * --reach-limit 1 --skew --seed 3, the pass learning the reach).
 */
describe('an event whose only bookings are out of reach', () => {
  it('is mirrored or counted, never dropped', () => {
    const rows = ts.sb.ctx.db
      .prepare(
        `SELECT id FROM records WHERE type = 'event' AND business_id = ? AND deleted_at IS NULL`,
      )
      .all(ts.sb.businessId) as { id: number }[];
    const mirrored = new Set(pass.written.get('events')?.keys() ?? []);
    const lacking = rows.map((r) => String(r.id)).filter((id) => !mirrored.has(id));
    // Event 17's only booking is on a day over the reach: the booking and the event are read
    // by their ids, which lie between those the other bookings named.
    expect(lacking).toEqual([]);
    const bookings = ts.sb.ctx.db
      .prepare(
        `SELECT id FROM records WHERE type = 'event_booking' AND business_id = ? AND deleted_at IS NULL`,
      )
      .all(ts.sb.businessId) as { id: number }[];
    const mirroredBookings = new Set(pass.written.get('event_bookings')?.keys() ?? []);
    expect(bookings.map((r) => String(r.id)).filter((id) => !mirroredBookings.has(id))).toEqual([]);
    expect(pass.gaps.filter((g) => g.startsWith('event_bookings:'))).toEqual([]);
  });
});
