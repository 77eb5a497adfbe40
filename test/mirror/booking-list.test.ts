import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiKeyAuth, createClient, type Client } from '../../api/index.js';
import type { MirrorDeps } from '../../activities/mirror/pass.js';
import { openDestination } from '../../destinations/open-destination.js';
import type { Destination } from '../../destinations/destination.js';
import { openLedger } from '../../store/open-ledger.js';
import type { Ledger } from '../../store/ledger.js';
import { runMirrorPass } from '../helpers/mirror-pass.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { connectTemporal, type TemporalHarness } from '../helpers/temporal.js';
import { sourceIds } from './source-truth.js';

/**
 * A full pass of leads has every lead's bookings from the leads' pages: it asks the
 * lead-booking list only for its count, and reads the list when the count says it lacks some.
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
      (destination ??= Promise.resolve(openDestination(target)).then((d) => {
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
    expect(asked).toEqual([1]);
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
