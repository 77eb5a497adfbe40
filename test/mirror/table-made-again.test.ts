import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { writeRecords } from '../../activities/mirror/write-records.js';
import type { Destination } from '../../destinations/destination.js';
import { databaseOpeners } from '../../store/database-openers.js';
import { openDestination } from '../../destinations/open-destination.js';
import { canonicalRecord } from '../../records/canonical.js';
import type { Ledger } from '../../store/ledger.js';
import { openLedger } from '../../store/open-ledger.js';
import Database from 'better-sqlite3';
import { driveMirrorPass } from '../helpers/mirror-driver.js';
import { sandboxClient, startTestSandbox } from '../helpers/sandbox.js';

/**
 * A table made again while a pass writes it (removed by hand) holds none of the rows the
 * ledger's hashes describe, so the batch that makes it has them forgotten. A batch written
 * beside it (Postgres takes two at once) used to ask for the table itself, hear "there
 * already", and compare its records with the hashes about to be forgotten: its records
 * counted up to date, and the new table lacked them. It now waits for that same ensure.
 */
let dir: string | undefined;
let ledger: Ledger | undefined;
let real: Destination | undefined;

afterEach(async () => {
  await real?.close();
  await ledger?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const lead = (id: number) =>
  canonicalRecord('leads', {
    id: String(id),
    type: 'lead',
    attributes: { email: `lead${id}@example.com`, first_name: `Lead ${id}` },
  });

describe('a table made again beside a running batch', () => {
  it('has every record of both batches written, none taken for up to date', async () => {
    dir = mkdtempSync(join(tmpdir(), 'ebsync-made-again-'));
    ledger = await openLedger(`sqlite:${join(dir, 'store.db')}`);
    real = openDestination(databaseOpeners, `sqlite:${join(dir, 'mirror.db')}`);
    const opened = real;
    let madeAgain = false;
    const upserted: string[] = [];
    const destination: Destination = {
      ...opened,
      async ensureTable(resource) {
        if (!madeAgain) return opened.ensureTable(resource);
        // Made again now, and slowly: the next batch starts meanwhile.
        madeAgain = false;
        await new Promise((r) => setTimeout(r, 30));
        return true;
      },
      async upsert(resource, records, at) {
        upserted.push(...records.map((r) => r.id));
        return opened.upsert(resource, records, at);
      },
    };
    const target = { connectionId: 'c1', ledger, destination };
    const all = [1, 2, 3, 4].map(lead);
    expect((await writeRecords(target, 1, all)).written).toBe(4);
    upserted.length = 0;

    madeAgain = true;
    const [first, second] = await Promise.all([
      writeRecords(target, 2, all.slice(0, 2)),
      writeRecords(target, 2, all.slice(2)),
    ]);
    expect(first.written + second.written).toBe(4);
    expect(first.unchanged + second.unchanged).toBe(0);
    expect(upserted.sort()).toEqual(['1', '2', '3', '4']);
  });
});

describe('a table made again in the middle of a pass', () => {
  it('ends the pass incomplete, naming the records the new table lacks, rather than done', async () => {
    const ts = await startTestSandbox({ https: false, reachLimit: 10_000, seed: { leads: 120 } });
    try {
      let upserts = 0;
      let file = '';
      let rows = -1;
      const pass = await driveMirrorPass({
        client: sandboxClient(ts.sb),
        subjects: ['leads'],
        reachLimit: 10_000,
        per: 20,
        pagesInFlight: 1,
        maxPagesInFlight: 1,
        writeBatch: 20,
        destinationAs: (opened) => {
          file = opened.describe().id.slice('sqlite:'.length);
          return {
            ...opened,
            async upsert(resource, records, at) {
              const result = await opened.upsert(resource, records, at);
              // The user removes the file after the third batch (the sweep's `rm mirror.db*`).
              if ((upserts += 1) === 3) {
                for (const suffix of ['', '-wal', '-shm'])
                  rmSync(`${file}${suffix}`, { force: true });
              }
              return result;
            },
            async close() {
              // Counted before the drive removes its folder.
              const db = new Database(file, { readonly: true });
              rows = (db.prepare('SELECT count(*) AS n FROM leads').get() as { n: number }).n;
              db.close();
              return opened.close();
            },
          };
        },
      });
      expect(upserts).toBeGreaterThan(3);
      // What the pass wrote before the removal is not in the new file: counted, and said.
      expect(rows).toBeLessThan(120);
      expect(pass.unreachable).toBeGreaterThanOrEqual(120 - rows);
      expect(pass.gaps.join('\n')).toMatch(
        /leads: \d+ records this pass wrote or found up to date are not in the destination, whose leads table was made anew during the pass \(its file or table removed\); the next pass writes them/,
      );
    } finally {
      await ts.close();
    }
  }, 120_000);
});
