import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runMirrorPass } from '../helpers/mirror-pass.js';
import { createTestDatabase, queryDatabase } from '../helpers/postgres.js';
import { startSandboxMirror, type SandboxMirror } from '../fixtures/sandbox-mirror.js';

/**
 * Values the service may send that a database column cannot hold, each found by a black-box
 * run to fail every pass with no lead written:
 * - a whole number past 2^53 in an integer column ("estimated_number_guests must be a whole
 *   number, got a whole number"), into SQLite and Postgres alike;
 * - a NUL character, or half of a surrogate pair, in a text ("unsupported Unicode escape
 *   sequence", "invalid input syntax for type json"), into Postgres.
 * Now the lead with the large number is written with that column empty and the whole record in
 * its `record` column, and the pass ends incomplete saying so (written in part); the odd
 * characters are stored as U+FFFD in Postgres, and the pass completes them.
 */
let harness: SandboxMirror;
let postgres: string;

beforeAll(async () => {
  harness = await startSandboxMirror(
    'odd-values',
    { seed: { leads: 30, events: 0, seed: 'ov' } },
    { reachLimit: 10_000, per: 100 },
  );
  postgres = await createTestDatabase('odd_values');
  harness.ts.sb.admin.patchRecord('lead', 5, { first_name: 'Ann\u0000x' });
  harness.ts.sb.admin.patchRecord('lead', 6, { first_name: 'bad\ud800half' });
  harness.ts.sb.admin.patchRecord('lead', 9, { estimated_number_guests: 1e20 });
}, 240_000);

afterAll(async () => {
  await harness?.close();
});

const pass = (destination: string, workflow: string) =>
  runMirrorPass(
    harness.temporal,
    harness.deps,
    { connectionId: 'c1', destination, subjects: ['leads'], mode: 'full' },
    workflow,
  );

function expectWrittenInPart(summary: Awaited<ReturnType<typeof pass>>): void {
  expect(summary.error ?? null).toBeNull();
  expect(summary.phase).toBe('incomplete');
  expect(summary.counts.refused).toBe(0);
  expect(summary.refusals).toEqual([
    'leads 9 written in part: VALUE_DOES_NOT_FIT: estimated_number_guests must be a whole number, got a number too large to hold exactly: left empty in its column (the record column holds it)',
  ]);
}

describe('values a database column cannot hold', () => {
  it('into SQLite: the lead is written without that column, the pass says so', async () => {
    const summary = await pass(harness.sqlite('odd.db'), 'odd-values-sqlite');
    expectWrittenInPart(summary);
    const db = new Database(harness.sqlite('odd.db').slice('sqlite:'.length), { readonly: true });
    try {
      expect(db.prepare(`SELECT count(*) AS n FROM leads`).get()).toEqual({ n: 30 });
      const row = db
        .prepare(`SELECT estimated_number_guests AS g, record FROM leads WHERE id = '9'`)
        .get() as { g: unknown; record: string };
      expect(row.g).toBeNull();
      expect(JSON.parse(row.record).attributes.estimated_number_guests).toBe(1e20);
      expect(db.prepare(`SELECT first_name AS f FROM leads WHERE id = '5'`).get()).toEqual({
        f: 'Ann\u0000x',
      });
    } finally {
      db.close();
    }
  }, 300_000);

  it('into Postgres: NUL and half a pair are stored as U+FFFD, and every lead is written', async () => {
    const summary = await pass(postgres, 'odd-values-postgres');
    expectWrittenInPart(summary);
    const rows = await queryDatabase<{ id: string; first_name: string; record: unknown }>(
      postgres,
      `SELECT id, first_name, record FROM leads WHERE id IN ('5', '6') ORDER BY id`,
    );
    expect(rows.map((r) => r.first_name)).toEqual(['Ann\ufffdx', 'bad\ufffdhalf']);
    expect(
      rows.map((r) => (r.record as { attributes: { first_name: string } }).attributes.first_name),
    ).toEqual(['Ann\ufffdx', 'bad\ufffdhalf']);
    const [count] = await queryDatabase<{ n: string }>(postgres, `SELECT count(*) AS n FROM leads`);
    expect(Number(count!.n)).toBe(30);
  }, 300_000);
});
