import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { driveMirrorPass, type DrivenPass } from '../helpers/mirror-driver.js';
import { sandboxClient, startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { sourceIds } from './source-truth.js';

/**
 * Leads deleted at the service whose bookings stay listed: a pass reads each booking's lead
 * by id, and the service answers 404. A slice that ran out of its time for reads by id asked
 * the whole page's leads again in the next slice, the 404s among them, so with more deleted
 * leads on a page than a slice could read at the service's pace (1 request a second, in a
 * black-box sweep), the page was never whole and the pass went round for ever. A lead
 * answered 404 is now asked once per pass.
 */
const LEADS = 200;
const DELETED = 40;
let ts: TestSandbox;
let pass: DrivenPass;
const askedById = new Map<string, number>();
const deleted: string[] = [];

beforeAll(async () => {
  ts = await startTestSandbox({ https: false, reachLimit: 10_000, seed: { leads: LEADS } });
  const withBookings = ts.sb.ctx.db
    .prepare(
      `SELECT DISTINCT parent_id AS id FROM records WHERE type = 'lead_booking' AND business_id = ?
       ORDER BY parent_id LIMIT ?`,
    )
    .all(ts.sb.businessId, DELETED) as { id: number }[];
  for (const { id } of withBookings) {
    ts.sb.admin.deleteRecord('lead', id);
    deleted.push(String(id));
  }
  const client = sandboxClient(ts.sb);
  const call = client.transport.call.bind(client.transport);
  client.transport.call = (operation, options) => {
    if (operation === 'leads.get') {
      const id = String(options.params?.lead_id ?? '');
      askedById.set(id, (askedById.get(id) ?? 0) + 1);
    }
    return call(operation, options);
  };
  pass = await driveMirrorPass({
    client,
    subjects: ['leads'],
    reachLimit: 10_000,
    per: 25,
    // A slice starts reads by id for a moment only: a few leads each (the first wave of 4).
    readByIdMs: 1,
    pagesInFlight: 1,
    maxPagesInFlight: 1,
  });
}, 120_000);

afterAll(async () => {
  await ts.close();
});

describe('a pass over bookings of leads deleted at the service', () => {
  it('asks each deleted lead once, and ends with every booking written', () => {
    expect(deleted).toHaveLength(DELETED);
    const twice = [...askedById].filter(([, n]) => n > 1).map(([id]) => id);
    expect(twice).toEqual([]);
    for (const id of deleted) expect(askedById.get(id), `lead ${id}`).toBe(1);
    const bookings = pass.written.get('lead_bookings') ?? new Map<string, Set<string>>();
    expect(new Set(bookings.keys())).toEqual(sourceIds(ts.sb, 'lead_booking'));
    expect(pass.partitions.lead_bookings?.report.complete).toBe(true);
  });
});
