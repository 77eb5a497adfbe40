import type pg from 'pg';
import { createPostgresPool, inPostgresTransaction } from './postgres-pool.js';
import { postgresIdentity } from '../config/database-locations.js';
import {
  checkpointConflict,
  passSuperseded,
  postgresCall,
  StoreFailedError,
  toStoreError,
} from './errors.js';
import {
  FORGOTTEN_HASH,
  type JsonValue,
  type Ledger,
  type LedgerScope,
  type PassKey,
  type PassState,
} from './ledger.js';
import {
  classifyAgainst,
  ENTRY_COLUMNS,
  entryOf,
  latestById,
  openPassOf,
  PASS_COLUMNS,
  passRowOf,
  passStatusOf,
  sortedUnique,
  type EntryRow as StoredEntry,
  type StoredPass,
} from './ledger-batches.js';
import { pendingMigrations } from './ledger-migrations.js';

type EntryRow = StoredEntry<Date>;

/** Held while migrating, so workers starting together apply each version once. */
const MIGRATION_LOCK = 'ebsync.ledger.schema_migrations';

const SCOPE = 'connection_id = $1 AND destination = $2 AND resource = $3';
const PASS = 'connection_id = $1 AND destination = $2 AND pass = $3';

/** The database server's clock in epoch milliseconds: workers on machines whose clocks differ agree on it. */
const NOW_MS = '(extract(epoch FROM clock_timestamp()) * 1000)::float8';

const scopeParams = (s: LedgerScope) => [s.connectionId, s.destination, s.resource];
const passParams = (k: PassKey) => [k.connectionId, k.destination, k.pass];

const same = (date: Date) => date;
const toEntry = (row: EntryRow) => entryOf(row, same);

const passRow = (row: StoredPass<Date> | undefined) => passRowOf(row, same);

/** Brings the store's schema up to date (the ledger's tables and the webhook inbox's). */
export async function migratePostgresStore(pool: pg.Pool): Promise<void> {
  await inPostgresTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [MIGRATION_LOCK]);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL)`);
    const { rows } = await client.query<{ version: number }>(
      'SELECT version FROM schema_migrations',
    );
    for (const migration of pendingMigrations(rows.map((r) => r.version))) {
      await client.query(migration.postgres);
      await client.query(
        'INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, now())',
        [migration.version, migration.name],
      );
    }
  });
}

/**
 * A pool on the store's database with its schema brought up to date; closed again when that
 * fails, the failure a typed store error.
 */
export async function openMigratedPool(
  url: string,
  applicationName: string,
  maxConnections?: number,
): Promise<pg.Pool> {
  const pool = createPostgresPool(url, {
    applicationName,
    ...(maxConnections === undefined ? {} : { max: maxConnections }),
  });
  try {
    await migratePostgresStore(pool);
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw toStoreError('Postgres', error);
  }
  return pool;
}

/**
 * The ledger in a Postgres database, shared by every worker on every machine. Writes are
 * single upserts or short transactions that lock rows in id order, so concurrent workers
 * on overlapping pages neither lose updates nor deadlock.
 */
export async function openPostgresLedger(
  url: string,
  options: { maxConnections?: number } = {},
): Promise<Ledger> {
  const pool = await openMigratedPool(url, 'ebsync-store', options.maxConnections);
  const run = postgresCall;
  const location = postgresIdentity(url);

  const writersIn = async (db: Pick<pg.Pool, 'query'>, destination: string) =>
    (
      await db.query<{ connection_id: string }>(
        `SELECT connection_id FROM destination_writers WHERE destination = $1
         ORDER BY connection_id`,
        [destination],
      )
    ).rows.map((r) => r.connection_id);

  const selectEntries = async (scope: LedgerScope, ids: readonly string[]) =>
    (
      await pool.query<EntryRow>(
        `SELECT ${ENTRY_COLUMNS} FROM ledger_entries WHERE ${SCOPE} AND source_id = ANY($4::text[])`,
        [...scopeParams(scope), sortedUnique(ids)],
      )
    ).rows;

  const selectPass = async (client: pg.ClientBase | pg.Pool, key: PassKey, lock = false) =>
    (
      await client.query<StoredPass<Date>>(
        `SELECT ${PASS_COLUMNS} FROM passes WHERE ${PASS}${lock ? ' FOR UPDATE' : ''}`,
        passParams(key),
      )
    ).rows[0];

  const checkpointsOf = async (client: pg.ClientBase | pg.Pool, key: PassKey) =>
    Object.fromEntries(
      (
        await client.query<{ partition: string; checkpoint: JsonValue }>(
          `SELECT partition, checkpoint FROM pass_checkpoints WHERE ${PASS} ORDER BY partition`,
          passParams(key),
        )
      ).rows.map((r) => [r.partition, r.checkpoint]),
    );

  /** Locks the rows of these ids in id order before an update touches them. */
  const updateInOrder = (ids: readonly string[], set: string, params: unknown[], where = '') =>
    inPostgresTransaction(pool, async (client) => {
      const result = await client.query(
        `WITH target AS (
           SELECT source_id FROM ledger_entries
           WHERE ${SCOPE} AND source_id = ANY($4::text[]) ${where}
           ORDER BY source_id FOR UPDATE)
         UPDATE ledger_entries e SET ${set} FROM target
         WHERE e.connection_id = $1 AND e.destination = $2 AND e.resource = $3
           AND e.source_id = target.source_id`,
        params,
      );
      return result.rowCount ?? 0;
    });

  return {
    location,
    classify: (scope, items) =>
      run(async () => {
        if (items.length === 0) return [];
        const rows = await selectEntries(
          scope,
          items.map((i) => i.id),
        );
        return classifyAgainst(items, rows);
      }),
    recordWritten: (scope, generation, entries, at = new Date()) =>
      run(async () => {
        if (entries.length === 0) return;
        const rows = latestById(entries);
        await inPostgresTransaction(pool, (client) =>
          client.query(
            `INSERT INTO ledger_entries (connection_id, destination, resource, source_id,
               destination_key, content_hash, seen_generation, first_seen_at, last_seen_at)
             SELECT $1, $2, $3, u.id, u.key, u.hash, $4, $5, $5
             FROM unnest($6::text[], $7::text[], $8::text[]) WITH ORDINALITY AS u(id, key, hash, n)
             ORDER BY u.n
             ON CONFLICT (connection_id, destination, resource, source_id) DO UPDATE SET
               destination_key = EXCLUDED.destination_key,
               content_hash = EXCLUDED.content_hash,
               seen_generation = GREATEST(ledger_entries.seen_generation, EXCLUDED.seen_generation),
               last_seen_at = GREATEST(ledger_entries.last_seen_at, EXCLUDED.last_seen_at),
               deleted_at = NULL`,
            [
              ...scopeParams(scope),
              generation,
              at,
              rows.map((r) => r.id),
              rows.map((r) => r.destinationKey),
              rows.map((r) => r.hash),
            ],
          ),
        );
      }),
    markSeen: (scope, generation, ids, at = new Date()) =>
      run(async () =>
        ids.length === 0
          ? 0
          : updateInOrder(
              ids,
              `seen_generation = GREATEST(e.seen_generation, $5),
               last_seen_at = GREATEST(e.last_seen_at, $6)`,
              [...scopeParams(scope), sortedUnique(ids), generation, at],
            ),
      ),
    listUnseen: (scope, generation, page) =>
      run(async () =>
        (
          await pool.query<EntryRow>(
            `SELECT ${ENTRY_COLUMNS} FROM ledger_entries
             WHERE ${SCOPE} AND deleted_at IS NULL AND seen_generation < $4 AND source_id > $5
             ORDER BY source_id LIMIT $6`,
            [...scopeParams(scope), generation, page.after ?? '', page.limit],
          )
        ).rows.map(toEntry),
      ),
    markDeleted: (scope, ids, at = new Date()) =>
      run(async () =>
        ids.length === 0
          ? 0
          : updateInOrder(
              ids,
              'deleted_at = $5',
              [...scopeParams(scope), sortedUnique(ids), at],
              'AND deleted_at IS NULL',
            ),
      ),
    forgetHashes: (scope) =>
      run(() =>
        inPostgresTransaction(pool, async (client) => {
          // In id order, as every other update of entries, so concurrent writers do not deadlock.
          const result = await client.query(
            `WITH target AS (
               SELECT source_id FROM ledger_entries WHERE ${SCOPE}
               ORDER BY source_id FOR UPDATE)
             UPDATE ledger_entries e SET content_hash = $4 FROM target
             WHERE e.connection_id = $1 AND e.destination = $2 AND e.resource = $3
               AND e.source_id = target.source_id`,
            [...scopeParams(scope), FORGOTTEN_HASH],
          );
          return result.rowCount ?? 0;
        }),
      ),
    markForwarded: (scope, entries) =>
      run(async () => {
        if (entries.length === 0) return;
        const rows = latestById(entries);
        // In id order, as every other update of entries, so concurrent writers do not deadlock.
        await inPostgresTransaction(pool, (client) =>
          client.query(
            `WITH target AS (
               SELECT source_id FROM ledger_entries
               WHERE ${SCOPE} AND source_id = ANY($4::text[])
               ORDER BY source_id FOR UPDATE)
             UPDATE ledger_entries e SET forwarded_hash = u.hash
             FROM target JOIN unnest($4::text[], $5::text[]) AS u(id, hash)
               ON u.id = target.source_id
             WHERE e.connection_id = $1 AND e.destination = $2 AND e.resource = $3
               AND e.source_id = target.source_id`,
            [...scopeParams(scope), rows.map((r) => r.id), rows.map((r) => r.hash)],
          ),
        );
      }),
    get: (scope, ids) =>
      run(async () => (ids.length === 0 ? [] : (await selectEntries(scope, ids)).map(toEntry))),
    counts: (scope) =>
      run(async () => {
        const { rows } = await pool.query<{ live: number; deleted: number }>(
          `SELECT count(*) FILTER (WHERE deleted_at IS NULL)::int AS live,
                  count(*) FILTER (WHERE deleted_at IS NOT NULL)::int AS deleted
           FROM ledger_entries WHERE ${SCOPE}`,
          scopeParams(scope),
        );
        return { live: rows[0]?.live ?? 0, deleted: rows[0]?.deleted ?? 0 };
      }),
    countSeen: (scope, generation) =>
      run(async () => {
        const { rows } = await pool.query<{ seen: number }>(
          `SELECT count(*)::int AS seen FROM ledger_entries
           WHERE ${SCOPE} AND deleted_at IS NULL AND seen_generation >= $4`,
          [...scopeParams(scope), generation],
        );
        return rows[0]?.seen ?? 0;
      }),
    countForgottenSeen: (scope, generation) =>
      run(async () => {
        const { rows } = await pool.query<{ seen: number }>(
          `SELECT count(*)::int AS seen FROM ledger_entries
           WHERE ${SCOPE} AND deleted_at IS NULL AND seen_generation >= $4
             AND content_hash = $5`,
          [...scopeParams(scope), generation, FORGOTTEN_HASH],
        );
        return rows[0]?.seen ?? 0;
      }),
    seenIdRange: (scope, generation) =>
      run(async () => {
        const { rows } = await pool.query<{ lo: string | null; hi: string | null }>(
          `SELECT min(source_id::numeric) AS lo, max(source_id::numeric) AS hi
           FROM ledger_entries
           WHERE ${SCOPE} AND deleted_at IS NULL AND seen_generation >= $4
             AND source_id ~ '^[1-9][0-9]{0,15}$'`,
          [...scopeParams(scope), generation],
        );
        const row = rows[0];
        return row?.lo != null && row.hi != null
          ? { min: Number(row.lo), max: Number(row.hi) }
          : null;
      }),
    beginPass: (key, options = {}) =>
      run(() =>
        inPostgresTransaction(pool, async (client): Promise<PassState> => {
          // The row exists before it is locked, so two workers beginning at once serialize.
          await client.query(
            `INSERT INTO passes (connection_id, destination, pass) VALUES ($1, $2, $3)
             ON CONFLICT DO NOTHING`,
            passParams(key),
          );
          const open = openPassOf(passRow(await selectPass(client, key, true)));
          if (open && !options.restart) {
            return { ...open, resumed: true, checkpoints: await checkpointsOf(client, key) };
          }
          const { rows } = await client.query<{ last_generation: number }>(
            `INSERT INTO pass_generations (connection_id, destination, last_generation)
             VALUES ($1, $2, 1)
             ON CONFLICT (connection_id, destination)
             DO UPDATE SET last_generation = pass_generations.last_generation + 1
             RETURNING last_generation`,
            [key.connectionId, key.destination],
          );
          const generation = rows[0]?.last_generation;
          if (generation === undefined)
            throw new StoreFailedError('the store returned no generation');
          const startedAt = options.at ?? new Date();
          await client.query(
            `UPDATE passes SET open_generation = $4, open_started_at = $5 WHERE ${PASS}`,
            [...passParams(key), generation, startedAt],
          );
          await client.query(`DELETE FROM pass_checkpoints WHERE ${PASS}`, passParams(key));
          return { generation, startedAt, resumed: false, checkpoints: {} };
        }),
      ),
    saveCheckpoint: (key, generation, checkpoint, partition = '', options = {}) =>
      run(() =>
        inPostgresTransaction(pool, async (client) => {
          // The pass row is locked first, as beginPass and completePass lock it: a save never
          // lands in a pass that was restarted or completed meanwhile.
          const pass = await selectPass(client, key, true);
          if (pass?.open_generation !== generation) throw passSuperseded(key, generation, location);
          const { rows } = await client.query<{ generation: number; version: number }>(
            `SELECT generation, version FROM pass_checkpoints WHERE ${PASS} AND partition = $4`,
            [...passParams(key), partition],
          );
          const saved = rows[0];
          const current = saved?.generation === generation ? saved.version : 0;
          if (options.replaces !== undefined && options.replaces !== current) {
            throw checkpointConflict(key, partition, options.replaces, current);
          }
          await client.query(
            `INSERT INTO pass_checkpoints (connection_id, destination, pass, partition, generation,
               checkpoint, saved_at, version)
             VALUES ($1, $2, $3, $4, $5, $6::jsonb, now(), $7)
             ON CONFLICT (connection_id, destination, pass, partition) DO UPDATE SET
               generation = EXCLUDED.generation, checkpoint = EXCLUDED.checkpoint,
               saved_at = EXCLUDED.saved_at, version = EXCLUDED.version`,
            [...passParams(key), partition, generation, JSON.stringify(checkpoint), current + 1],
          );
          return current + 1;
        }),
      ),
    readCheckpoint: (key, generation, partition = '') =>
      run(async () => {
        const { rows } = await pool.query<{
          generation: number;
          checkpoint: JsonValue;
          version: number;
        }>(
          `SELECT generation, checkpoint, version FROM pass_checkpoints
           WHERE ${PASS} AND partition = $4`,
          [...passParams(key), partition],
        );
        const row = rows[0];
        return row?.generation === generation
          ? { checkpoint: row.checkpoint, version: row.version }
          : undefined;
      }),
    readCheckpoints: (key) =>
      run(async () => {
        const open = openPassOf(passRow(await selectPass(pool, key)));
        return open
          ? { ...open, resumed: true, checkpoints: await checkpointsOf(pool, key) }
          : undefined;
      }),
    clearCheckpoints: (key, partition) =>
      run(async () => {
        await pool.query(
          `DELETE FROM pass_checkpoints WHERE ${PASS}${partition === undefined ? '' : ' AND partition = $4'}`,
          partition === undefined ? passParams(key) : [...passParams(key), partition],
        );
      }),
    completePass: (key, generation, at = new Date()) =>
      run(() =>
        inPostgresTransaction(pool, async (client) => {
          const result = await client.query(
            `UPDATE passes SET completed_generation = open_generation,
               completed_started_at = open_started_at, completed_at = $5,
               open_generation = NULL, open_started_at = NULL
             WHERE ${PASS} AND open_generation = $4`,
            [...passParams(key), generation, at],
          );
          if (result.rowCount === 1) {
            await client.query(`DELETE FROM pass_checkpoints WHERE ${PASS}`, passParams(key));
            return;
          }
          const row = await selectPass(client, key);
          if (row?.completed_generation === generation && row.open_generation === null) return;
          throw passSuperseded(key, generation, location);
        }),
      ),
    passStatus: (key) => run(async () => passStatusOf(passRow(await selectPass(pool, key)))),
    // The server's clock, read once per statement: workers on other machines agree with it.
    reserveRequest: (connectionId, intervalMs) =>
      run(async () => {
        // The clock is read after the row's lock is taken (in SET, and again in RETURNING),
        // not at the statement's start: a statement that waited for another's lock would
        // otherwise reckon its wait from before that other took its slot.
        const { rows } = await pool.query<{ wait_ms: number }>(
          `INSERT INTO request_slots AS s (connection_id, next_at)
           VALUES ($1, ${NOW_MS} + $2::float8)
           ON CONFLICT (connection_id) DO UPDATE
             SET next_at = greatest(s.next_at, ${NOW_MS}) + $2::float8
           RETURNING s.next_at - $2::float8 - ${NOW_MS} AS wait_ms`,
          [connectionId, intervalMs],
        );
        return Math.max(0, rows[0]?.wait_ms ?? 0);
      }),
    holdRequests: (connectionId, delayMs) =>
      run(async () => {
        await pool.query(
          `INSERT INTO request_slots AS s (connection_id, next_at)
           VALUES ($1, ${NOW_MS} + $2::float8)
           ON CONFLICT (connection_id) DO UPDATE SET next_at = greatest(s.next_at, excluded.next_at)`,
          [connectionId, delayMs],
        );
      }),
    destinationWriters: (destination) => run(() => writersIn(pool, destination)),
    claimDestination: (destination, connectionId) =>
      run(async () => {
        // Read first: the usual answer (this connection, alone) takes no lock.
        const writers = await writersIn(pool, destination);
        if (writers.length === 1 && writers[0] === connectionId) return [];
        return inPostgresTransaction(pool, async (client) => {
          // No row to lock before the first writer: a lock on the destination's name makes two
          // connections claiming at once take turns, and the second sees the first.
          await client.query(`SELECT pg_advisory_xact_lock(hashtext('ebsync writer ' || $1))`, [
            destination,
          ]);
          const others = (await writersIn(client, destination)).filter((c) => c !== connectionId);
          if (others.length === 0) {
            await client.query(
              `INSERT INTO destination_writers (destination, connection_id) VALUES ($1, $2)
               ON CONFLICT DO NOTHING`,
              [destination, connectionId],
            );
          }
          return others;
        });
      }),
    forgetDestination: (destination, connectionId) =>
      run(() =>
        inPostgresTransaction(pool, async (client) => {
          const params = [connectionId, destination];
          let held = 0;
          let entries = 0;
          for (const table of [
            'ledger_entries',
            'pass_checkpoints',
            'passes',
            'pass_generations',
            'destination_writers',
          ]) {
            const { rowCount } = await client.query(
              `DELETE FROM ${table} WHERE connection_id = $1 AND destination = $2`,
              params,
            );
            if (table === 'ledger_entries') entries = rowCount ?? 0;
            held += rowCount ?? 0;
          }
          return { entries, held: held > 0 };
        }),
      ),
    close: async () => {
      if (!pool.ended) await pool.end();
    },
  };
}
