import type Database from 'better-sqlite3';
import { openSqliteFile } from './sqlite-files.js';
import { sqliteIdentity } from '../config/database-locations.js';
import {
  checkpointConflict,
  passSuperseded,
  sqliteCall,
  StoreFailedError,
  toStoreError,
} from './errors.js';
import {
  FORGOTTEN_HASH,
  type Fingerprint,
  type JsonValue,
  type Ledger,
  type LedgerCounts,
  type LedgerScope,
  type PassKey,
  type PassState,
  type WrittenEntry,
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

type EntryRow = StoredEntry<number>;

const fromMs = (ms: number) => new Date(ms);
const passRow = (row: StoredPass<number> | undefined) => passRowOf(row, fromMs);

const SCOPE = 'connection_id = ? AND destination = ? AND resource = ?';
const PASS = 'connection_id = ? AND destination = ? AND pass = ?';

const scopeParams = (s: LedgerScope) => [s.connectionId, s.destination, s.resource] as const;
const passParams = (k: PassKey) => [k.connectionId, k.destination, k.pass] as const;

const toEntry = (row: EntryRow) => entryOf(row, fromMs);

/** Brings the store's schema up to date (the ledger's tables and the webhook inbox's). */
export function migrateSqliteStore(db: Database.Database): void {
  db.transaction(() => {
    db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT`);
    const applied = db
      .prepare<[], { version: number }>('SELECT version FROM schema_migrations')
      .all()
      .map((r) => r.version);
    for (const migration of pendingMigrations(applied)) {
      db.exec(migration.sqlite);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
        migration.version,
        migration.name,
        new Date().toISOString(),
      );
    }
  }).immediate();
}

/**
 * The ledger in one SQLite file (WAL): the default for one machine. Several worker
 * processes on that machine may share the file; writers take turns.
 */
export function openSqliteLedger(file: string): Ledger {
  const location = sqliteIdentity(file);
  let db: Database.Database;
  try {
    db = openSqliteFile(file);
    migrateSqliteStore(db);
  } catch (error) {
    throw toStoreError('SQLite', error);
  }

  const stmt = {
    classify: db.prepare<[string, string, string, string], EntryRow>(
      `SELECT ${ENTRY_COLUMNS} FROM ledger_entries
       WHERE ${SCOPE} AND source_id IN (SELECT value FROM json_each(?))`,
    ),
    upsert: db.prepare(
      `INSERT INTO ledger_entries (connection_id, destination, resource, source_id,
         destination_key, content_hash, seen_generation, first_seen_at, last_seen_at, deleted_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)
       ON CONFLICT (connection_id, destination, resource, source_id) DO UPDATE SET
         destination_key = excluded.destination_key,
         content_hash = excluded.content_hash,
         seen_generation = max(seen_generation, excluded.seen_generation),
         last_seen_at = max(last_seen_at, excluded.last_seen_at),
         deleted_at = NULL`,
    ),
    forgetHashes: db.prepare(`UPDATE ledger_entries SET content_hash = ? WHERE ${SCOPE}`),
    markForwarded: db.prepare(
      `UPDATE ledger_entries SET forwarded_hash = ? WHERE ${SCOPE} AND source_id = ?`,
    ),
    markSeen: db.prepare(
      `UPDATE ledger_entries SET seen_generation = max(seen_generation, ?),
         last_seen_at = max(last_seen_at, ?)
       WHERE ${SCOPE} AND source_id IN (SELECT value FROM json_each(?))`,
    ),
    listUnseen: db.prepare<[string, string, string, number, string, number], EntryRow>(
      `SELECT ${ENTRY_COLUMNS} FROM ledger_entries
       WHERE ${SCOPE} AND deleted_at IS NULL AND seen_generation < ? AND source_id > ?
       ORDER BY source_id LIMIT ?`,
    ),
    markDeleted: db.prepare(
      `UPDATE ledger_entries SET deleted_at = ?
       WHERE ${SCOPE} AND deleted_at IS NULL AND source_id IN (SELECT value FROM json_each(?))`,
    ),
    counts: db.prepare<[string, string, string], { live: number; deleted: number }>(
      `SELECT coalesce(sum(deleted_at IS NULL), 0) AS live,
              coalesce(sum(deleted_at IS NOT NULL), 0) AS deleted
       FROM ledger_entries WHERE ${SCOPE}`,
    ),
    countSeen: db.prepare<[string, string, string, number], { seen: number }>(
      `SELECT count(*) AS seen FROM ledger_entries
       WHERE ${SCOPE} AND deleted_at IS NULL AND seen_generation >= ?`,
    ),
    countForgottenSeen: db.prepare<[string, string, string, number, string], { seen: number }>(
      `SELECT count(*) AS seen FROM ledger_entries
       WHERE ${SCOPE} AND deleted_at IS NULL AND seen_generation >= ? AND content_hash = ?`,
    ),
    seenIdRange: db.prepare<
      [string, string, string, number],
      { lo: number | null; hi: number | null }
    >(
      `SELECT min(CAST(source_id AS INTEGER)) AS lo, max(CAST(source_id AS INTEGER)) AS hi
       FROM ledger_entries
       WHERE ${SCOPE} AND deleted_at IS NULL AND seen_generation >= ?
         AND source_id GLOB '[1-9]*' AND source_id NOT GLOB '*[^0-9]*'`,
    ),
    pass: db.prepare<[string, string, string], StoredPass<number>>(
      `SELECT ${PASS_COLUMNS} FROM passes WHERE ${PASS}`,
    ),
    nextGeneration: db.prepare<[string, string], { last_generation: number }>(
      `INSERT INTO pass_generations (connection_id, destination, last_generation) VALUES (?, ?, 1)
       ON CONFLICT (connection_id, destination) DO UPDATE SET last_generation = last_generation + 1
       RETURNING last_generation`,
    ),
    openPass: db.prepare(
      `INSERT INTO passes (connection_id, destination, pass, open_generation, open_started_at)
       VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (connection_id, destination, pass) DO UPDATE SET
         open_generation = excluded.open_generation, open_started_at = excluded.open_started_at`,
    ),
    completePass: db.prepare(
      `UPDATE passes SET completed_generation = open_generation,
         completed_started_at = open_started_at, completed_at = ?,
         open_generation = NULL, open_started_at = NULL
       WHERE ${PASS} AND open_generation = ?`,
    ),
    checkpoints: db.prepare<[string, string, string], { partition: string; checkpoint: string }>(
      `SELECT partition, checkpoint FROM pass_checkpoints WHERE ${PASS} ORDER BY partition`,
    ),
    saveCheckpoint: db.prepare(
      `INSERT INTO pass_checkpoints (connection_id, destination, pass, partition, generation,
         checkpoint, saved_at, version) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (connection_id, destination, pass, partition) DO UPDATE SET
         generation = excluded.generation, checkpoint = excluded.checkpoint,
         saved_at = excluded.saved_at, version = excluded.version`,
    ),
    checkpoint: db.prepare<
      [string, string, string, string],
      { generation: number; checkpoint: string; version: number }
    >(
      `SELECT generation, checkpoint, version FROM pass_checkpoints
       WHERE ${PASS} AND partition = ?`,
    ),
    clearCheckpoints: db.prepare(`DELETE FROM pass_checkpoints WHERE ${PASS}`),
    clearCheckpoint: db.prepare(`DELETE FROM pass_checkpoints WHERE ${PASS} AND partition = ?`),
    writers: db.prepare<[string], { connection_id: string }>(
      `SELECT connection_id FROM destination_writers WHERE destination = ? ORDER BY connection_id`,
    ),
    claim: db.prepare(
      `INSERT OR IGNORE INTO destination_writers (destination, connection_id, since) VALUES (?, ?, ?)`,
    ),
    release: db.prepare(
      `DELETE FROM destination_writers WHERE destination = ? AND connection_id = ?`,
    ),
    forgetEntries: db.prepare(
      `DELETE FROM ledger_entries WHERE connection_id = ? AND destination = ?`,
    ),
    forgetPasses: db.prepare(`DELETE FROM passes WHERE connection_id = ? AND destination = ?`),
    forgetCheckpoints: db.prepare(
      `DELETE FROM pass_checkpoints WHERE connection_id = ? AND destination = ?`,
    ),
    forgetGenerations: db.prepare(
      `DELETE FROM pass_generations WHERE connection_id = ? AND destination = ?`,
    ),
    // One statement each, so SQLite's write lock makes them atomic across processes.
    reserveRequest: db.prepare<{ id: string; now: number; interval: number }, { slot: number }>(
      `INSERT INTO request_slots (connection_id, next_at) VALUES (@id, @now + @interval)
       ON CONFLICT (connection_id) DO UPDATE SET next_at = max(next_at, @now) + @interval
       RETURNING next_at - @interval AS slot`,
    ),
    holdRequests: db.prepare<{ id: string; until: number }>(
      `INSERT INTO request_slots (connection_id, next_at) VALUES (@id, @until)
       ON CONFLICT (connection_id) DO UPDATE SET next_at = max(next_at, @until)`,
    ),
  };

  const checkpointsOf = (key: PassKey): Record<string, JsonValue> =>
    Object.fromEntries(
      stmt.checkpoints
        .all(...passParams(key))
        .map((r) => [r.partition, JSON.parse(r.checkpoint) as JsonValue]),
    );

  const begin = db.transaction((key: PassKey, restart: boolean, at: number): PassState => {
    const open = openPassOf(passRow(stmt.pass.get(...passParams(key))));
    if (open && !restart) return { ...open, resumed: true, checkpoints: checkpointsOf(key) };
    const next = stmt.nextGeneration.get(key.connectionId, key.destination);
    if (!next) throw new StoreFailedError('the SQLite store returned no generation');
    stmt.openPass.run(...passParams(key), next.last_generation, at);
    stmt.clearCheckpoints.run(...passParams(key));
    return {
      generation: next.last_generation,
      startedAt: new Date(at),
      resumed: false,
      checkpoints: {},
    };
  });

  const save = db.transaction(
    (
      key: PassKey,
      generation: number,
      checkpoint: string,
      partition: string,
      replaces: number | undefined,
      at: number,
    ): number => {
      const row = stmt.pass.get(...passParams(key));
      if (row?.open_generation !== generation) throw passSuperseded(key, generation, location);
      const saved = stmt.checkpoint.get(...passParams(key), partition);
      const current = saved?.generation === generation ? saved.version : 0;
      if (replaces !== undefined && replaces !== current) {
        throw checkpointConflict(key, partition, replaces, current);
      }
      stmt.saveCheckpoint.run(
        ...passParams(key),
        partition,
        generation,
        checkpoint,
        at,
        current + 1,
      );
      return current + 1;
    },
  );

  const complete = db.transaction((key: PassKey, generation: number, at: number) => {
    if (stmt.completePass.run(at, ...passParams(key), generation).changes === 1) {
      stmt.clearCheckpoints.run(...passParams(key));
      return;
    }
    const row = stmt.pass.get(...passParams(key));
    if (row?.completed_generation === generation && row.open_generation === null) return;
    throw passSuperseded(key, generation, location);
  });

  const upsertAll = db.transaction(
    (scope: LedgerScope, generation: number, entries: readonly WrittenEntry[], at: number) => {
      for (const e of entries) {
        stmt.upsert.run(...scopeParams(scope), e.id, e.destinationKey, e.hash, generation, at, at);
      }
    },
  );

  const markForwardedAll = db.transaction((scope: LedgerScope, entries: readonly Fingerprint[]) => {
    for (const e of entries) stmt.markForwarded.run(e.hash, ...scopeParams(scope), e.id);
  });

  const run = sqliteCall;
  const writersOf = (destination: string): string[] =>
    stmt.writers.all(destination).map((r) => r.connection_id);
  const claim = db.transaction((destination: string, connectionId: string, at: number) => {
    const others = writersOf(destination).filter((c) => c !== connectionId);
    if (others.length === 0) stmt.claim.run(destination, connectionId, at);
    return others;
  });
  const forgetDestination = db.transaction((destination: string, connectionId: string) => {
    const entries = stmt.forgetEntries.run(connectionId, destination).changes;
    const others = [
      stmt.forgetCheckpoints.run(connectionId, destination).changes,
      stmt.forgetPasses.run(connectionId, destination).changes,
      stmt.forgetGenerations.run(connectionId, destination).changes,
      stmt.release.run(destination, connectionId).changes,
    ];
    return { entries, held: entries + others.reduce((a, b) => a + b, 0) > 0 };
  });

  return {
    location,
    classify: (scope, items) =>
      run(() => {
        if (items.length === 0) return [];
        const ids = JSON.stringify(sortedUnique(items.map((i) => i.id)));
        return classifyAgainst(items, stmt.classify.all(...scopeParams(scope), ids));
      }),
    recordWritten: (scope, generation, entries, at = new Date()) =>
      run(() => {
        if (entries.length > 0)
          upsertAll.immediate(scope, generation, latestById(entries), at.getTime());
      }),
    forgetHashes: (scope) =>
      run(() => stmt.forgetHashes.run(FORGOTTEN_HASH, ...scopeParams(scope)).changes),
    markForwarded: (scope, entries) =>
      run(() => {
        if (entries.length > 0) markForwardedAll.immediate(scope, latestById(entries));
      }),
    markSeen: (scope, generation, ids, at = new Date()) =>
      run(() =>
        ids.length === 0
          ? 0
          : stmt.markSeen.run(
              generation,
              at.getTime(),
              ...scopeParams(scope),
              JSON.stringify(sortedUnique(ids)),
            ).changes,
      ),
    listUnseen: (scope, generation, page) =>
      run(() =>
        stmt.listUnseen
          .all(...scopeParams(scope), generation, page.after ?? '', page.limit)
          .map(toEntry),
      ),
    markDeleted: (scope, ids, at = new Date()) =>
      run(() =>
        ids.length === 0
          ? 0
          : stmt.markDeleted.run(
              at.getTime(),
              ...scopeParams(scope),
              JSON.stringify(sortedUnique(ids)),
            ).changes,
      ),
    get: (scope, ids) =>
      run(() =>
        ids.length === 0
          ? []
          : stmt.classify
              .all(...scopeParams(scope), JSON.stringify(sortedUnique(ids)))
              .map(toEntry),
      ),
    counts: (scope) =>
      run((): LedgerCounts => {
        const row = stmt.counts.get(...scopeParams(scope));
        return { live: row?.live ?? 0, deleted: row?.deleted ?? 0 };
      }),
    countSeen: (scope, generation) =>
      run(() => stmt.countSeen.get(...scopeParams(scope), generation)?.seen ?? 0),
    countForgottenSeen: (scope, generation) =>
      run(
        () =>
          stmt.countForgottenSeen.get(...scopeParams(scope), generation, FORGOTTEN_HASH)?.seen ?? 0,
      ),
    seenIdRange: (scope, generation) =>
      run(() => {
        const row = stmt.seenIdRange.get(...scopeParams(scope), generation);
        return row && row.lo !== null && row.hi !== null ? { min: row.lo, max: row.hi } : null;
      }),
    beginPass: (key, options = {}) =>
      run(() =>
        begin.immediate(key, options.restart ?? false, (options.at ?? new Date()).getTime()),
      ),
    saveCheckpoint: (key, generation, checkpoint, partition = '', options = {}) =>
      run(() =>
        save.immediate(
          key,
          generation,
          JSON.stringify(checkpoint),
          partition,
          options.replaces,
          Date.now(),
        ),
      ),
    readCheckpoint: (key, generation, partition = '') =>
      run(() => {
        const row = stmt.checkpoint.get(...passParams(key), partition);
        return row?.generation === generation
          ? { checkpoint: JSON.parse(row.checkpoint) as JsonValue, version: row.version }
          : undefined;
      }),
    readCheckpoints: (key) =>
      run(() => {
        const open = openPassOf(passRow(stmt.pass.get(...passParams(key))));
        return open ? { ...open, resumed: true, checkpoints: checkpointsOf(key) } : undefined;
      }),
    clearCheckpoints: (key, partition) =>
      run(() => {
        if (partition === undefined) stmt.clearCheckpoints.run(...passParams(key));
        else stmt.clearCheckpoint.run(...passParams(key), partition);
      }),
    completePass: (key, generation, at = new Date()) =>
      run(() => complete.immediate(key, generation, at.getTime())),
    passStatus: (key) => run(() => passStatusOf(passRow(stmt.pass.get(...passParams(key))))),
    reserveRequest: (connectionId, intervalMs) =>
      run(() => {
        const now = Date.now();
        const row = stmt.reserveRequest.get({ id: connectionId, now, interval: intervalMs });
        return Math.max(0, (row?.slot ?? now) - now);
      }),
    holdRequests: (connectionId, delayMs) =>
      run(() => {
        stmt.holdRequests.run({ id: connectionId, until: Date.now() + delayMs });
      }),
    claimDestination: (destination, connectionId) =>
      run(() => {
        // Read first: the usual answer (this connection, alone) takes no write lock, which a
        // drain's every batch would otherwise queue for behind the passes' writes.
        const writers = writersOf(destination);
        if (writers.length === 1 && writers[0] === connectionId) return [];
        return claim.immediate(destination, connectionId, Date.now());
      }),
    destinationWriters: (destination) => run(() => writersOf(destination)),
    forgetDestination: (destination, connectionId) =>
      run(() => forgetDestination.immediate(destination, connectionId)),
    close: () =>
      run(() => {
        if (db.open) db.close();
      }),
  };
}
