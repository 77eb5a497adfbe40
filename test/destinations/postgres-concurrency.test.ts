import { describe, expect, it } from 'vitest';
import { openPostgresDestination } from '../../destinations/postgres-destination.js';
import { databaseOpeners } from '../../store/database-openers.js';
import { ALL_TABLES } from '../../destinations/tables.js';
import { createTestDatabase, queryDatabase } from '../helpers/postgres.js';
import { leadRecord } from './destination-suite.js';

/** A deterministic shuffle, so a failure can be replayed. */
function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  let s = seed;
  for (let i = out.length - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

describe('Postgres destination with concurrent writers', () => {
  it('two pools upserting overlapping batches lose no row and fail no batch', async () => {
    const url = await createTestDatabase('concurrent');
    const writers = [
      openPostgresDestination(databaseOpeners, url, { maxConnections: 4 }),
      openPostgresDestination(databaseOpeners, url, { maxConnections: 4 }),
    ];
    try {
      // Both start on an empty database: the schema is created once, without a clash.
      await Promise.all(writers.map((w) => w.ensureSchema(ALL_TABLES)));

      const ids = Array.from({ length: 1000 }, (_, i) => String(i + 1));
      const written = new Map<string, Set<string>>();
      const calls = writers.flatMap((writer, w) =>
        Array.from({ length: 8 }, (_, round) => {
          const version = `w${w}-r${round}`;
          const batch = shuffled(ids, w * 100 + round)
            .slice(0, 400)
            .map((id) => {
              if (!written.has(id)) written.set(id, new Set());
              written.get(id)!.add(version);
              return leadRecord(id, { first_name: version });
            });
          return writer.upsert('leads', batch);
        }),
      );
      const results = await Promise.all(calls);
      expect(results.every((r) => r.inserted + r.updated + r.unchanged === 400)).toBe(true);

      const rows = await queryDatabase<{ id: string; first_name: string; in_record: string }>(
        url,
        `SELECT id, first_name, record->'attributes'->>'first_name' AS in_record FROM leads`,
      );
      expect(rows).toHaveLength(written.size);
      for (const row of rows) {
        // Each row is one whole write: its column and its record agree, from a real batch.
        expect(row.in_record).toBe(row.first_name);
        expect(written.get(row.id)?.has(row.first_name)).toBe(true);
      }
      expect(results.reduce((n, r) => n + r.inserted, 0)).toBe(written.size);
    } finally {
      await Promise.all(writers.map((w) => w.close()));
    }
  });
});
