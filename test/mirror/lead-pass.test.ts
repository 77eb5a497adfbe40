import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiKeyAuth, createClient, type Client } from '../../api/index.js';
import type { MirrorDeps } from '../../activities/mirror/pass.js';
import { openDestination } from '../../destinations/open-destination.js';
import { databaseOpeners } from '../../store/database-openers.js';
import type { Destination } from '../../destinations/destination.js';
import { openLedger } from '../../store/open-ledger.js';
import type { Ledger } from '../../store/ledger.js';
import { createMirrorActivities } from '../../activities/mirror/pass.js';
import { mirrorWorkflow } from '../../workflows/mirror.js';
import { runMirrorPass } from '../helpers/mirror-pass.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { connectTemporal, type TemporalHarness } from '../helpers/temporal.js';
import { sourceIds } from './source-truth.js';

/**
 * What a pass of leads asks the service and what it keeps in Temporal. It has every lead's
 * bookings from the leads' pages, so it asks the lead-booking list only for its count, and
 * reads the list when the count says it lacks some. Its workflow history holds ids, keys and
 * counts: the partition plans live in the store (DESIGN decision 1), records nowhere.
 */

let ts: TestSandbox;
let temporal: TemporalHarness;
let dir: string;
const closers: (() => Promise<void>)[] = [];

/** The pages of the lead-booking list asked for, by their `per`. */
type Asked = number[];

function depsWith(
  asked: Asked,
  location: string,
  options: { dropIncludedOfFirstPage?: boolean } = {},
): MirrorDeps {
  const counting = (client: Client): Client => {
    const list = client.leadBookings.list.bind(client.leadBookings);
    client.leadBookings.list = (query) => {
      asked.push(Number(query?.per ?? 0));
      return list(query);
    };
    if (options.dropIncludedOfFirstPage) {
      // As if the service had left the first page's bookings out of its sideload.
      const leads = client.leads.list.bind(client.leads);
      client.leads.list = async (query) => {
        const answer = await leads(query);
        return query?.page === 1 ? { ...answer, included: [] } : answer;
      };
    }
    return client;
  };
  let ledger: Promise<Ledger> | undefined;
  let destination: Promise<Destination> | undefined;
  return {
    clientFor: () =>
      Promise.resolve(
        counting(
          createClient({
            baseUrl: ts.sb.baseUrl,
            auth: apiKeyAuth(ts.sb.apiKey),
            allowInsecureLoopback: true,
          }),
        ),
      ),
    ledger: () =>
      (ledger ??= openLedger(`sqlite:${join(dir, `${location}-store.db`)}`).then((l) => {
        closers.push(() => l.close());
        return l;
      })),
    destination: (target) =>
      (destination ??= Promise.resolve(openDestination(databaseOpeners, target)).then((d) => {
        closers.push(() => d.close());
        return d;
      })),
    reachLimit: 10_000,
    per: 100,
  };
}

const rows = (file: string, sql: string) => {
  const db = new Database(file, { readonly: true });
  try {
    return (db.prepare(sql).all() as { id: unknown }[]).map((r) => String(r.id));
  } finally {
    db.close();
  }
};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ebsync-booking-list-'));
  ts = await startTestSandbox({ https: false, seed: { leads: 300, events: 0 } });
  temporal = await connectTemporal();
}, 120_000);

afterAll(async () => {
  for (const close of closers) await close();
  await temporal?.close();
  await ts?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the lead-booking list in a full pass of leads', () => {
  it('is asked only for its count when the leads brought every booking (full or incremental), and still every booking is mirrored', async () => {
    const asked: Asked = [];
    const file = join(dir, 'all.db');
    const summary = await runMirrorPass(
      temporal,
      depsWith(asked, 'all'),
      { connectionId: 'c1', destination: `sqlite:${file}`, subjects: ['leads'], mode: 'full' },
      'booking-list',
    );
    expect(summary.phase).toBe('done');
    // One result each: the count asked along with the first leads (for the progress), and the
    // one the pass is settled by once the leads are read.
    expect(asked).toEqual([1, 1]);
    expect(new Set(rows(file, 'SELECT id FROM lead_bookings'))).toEqual(
      sourceIds(ts.sb, 'lead_booking'),
    );
  });

  it('is read when the leads brought fewer bookings than it counts, and every booking is mirrored', async () => {
    const asked: Asked = [];
    const file = join(dir, 'short.db');
    const summary = await runMirrorPass(
      temporal,
      depsWith(asked, 'short', { dropIncludedOfFirstPage: true }),
      {
        connectionId: 'c1',
        destination: `sqlite:${file}`,
        subjects: ['leads'],
        mode: 'incremental',
      },
      'booking-list-short',
    );
    expect(summary.phase).toBe('done');
    expect(asked[0]).toBe(1);
    expect(asked.filter((per) => per > 1).length).toBeGreaterThan(0);
    expect(new Set(rows(file, 'SELECT id FROM lead_bookings'))).toEqual(
      sourceIds(ts.sb, 'lead_booking'),
    );
  });
});

describe('the workflow history of a pass of leads', () => {
  it('holds no partition plan and no record: ids, keys and counts only', async () => {
    const taskQueue = temporal.taskQueue();
    const workflowId = `lead-pass-history-${taskQueue}`;
    await temporal.withWorker(
      { taskQueue, activities: createMirrorActivities(depsWith([], 'history')) },
      () =>
        temporal.client.workflow.execute(mirrorWorkflow, {
          taskQueue,
          workflowId,
          args: [
            {
              connectionId: 'c1',
              destination: `sqlite:${join(dir, 'history.db')}`,
              subjects: ['leads'],
              mode: 'full',
            },
          ],
        }),
    );
    const history = await temporal.client.workflow.getHandle(workflowId).fetchHistory();
    const payloads = (history.events ?? []).flatMap((event) =>
      Object.values(event)
        .filter((v): v is Record<string, unknown> => v !== null && typeof v === 'object')
        .flatMap((attributes) =>
          ['input', 'result'].flatMap((k) => {
            const p = attributes[k] as { payloads?: { data?: Uint8Array }[] } | undefined;
            return (p?.payloads ?? []).map((x) => Buffer.from(x.data ?? []).toString('utf8'));
          }),
        ),
    );
    expect(payloads.length).toBeGreaterThan(4);
    const text = payloads.join('\n');
    // A plan is a list of query nodes with epochs; a record has its attributes.
    expect(text).not.toMatch(/"nodes"|"epoch"/);
    expect(text).not.toMatch(/"attributes"|"email"/);
    for (const email of sampleEmails()) expect(text).not.toContain(email);
    // The whole history of a 300-lead pass stays small.
    expect(Buffer.byteLength(text)).toBeLessThan(20_000);
  }, 120_000);
});

/** A few of the sandbox's lead e-mails: none may appear in Temporal. */
function sampleEmails(): string[] {
  const rows = ts.sb.ctx.db
    .prepare(
      `SELECT json_extract(attrs, '$.email') AS email FROM records WHERE type = 'lead' AND json_extract(attrs, '$.email') IS NOT NULL LIMIT 5`,
    )
    .all() as { email: string }[];
  expect(rows.length).toBe(5);
  return rows.map((r) => r.email);
}
