import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiKeyAuth, createClient } from '../../api/index.js';
import { createMirrorActivities, type MirrorDeps } from '../../activities/mirror/pass.js';
import { openDestination } from '../../destinations/open-destination.js';
import { databaseOpeners } from '../../store/database-openers.js';
import type { Destination } from '../../destinations/destination.js';
import { openLedger } from '../../store/open-ledger.js';
import type { Ledger } from '../../store/ledger.js';
import { mirrorProgressQuery } from '../../workflows/mirror-types.js';
import { mirrorWorkflow } from '../../workflows/mirror.js';
import type { MirrorInput, MirrorSummary } from '../../workflows/mirror-types.js';
import { createTestDatabase, queryDatabase } from '../helpers/postgres.js';
import { runMirrorPass } from '../helpers/mirror-pass.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';
import { connectTemporal, type TemporalHarness } from '../helpers/temporal.js';
import { TABLES } from '../../destinations/tables.js';
import { COMPLETE_TABLES, sourceIds } from './source-truth.js';

const REACH = 100;
const CONFIGURED_REACH = 10_000;
const LEADS = 2000;
const EVENTS = 300;

let ts: TestSandbox;
let temporal: TemporalHarness;
let dir: string;
const ledgers: Ledger[] = [];
const destinations = new Map<string, Destination>();

function depsFor(ledgerLocation: string): MirrorDeps {
  let ledger: Promise<Ledger> | undefined;
  return {
    clientFor: () =>
      Promise.resolve(
        createClient({
          baseUrl: ts.sb.baseUrl,
          auth: apiKeyAuth(ts.sb.apiKey),
          ca: readFileSync(ts.sb.caFile ?? ''),
        }),
      ),
    ledger: () =>
      (ledger ??= openLedger(ledgerLocation).then((l) => {
        ledgers.push(l);
        return l;
      })),
    destination: (target) => {
      let d = destinations.get(target);
      if (!d) destinations.set(target, (d = openDestination(databaseOpeners, target)));
      return Promise.resolve(d);
    },
    // The setting left at its default, as a user who never heard of the sandbox's reach
    // would: the plans learn the service's 100 from its pages.
    reachLimit: CONFIGURED_REACH,
    per: 100,
  };
}

/** The sandbox's own live rows of a type. */
const truth = (type: string, extra = ''): Set<string> => sourceIds(ts.sb, type, extra);

async function runPass(
  deps: MirrorDeps,
  input: Omit<MirrorInput, 'connectionId'>,
): Promise<MirrorSummary> {
  return runMirrorPass(temporal, deps, { connectionId: 'c1', ...input }, 'mirror-test');
}

function sqliteRows(file: string, sql: string): Record<string, unknown>[] {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare(sql).all() as Record<string, unknown>[];
  } finally {
    db.close();
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ebsync-mirror-'));
  ts = await startTestSandbox({
    https: true,
    reachLimit: REACH,
    seed: { leads: LEADS, events: EVENTS },
  });
  temporal = await connectTemporal();
}, 240_000);

afterAll(async () => {
  for (const d of destinations.values()) await d.close();
  for (const l of ledgers) await l.close();
  await temporal?.close();
  await ts?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('mirrorWorkflow into SQLite (reach limit 100, 2,000 leads, 300 events)', () => {
  const file = () => join(dir, 'mirror.db');
  const deps = () => depsFor(`sqlite:${join(dir, 'store.db')}`);
  let sqliteDeps: MirrorDeps;
  let first: MirrorSummary;

  beforeAll(async () => {
    sqliteDeps = deps();
    first = await runPass(sqliteDeps, {
      destination: `sqlite:${file()}`,
      subjects: ['leads', 'events', 'appointments'],
      mode: 'full',
    });
  }, 300_000);

  it('mirrors every event, event booking, lead booking and appointment, once', () => {
    const ids = (table: string) =>
      sqliteRows(file(), `SELECT id FROM ${table} WHERE deleted_at IS NULL`).map((r) =>
        String(r.id),
      );
    for (const [table, type, extra] of COMPLETE_TABLES) {
      const rows = ids(table);
      expect(new Set(rows).size, `${table} duplicated`).toBe(rows.length);
      expect(new Set(rows), table).toEqual(truth(type, extra));
    }
    expect(ids('events')).toHaveLength(EVENTS);
  });

  it('accounts for every lead: mirrored + reported unreachable = total_count, at most 1% unreachable', () => {
    const mirrored = sqliteRows(file(), 'SELECT id FROM leads').map((r) => String(r.id));
    const live = truth('lead');
    expect(mirrored.filter((id) => !live.has(id))).toEqual([]);
    const unreachableLeads = LEADS - mirrored.length;
    expect(unreachableLeads).toBeLessThanOrEqual(LEADS / 100);
    // The pass reports exactly the leads it could not reach, and nothing else is missing.
    expect(first.counts.unreachable).toBe(unreachableLeads);
    if (unreachableLeads > 0) expect(first.gaps.join('\n')).toMatch(/^leads: \d+ unreachable in /m);
    expect(first.phase).toBe(unreachableLeads > 0 ? 'incomplete' : 'done');
    // Configured 10,000; the pages showed 100.
    expect(first.reach).toMatchObject({ configured: CONFIGURED_REACH, reach: REACH });
    expect(first.counts.written).toBeGreaterThan(LEADS);
  });

  it('reports no gap for lead bookings without a date, which come with their leads', () => {
    // The date windows of the lead-booking list cannot reach these; their leads' pages can.
    const undated = truth('lead_booking', "AND json_extract(attrs, '$.starts_at') IS NULL");
    expect(undated.size).toBeGreaterThan(0);
    const mirrored = new Set(
      sqliteRows(file(), 'SELECT id FROM lead_bookings').map((r) => String(r.id)),
    );
    expect([...undated].filter((id) => !mirrored.has(id))).toEqual([]);
    expect(first.gaps.filter((g) => g.startsWith('lead_bookings'))).toEqual([]);
  });

  it('keeps money in cents and timestamps in UTC, with the whole record as JSON', () => {
    const [row] = sqliteRows(
      file(),
      `SELECT * FROM events WHERE balance_amount_due_cents IS NOT NULL ORDER BY id LIMIT 1`,
    );
    expect(Number.isInteger(row?.balance_amount_due_cents)).toBe(true);
    const record = JSON.parse(String(row?.record)) as { id: string };
    expect(record.id).toBe(String(row?.id));
  });

  it('fills every column from the attribute of the record it names, as often as the record has it', () => {
    for (const table of Object.values(TABLES)) {
      for (const column of table.columns) {
        const key = column.from ?? column.name;
        const path = `'$.attributes.${key}'`;
        const [row] = sqliteRows(
          file(),
          `SELECT count(json_type(record, ${path})) AS present,
                  count(CASE WHEN json_type(record, ${path}) <> 'null' THEN 1 END) AS valued,
                  count(${column.name}) AS filled
           FROM ${table.table}`,
        );
        const counts = row as { present: number; valued: number; filled: number };
        if (column.name.endsWith('_id') && counts.present === 0) continue; // from a relationship
        // A column whose attribute no record carries reads nothing, ever (a stale `from`).
        expect(counts.present, `${table.table}.${column.name} reads '${key}'`).toBeGreaterThan(0);
        expect(counts.filled, `${table.table}.${column.name}`).toBe(counts.valued);
      }
    }
  });

  it('writes nothing on a second pass over unchanged data, then exactly the 5 leads edited', async () => {
    const again = await runPass(sqliteDeps, {
      destination: `sqlite:${file()}`,
      subjects: ['leads', 'events', 'appointments'],
      mode: 'full',
    });
    expect(again.counts.written).toBe(0);
    expect(again.counts.deleted).toBe(0);

    const before = new Map(
      sqliteRows(file(), 'SELECT id, synced_at FROM leads').map((r) => [r.id, r.synced_at]),
    );
    const bookingsBefore = new Map(
      sqliteRows(file(), 'SELECT id, synced_at FROM lead_bookings').map((r) => [r.id, r.synced_at]),
    );
    const edited = [...before.keys()].slice(10, 15).map(Number);
    for (const id of edited) ts.sb.admin.patchRecord('lead', id, { first_name: `Edited${id}` });
    const third = await runPass(sqliteDeps, {
      destination: `sqlite:${file()}`,
      subjects: ['leads'],
      mode: 'incremental',
    });
    const after = sqliteRows(file(), 'SELECT id, synced_at, first_name FROM leads');
    const changed = after.filter((r) => before.get(r.id) !== r.synced_at).map((r) => r.id);
    expect(changed.map(Number).sort()).toEqual([...edited].sort());
    // A booking shows its lead's name, so the edited leads' bookings change with them, and
    // nothing else does.
    const bookings = sqliteRows(file(), 'SELECT id, lead_id, synced_at FROM lead_bookings').filter(
      (b) => bookingsBefore.get(b.id) !== b.synced_at,
    );
    expect(bookings.filter((b) => !edited.includes(Number(b.lead_id)))).toEqual([]);
    expect(third.counts.written).toBe(5 + bookings.length);
    for (const r of after.filter((r) => edited.includes(Number(r.id)))) {
      expect(r.first_name).toBe(`Edited${String(r.id)}`);
    }
  }, 300_000);

  it('marks 3 deleted leads deleted after a complete pass, and not after an interrupted one', async () => {
    const live = sqliteRows(file(), 'SELECT id FROM leads WHERE deleted_at IS NULL').map((r) =>
      Number(r.id),
    );
    const gone = live.slice(100, 103);
    for (const id of gone) ts.sb.admin.deleteRecord('lead', id);

    // Interrupted: cancelled while reading. Nothing may be marked deleted.
    const taskQueue = temporal.taskQueue();
    await temporal.withWorker(
      { taskQueue, activities: createMirrorActivities(sqliteDeps) },
      async () => {
        const handle = await temporal.client.workflow.start(mirrorWorkflow, {
          taskQueue,
          workflowId: `mirror-cancel-${taskQueue}`,
          args: [
            {
              connectionId: 'c1',
              destination: `sqlite:${file()}`,
              subjects: ['leads'],
              mode: 'full',
            },
          ],
        });
        for (let i = 0; i < 200; i += 1) {
          const p = await handle.query(mirrorProgressQuery).catch(() => undefined);
          if (p && p.counts.pages >= 2) break;
          await new Promise((r) => setTimeout(r, 50));
        }
        await handle.cancel();
        await expect(handle.result()).rejects.toThrow();
      },
    );
    const deletedAfterCancel = sqliteRows(
      file(),
      'SELECT id FROM leads WHERE deleted_at IS NOT NULL',
    );
    expect(deletedAfterCancel).toEqual([]);

    const complete = await runPass(sqliteDeps, {
      destination: `sqlite:${file()}`,
      subjects: ['leads'],
      mode: 'full',
    });
    expect(complete.counts.deleted).toBe(3);
    const deleted = sqliteRows(file(), 'SELECT id FROM leads WHERE deleted_at IS NOT NULL').map(
      (r) => Number(r.id),
    );
    expect(deleted.sort()).toEqual([...gone].sort());
  }, 300_000);

  it('writes every record again into a file removed since, which the worker had open', async () => {
    const tables = ['leads', 'lead_bookings', 'events', 'event_bookings', 'appointments'];
    const liveIds = () =>
      Object.fromEntries(
        tables.map((table) => [
          table,
          sqliteRows(file(), `SELECT id FROM ${table} WHERE deleted_at IS NULL ORDER BY id`).map(
            (r) => String(r.id),
          ),
        ]),
      );
    const before = liveIds();
    // Starting over as a user does: the file goes, the worker's handle of it stays open.
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${file()}${suffix}`, { force: true });
    const again = await runPass(sqliteDeps, {
      destination: `sqlite:${file()}`,
      subjects: ['leads', 'events', 'appointments'],
      mode: 'incremental',
    });
    expect(again.phase).toBe('done');
    const after = liveIds();
    expect(after).toEqual(before);
    const rows = Object.values(after).reduce((n, ids) => n + ids.length, 0);
    expect(again.counts.written).toBe(rows);
  }, 300_000);
});

describe('mirrorWorkflow into Postgres, with the ledger in Postgres', () => {
  it('mirrors appointments and events into typed tables, and a second pass writes nothing', async () => {
    const url = await createTestDatabase('mirror');
    const deps = depsFor(url);
    const summary = await runPass(deps, {
      destination: url,
      subjects: ['events', 'appointments'],
      mode: 'full',
    });
    expect(summary.phase).toBe('done');
    const events = await queryDatabase<{ id: string }>(url, 'SELECT id FROM events');
    expect(new Set(events.map((r) => r.id))).toEqual(truth('event'));
    const appointments = await queryDatabase<{ id: string }>(url, 'SELECT id FROM appointments');
    expect(new Set(appointments.map((r) => r.id))).toEqual(truth('appointment'));
    const again = await runPass(deps, {
      destination: url,
      subjects: ['events', 'appointments'],
      mode: 'full',
    });
    expect(again.counts.written).toBe(0);

    // A table dropped (to start it over) is made again and filled by the next pass, whose
    // ledger no longer counts its rows up to date.
    await queryDatabase(url, 'DROP TABLE events');
    const refilled = await runPass(deps, {
      destination: url,
      subjects: ['events', 'appointments'],
      mode: 'full',
    });
    const back = await queryDatabase<{ id: string }>(url, 'SELECT id FROM events');
    expect(new Set(back.map((r) => r.id))).toEqual(truth('event'));
    expect(refilled.counts.written).toBe(back.length);

    // Rows removed by hand from a table that stays: the ledger cannot see it, so a pass
    // writes nothing; a rewrite pass writes every record it reads again.
    await queryDatabase(url, 'DELETE FROM appointments');
    const blind = await runPass(deps, {
      destination: url,
      subjects: ['appointments'],
      mode: 'incremental',
    });
    expect(blind.counts.written).toBe(0);
    const rewritten = await runPass(deps, {
      destination: url,
      subjects: ['appointments'],
      mode: 'incremental',
      rewrite: true,
    });
    const restored = await queryDatabase<{ id: string }>(url, 'SELECT id FROM appointments');
    expect(new Set(restored.map((r) => r.id))).toEqual(truth('appointment'));
    expect(rewritten.counts.written).toBe(restored.length);

    // A column dropped by hand is added again by the next pass, and filled: the rows lack
    // what the ledger's hashes describe, so they are not "already up to date".
    const titled = "SELECT count(*)::int AS n FROM events WHERE title IS NOT NULL AND title <> ''";
    const [{ n: withTitle } = { n: 0 }] = await queryDatabase<{ n: number }>(url, titled);
    expect(withTitle).toBeGreaterThan(0);
    await queryDatabase(url, 'ALTER TABLE events DROP COLUMN title');
    const refilledColumn = await runPass(deps, {
      destination: url,
      subjects: ['events'],
      mode: 'full',
    });
    expect(refilledColumn.phase).toBe('done');
    expect(await queryDatabase<{ n: number }>(url, titled)).toEqual([{ n: withTitle }]);
    expect(refilledColumn.counts.written).toBe(back.length);
  }, 300_000);
});
