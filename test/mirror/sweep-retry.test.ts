import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MirrorDeps } from '../../activities/mirror/pass.js';
import type { Destination } from '../../destinations/destination.js';
import { openDestination } from '../../destinations/open-destination.js';
import { databaseOpeners } from '../../store/database-openers.js';
import { StoreUnavailableError } from '../../store/errors.js';
import type { Ledger } from '../../store/ledger.js';
import { openLedger } from '../../store/open-ledger.js';
import { runMirrorPass } from '../helpers/mirror-pass.js';
import { sandboxClient, startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { connectTemporal, type TemporalHarness } from '../helpers/temporal.js';
import { sourceIds } from './source-truth.js';

/**
 * A deletion sweep attempt that fails after the destination marked its rows deleted (the
 * ledger, told next, was unavailable): the retry finds the rows marked already, and the pass
 * must still count them as marked deleted by it.
 */
const LEADS = 200;
let ts: TestSandbox;
let temporal: TemporalHarness;
let dir: string;
let ledger: Ledger;
let destination: Destination;
/** Calls of the ledger's markDeleted that fail before touching it (the store was down). */
let ledgerOutages = 0;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ebsync-sweep-retry-'));
  ts = await startTestSandbox({ https: false, reachLimit: 10_000, seed: { leads: LEADS } });
  temporal = await connectTemporal();
  ledger = await openLedger(`sqlite:${join(dir, 'store.db')}`);
  destination = openDestination(databaseOpeners, `sqlite:${join(dir, 'mirror.db')}`);
}, 240_000);

afterAll(async () => {
  await destination?.close();
  await ledger?.close();
  await temporal?.close();
  await ts?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The real ledger, whose markDeleted fails while `ledgerOutages` lasts. */
const flakyLedger = (): Ledger =>
  new Proxy(ledger, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (property === 'markDeleted') {
        return (...args: Parameters<Ledger['markDeleted']>) => {
          if (ledgerOutages > 0) {
            ledgerOutages -= 1;
            return Promise.reject(new StoreUnavailableError('the ledger is restarting'));
          }
          return target.markDeleted(...args);
        };
      }
      return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
    },
  });

const deps = (): MirrorDeps => ({
  clientFor: () => Promise.resolve(sandboxClient(ts.sb)),
  ledger: () => Promise.resolve(flakyLedger()),
  destination: () => Promise.resolve(destination),
  reachLimit: 10_000,
  per: 100,
});

const deletedRows = (): string[] => {
  const db = new Database(join(dir, 'mirror.db'), { readonly: true });
  try {
    return db
      .prepare<[], { id: string }>('SELECT id FROM leads WHERE deleted_at IS NOT NULL ORDER BY id')
      .all()
      .map((r) => r.id);
  } finally {
    db.close();
  }
};

describe('a retried deletion sweep', () => {
  it('counts the rows an earlier attempt marked deleted before it failed', async () => {
    const input = {
      connectionId: 'sweep-retry',
      destination: `sqlite:${join(dir, 'mirror.db')}`,
      subjects: ['leads' as const],
      mode: 'full' as const,
    };
    const first = await runMirrorPass(temporal, deps(), input, 'sweep-retry');
    expect(first.phase).toBe('done');

    const gone = [...sourceIds(ts.sb, 'lead')].slice(10, 13).sort();
    for (const id of gone) ts.sb.admin.deleteRecord('lead', Number(id));
    ledgerOutages = 1;
    const pass = await runMirrorPass(temporal, deps(), input, 'sweep-retry');
    // The outage was met (the sweep's attempt failed after the rows were marked) and is over.
    expect(ledgerOutages).toBe(0);
    expect(pass.phase).toBe('done');
    expect(deletedRows()).toEqual(gone);
    expect(pass.counts.deleted).toBe(3);
    const scope = { connectionId: 'sweep-retry', destination: destination.describe().id };
    const entries = await ledger.get({ ...scope, resource: 'leads' }, gone);
    expect(entries.filter((e) => e.deletedAt !== null)).toHaveLength(3);
  }, 300_000);
});
