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
  it('fails the pass, naming the records it had written there, rather than ending without them', async () => {
    dir = mkdtempSync(join(tmpdir(), 'ebsync-made-again-'));
    ledger = await openLedger(`sqlite:${join(dir, 'store.db')}`);
    const file = join(dir, 'mirror.db');
    real = openDestination(databaseOpeners, `sqlite:${file}`);
    const target = { connectionId: 'c1', ledger, destination: real };
    expect((await writeRecords(target, 1, [lead(1), lead(2)])).written).toBe(2);
    // The user removes the file while the pass goes on (the helper's `rm mirror.db*`).
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true });
    await expect(writeRecords(target, 1, [lead(3)])).rejects.toThrow(
      "the destination's table leads was made anew during this pass (its file or table was removed): 2 records this pass wrote before are not in it; run the sync again, which writes them",
    );
    // The next pass writes every record again into the new file.
    const next = await writeRecords(target, 2, [lead(1), lead(2), lead(3)]);
    expect([next.written, next.unchanged]).toEqual([3, 0]);
  });
});
