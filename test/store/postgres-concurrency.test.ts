import { LEDGER_MIGRATIONS } from '../../store/ledger-migrations.js';
import { describe, expect, it } from 'vitest';
import type { LedgerScope, PassKey } from '../../store/ledger.js';
import { openPostgresLedger } from '../../store/postgres-ledger.js';
import { createTestDatabase, queryDatabase } from '../helpers/postgres.js';

const scope: LedgerScope = {
  connectionId: 'c1',
  destination: 'postgres://h:5432/m',
  resource: 'leads',
};
const pass: PassKey = { connectionId: 'c1', destination: 'postgres://h:5432/m', pass: 'all' };

describe('Postgres ledger shared by many workers', () => {
  it('opens from several workers at once and migrates once', async () => {
    const url = await createTestDatabase('ledger_open');
    const ledgers = await Promise.all([1, 2, 3].map(() => openPostgresLedger(url)));
    await Promise.all(ledgers.map((l) => l.close()));
    const versions = await queryDatabase<{ version: number }>(
      url,
      'SELECT version FROM schema_migrations ORDER BY version',
    );
    expect(versions).toEqual(LEDGER_MIGRATIONS.map((m) => ({ version: m.version })));
  });

  it('takes overlapping writes, sightings and deletions from two pools without loss', async () => {
    const url = await createTestDatabase('ledger_concurrent');
    const [a, b] = await Promise.all([
      openPostgresLedger(url, { maxConnections: 4 }),
      openPostgresLedger(url, { maxConnections: 4 }),
    ]);
    try {
      const ids = Array.from({ length: 600 }, (_, i) => String(i + 1));
      const work = [a, b].flatMap((ledger, w) =>
        Array.from({ length: 6 }, (_, round) => {
          // Each call covers a different, overlapping slice, in its own order.
          const slice = ids.slice(round * 60, round * 60 + 300);
          const order = w === 0 ? slice : [...slice].reverse();
          return (async () => {
            await ledger.recordWritten(
              scope,
              round + 1,
              order.map((id) => ({ id, hash: `h${w}${round}`, destinationKey: id })),
            );
            await ledger.markSeen(scope, round + 2, order);
            await ledger.markDeleted(
              scope,
              order.filter((id) => Number(id) % 50 === 0),
            );
          })();
        }),
      );
      await Promise.all(work);
      const written = new Set(ids.slice(0, 5 * 60 + 300));
      const counts = await a.counts(scope);
      expect(counts.live + counts.deleted).toBe(written.size);
      const entries = await b.get(scope, [...written]);
      expect(entries).toHaveLength(written.size);
      // The highest generation that marked a record seen is the one it keeps.
      expect(entries.every((e) => e.generation >= 2)).toBe(true);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('gives workers beginning the same pass at once one generation', async () => {
    const url = await createTestDatabase('ledger_pass');
    const [a, b] = await Promise.all([openPostgresLedger(url), openPostgresLedger(url)]);
    try {
      const states = await Promise.all(
        Array.from({ length: 6 }, (_, i) => (i % 2 ? a : b).beginPass(pass)),
      );
      expect(new Set(states.map((s) => s.generation)).size).toBe(1);
      expect(states.filter((s) => !s.resumed)).toHaveLength(1);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
