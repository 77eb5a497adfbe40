import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiKeyAuth, createClient, type Client } from '../../api/index.js';
import type { Resource } from '../../records/canonical.js';
import { readRecord } from '../../activities/mirror/records-by-id.js';
import {
  driveMirrorPass,
  type DrivenPartition,
  type DrivenPass,
} from '../helpers/mirror-driver.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { sourceIds } from './source-truth.js';

const REACH = 100;
const LEADS = 2000;

/** Every list request the client sent: page and per asked. */
interface ListCall {
  operation: string;
  page: number;
  per: number;
}

let ts: TestSandbox;
let client: Client;
const listCalls: ListCall[] = [];
/** A full pass of the mirror's own activities, into a SQLite mirror. */
let pass: DrivenPass;

function partition(key: string): DrivenPartition {
  const read = pass.partitions[key];
  if (!read) throw new Error(`the pass read no ${key}`);
  return read;
}

/** The sandbox's own rows: live records of the default business. */
const truth = (type: string, extra = ''): Set<string> => sourceIds(ts.sb, type, extra);

/** Ids of the records the pass wrote to the destination. */
const idsOf = (resource: Resource) => new Set(pass.written.get(resource)?.keys() ?? []);

beforeAll(async () => {
  ts = await startTestSandbox({
    https: true,
    reachLimit: REACH,
    seed: { leads: LEADS, events: 300 },
  });
  client = createClient({
    baseUrl: ts.sb.baseUrl,
    auth: apiKeyAuth(ts.sb.apiKey),
    ca: readFileSync(ts.sb.caFile ?? ''),
  });
  const call = client.transport.call.bind(client.transport);
  client.transport.call = (operation, options) => {
    const query = options.query ?? {};
    if (operation.endsWith('.list')) {
      listCalls.push({ operation, page: Number(query.page ?? 1), per: Number(query.per ?? 25) });
    }
    return call(operation, options);
  };
  ts.sb.admin.resetCounters();
  pass = await driveMirrorPass({
    client,
    subjects: ['leads', 'events', 'appointments'],
    reachLimit: REACH,
    per: 100,
  });
}, 240_000);

afterAll(async () => {
  await ts.close();
});

describe('a full read of a sandbox whose reach limit is 100', () => {
  it('reaches every lead but a reported few: reached + unreachable = total_count, unreachable ≤ 1%', () => {
    const leads = partition('leads');
    expect(leads.report.totalCount).toBe(LEADS);
    expect(leads.expected).toBe(LEADS);
    // Every other list is read whole (next test): what the pass reports unreachable are leads.
    const reachedCount = pass.seen.leads ?? 0;
    expect(reachedCount + pass.unreachable).toBe(LEADS);
    expect(pass.unreachable).toBeLessThanOrEqual(LEADS / 100);
    expect(leads.report.complete).toBe(true);
    const reached = idsOf('leads');
    expect(reached.size).toBe(reachedCount);
    const live = truth('lead');
    expect(live.size).toBe(LEADS);
    expect([...reached].filter((id) => !live.has(id))).toEqual([]);
    const byId = pass.requests['leads.get'] ?? 0;
    const requests = (pass.requests['leads.list'] ?? 0) + byId;
    console.log(
      `leads: ${reachedCount} reached, ${pass.unreachable} unreachable, ${requests} requests ` +
        `(${(requests / LEADS).toFixed(4)} per lead, ${byId} by id), ` +
        `${leads.report.queries} queries, gaps ${JSON.stringify(leads.report.gaps)}`,
    );
  });

  it('reads lead bookings, event bookings, events and appointments completely', () => {
    const complete = (key: Resource) => expect(pass.seen[key], key).toBe(partition(key).expected);
    expect(idsOf('lead_bookings')).toEqual(truth('lead_booking'));
    complete('lead_bookings');
    const liveEvents = truth('event');
    expect(liveEvents.size).toBe(300);
    expect(idsOf('events')).toEqual(liveEvents);
    // Every event its bookings name was there to read.
    expect(pass.seen.events).toBe(liveEvents.size);
    expect(idsOf('event_bookings')).toEqual(
      truth(
        'event_booking',
        `AND parent_id IN (SELECT id FROM records WHERE type = 'event' AND deleted_at IS NULL)`,
      ),
    );
    complete('event_bookings');
    expect(idsOf('appointments')).toEqual(truth('appointment'));
    complete('appointments');
  });

  it('reads a record read twice in one pass as the same record (one hash per id)', () => {
    for (const [resource, byId] of pass.written) {
      const differing = [...byId].filter(([, hashes]) => hashes.size !== 1).map(([id]) => id);
      expect({ resource, differing }).toEqual({ resource, differing: [] });
    }
  });

  it('never asks for a page past the reach limit, and the sandbox refused nothing', () => {
    expect(listCalls.length).toBeGreaterThan(0);
    const past = listCalls.filter((c) => c.page * c.per > REACH);
    expect(past).toEqual([]);
    const counters = ts.sb.admin.counters().requests;
    const statuses = Object.values(counters).flatMap((byStatus) => Object.keys(byStatus));
    expect(new Set(statuses)).toEqual(new Set(['200']));
    // The pass counts exactly the requests the service answered: each partition's tally in
    // the store, and each request it sent.
    const answered = (operation: string) => counters[operation]?.['200'] ?? 0;
    // The leads' first activity asks the booking list's count too (for the progress): one
    // request of the leads' tally is a booking list's.
    expect(answered('leads.list') + 1).toBe(partition('leads').tally.requests);
    // Leads read by id: those only bookings name, and the ids the lead list skipped.
    expect(answered('leadBookings.list') + answered('leads.get')).toBe(
      partition('lead_bookings').tally.requests + (pass.probe?.probes ?? 0) + 1,
    );
    expect(answered('eventBookings.list') + answered('events.get')).toBe(
      partition('event_bookings').tally.requests,
    );
    expect(answered('appointments.list')).toBe(partition('appointments').tally.requests);
    expect(pass.requests).toEqual(
      Object.fromEntries(
        Object.keys(counters).map((operation) => [operation, answered(operation)]),
      ),
    );
    expect(ts.internalErrors).toEqual([]);
  });

  it('cuts leads by whole e-mail domains: the parts of a text cut never hold a lead twice', () => {
    // Notes say "Corporate holiday party": a part searching only the word "corp" of
    // corp.example also finds those leads, which another part reads again.
    const { plan } = partition('leads');
    const textCuts = plan.nodes.filter((n) => n.split?.dimension === 'text');
    expect(textCuts.length).toBeGreaterThan(0);
    for (const node of textCuts) {
      const parts = (node.split?.children ?? []).map((id) => plan.nodes[id]);
      const values = parts.map((part) => part?.query.text ?? '');
      expect(values.filter((v) => !/^[a-z0-9-]+(\.[a-z0-9-]+)+$/.test(v))).toEqual([]);
      const held = parts.reduce((sum, part) => sum + (part?.total ?? 0), 0);
      const twice = Math.max(0, held - (node.total ?? 0));
      expect({ query: node.query, twice }).toEqual({ query: node.query, twice: 0 });
    }
  });
});

describe('canonical records', () => {
  it('money in integer cents, timestamps in UTC ISO, relationships as ids', async () => {
    const event = [...idsOf('events')][0] ?? '';
    const read = await readRecord(client, 'events', event);
    const attributes = read?.record.attributes ?? {};
    expect(Number.isInteger(attributes.starting_balance_cents)).toBe(true);
    expect(attributes).not.toHaveProperty('starting_balance');
    expect(attributes).not.toHaveProperty('starting_balance_formatted');
    expect(attributes.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    const bookings = read?.record.relationships.event_bookings;
    expect(Array.isArray(bookings) && bookings.length > 0).toBe(true);

    const withBudget = ts.sb.ctx.db
      .prepare(
        `SELECT id, json_extract(attrs, '$.estimated_budget') AS budget FROM records
          WHERE type = 'lead' AND json_extract(attrs, '$.estimated_budget') = 1249.99`,
      )
      .get() as { id: number; budget: number } | undefined;
    const lead = await readRecord(client, 'leads', String(withBudget?.id));
    expect(lead?.record.attributes.estimated_budget_cents).toBe(124_999);
    expect(lead?.record.attributes.created_at).toMatch(/Z$/);
  });

  it('hashes a lead the same by id as in the list, across reads and clock changes; an edit changes it', async () => {
    const id = [...idsOf('leads')][5] ?? '';
    const listed = [...(pass.written.get('leads')?.get(id) ?? [])][0];
    const first = await readRecord(client, 'leads', id);
    expect(first?.record.hash).toBe(listed);
    const second = await readRecord(client, 'leads', id);
    expect(second?.record.hash).toBe(first?.record.hash);

    // The "… ago" text moves with the clock: the record does not change.
    const admin = { 'x-admin-token': ts.sb.adminToken };
    const advanced = await ts.request('POST', '/admin/clock/advance', {
      headers: admin,
      json: { seconds: 3 * 365 * 86_400 },
    });
    expect(advanced.status).toBe(200);
    const later = await readRecord(client, 'leads', id);
    expect(later?.record.attributes.created_at_description).not.toBe(
      first?.record.attributes.created_at_description,
    );
    expect(later?.record.hash).toBe(first?.record.hash);

    const patched = await ts.request('PATCH', `/admin/records/lead/${id}`, {
      headers: admin,
      json: { attributes: { first_name: 'Renamed' } },
    });
    expect(patched.status).toBe(200);
    const edited = await readRecord(client, 'leads', id);
    expect(edited?.record.attributes.first_name).toBe('Renamed');
    expect(edited?.record.hash).not.toBe(first?.record.hash);
  });

  it('reads a deleted lead as gone (null), for the deletion check', async () => {
    const id = [...idsOf('leads')][7] ?? '';
    const deleted = await ts.request('DELETE', `/admin/records/lead/${id}`, {
      headers: { 'x-admin-token': ts.sb.adminToken },
    });
    expect(deleted.status).toBe(200);
    expect(await readRecord(client, 'leads', id)).toBeNull();
  });
});
