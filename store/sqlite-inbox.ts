import type Database from 'better-sqlite3';
import { openSqliteFile } from './sqlite-files.js';
import { isTransientDatabaseError } from '../config/database-errors.js';
import { sqliteIdentity } from '../config/database-locations.js';
import { sqliteCall, StoreLocationError, toStoreError } from './errors.js';
import { GroupCommit } from './group-commit.js';
import type { Acceptance, Inbox, Notice, OwedChange } from './inbox.js';
import { changeOf, noticeOf, statsOf, type ChangeRow, type NoticeRow } from './inbox-rows.js';
import { noticeCommitter } from './sqlite-inbox-insert.js';
import { InboxWriterThread } from './sqlite-inbox-thread.js';
import { migrateSqliteStore } from './sqlite-ledger.js';

const fromMs = (ms: number) => new Date(ms);

/** The SQLite inbox, with how many of its commits were made on the event loop. */
export interface SqliteInbox extends Inbox {
  /** Commits of a lone notice made on the event loop, not on the writer thread. */
  committedOnLoop(): number;
}

/**
 * The inbox in the SQLite store file, WAL with synchronous FULL on its connections: a notice
 * answered 2xx survives a power cut, not only a crash. Each group of notices is one
 * transaction and one fsync of the log (store/group-commit.ts).
 *
 * Where the group is committed depends on its size. A group of several, formed while
 * deliveries kept coming, goes to a thread of its own (store/sqlite-inbox-thread.ts), so the
 * event loop goes on parsing the next ones during its fsync. A notice that came alone (the
 * deliveries of a quiet connection, tens a second) is committed right here: the loop had
 * nothing else to do during that fsync, and the hop to the thread and back, with the wake-ups
 * of both, cost about a fifth of the receiver's CPU per delivery at 50 a second (measured
 * 1.8 against 1.5 ms). Its connection never waits for a lock: when another process holds the
 * store's write lock, the notice goes to the thread, which waits there.
 */
export function openSqliteInbox(file: string): SqliteInbox {
  if (file === ':memory:') {
    throw new StoreLocationError(
      'the webhook inbox needs a file: an in-memory store is not shared with its writer thread',
    );
  }
  let db: Database.Database;
  try {
    db = openSqliteFile(file, 10_000, 'FULL');
    migrateSqliteStore(db);
  } catch (error) {
    throw toStoreError('SQLite', error);
  }
  const stmt = {
    pending: db.prepare<[string, number], NoticeRow<number>>(
      `SELECT seq, connection_id, delivery_id, resource, record_id, action, occurred_at,
         received_at FROM webhook_inbox
       WHERE connection_id = ? AND done_at IS NULL ORDER BY seq LIMIT ?`,
    ),
    pendingOf: db.prepare<
      [string, string, number],
      { seq: number; resource: string; record_id: string }
    >(
      `SELECT seq, resource, record_id FROM webhook_inbox
       WHERE connection_id = ? AND done_at IS NULL AND (resource, record_id) IN (
         SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?))
       ORDER BY seq LIMIT ?`,
    ),
    markDone: db.prepare(
      `UPDATE webhook_inbox SET done_at = ?
       WHERE connection_id = ? AND done_at IS NULL AND seq IN (SELECT value FROM json_each(?))`,
    ),
    pendingConnections: db.prepare<[], { connection_id: string }>(
      `SELECT DISTINCT connection_id FROM webhook_inbox WHERE done_at IS NULL ORDER BY 1`,
    ),
    pendingStats: db.prepare<[], { connection_id: string; pending: number; oldest: number }>(
      `SELECT connection_id, count(*) AS pending, min(received_at) AS oldest
       FROM webhook_inbox WHERE done_at IS NULL GROUP BY connection_id`,
    ),
    drainedStats: db.prepare<[number], { connection_id: string; drained: number }>(
      `SELECT connection_id, count(*) AS drained FROM webhook_inbox
       WHERE done_at IS NOT NULL AND done_at >= ? GROUP BY connection_id`,
    ),
    pruneNotices: db.prepare(
      `DELETE FROM webhook_inbox WHERE seq IN (
         SELECT seq FROM webhook_inbox WHERE done_at IS NOT NULL AND done_at < ? LIMIT ?)`,
    ),
    pruneChanges: db.prepare(
      `DELETE FROM automation_outbox
       WHERE (connection_id, batch_key, resource, record_id) IN (
         SELECT connection_id, batch_key, resource, record_id FROM automation_outbox
         WHERE applied_at < ? LIMIT ?)`,
    ),
    keepChange: db.prepare(
      `INSERT OR REPLACE INTO automation_outbox (connection_id, batch_key, resource, record_id,
         action, sealed, applied_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
    ),
    owedChanges: db.prepare<[string, string], ChangeRow<number>>(
      `SELECT connection_id, batch_key, resource, record_id, action, sealed, applied_at
       FROM automation_outbox WHERE connection_id = ? AND batch_key = ?`,
    ),
    leftoverChanges: db.prepare<[string, number, number], ChangeRow<number>>(
      `SELECT connection_id, batch_key, resource, record_id, action, sealed, applied_at
       FROM automation_outbox WHERE connection_id = ? AND applied_at < ?
       ORDER BY applied_at LIMIT ?`,
    ),
    watch: db.prepare(
      `INSERT INTO drain_watches (connection_id, destination, until_ms) VALUES (?, ?, ?)
       ON CONFLICT (connection_id) DO UPDATE SET
         destination = excluded.destination, until_ms = excluded.until_ms`,
    ),
    watching: db.prepare<[string], { destination: string; until_ms: number }>(
      `SELECT destination, until_ms FROM drain_watches WHERE connection_id = ?`,
    ),
    dropChange: db.prepare(
      `DELETE FROM automation_outbox
       WHERE connection_id = ? AND batch_key = ? AND resource = ? AND record_id = ?`,
    ),
  };

  const writer = new InboxWriterThread(file);
  // Opened by the first accept: a worker, which only drains, never needs it.
  let onLoop: { db: Database.Database; commit: ReturnType<typeof noticeCommitter> } | undefined;
  const commitOnLoop = (notices: readonly Notice[], at: number): Acceptance[] => {
    if (!onLoop) {
      const loopDb = openSqliteFile(file, 0, 'FULL');
      onLoop = { db: loopDb, commit: noticeCommitter(loopDb) };
    }
    return onLoop.commit(notices, at);
  };
  let committedOnLoop = 0;
  const group = new GroupCommit<Notice, Acceptance>((notices) => {
    if (notices.length === 1) {
      try {
        const results = commitOnLoop(notices, Date.now());
        committedOnLoop += 1;
        return results;
      } catch (error) {
        // Another process is writing (busy, locked): the thread waits for it (its busy timeout).
        if (!isTransientDatabaseError(error)) throw error;
      }
    }
    return writer.write(notices);
  });
  const keepAll = db.transaction((changes: readonly OwedChange[]) => {
    for (const c of changes) {
      stmt.keepChange.run(
        c.connectionId,
        c.batchKey,
        c.resource,
        c.recordId,
        c.action,
        c.sealed,
        c.appliedAt.getTime(),
      );
    }
  });
  const dropAll = db.transaction(
    (
      connectionId: string,
      batchKey: string,
      records: readonly { resource: string; recordId: string }[],
    ) => {
      for (const r of records) stmt.dropChange.run(connectionId, batchKey, r.resource, r.recordId);
    },
  );

  const run = sqliteCall;

  return {
    location: sqliteIdentity(file),
    accept: (notice) =>
      group.add(notice).catch((error: unknown) => {
        throw toStoreError('SQLite', error);
      }),
    acceptedSoFar: () => ({ notices: group.items, commits: group.commits }),
    committedOnLoop: () => committedOnLoop,
    pending: (connectionId, limit) =>
      run(() => stmt.pending.all(connectionId, limit).map((row) => noticeOf(row, fromMs))),
    pendingOf: (connectionId, records, limit) =>
      run(() =>
        records.length === 0
          ? []
          : stmt.pendingOf
              .all(
                connectionId,
                JSON.stringify(records.map((r) => [r.resource, r.recordId])),
                limit,
              )
              .map((row) => ({ seq: row.seq, resource: row.resource, recordId: row.record_id })),
      ),
    markDone: (connectionId, seqs, at = new Date()) =>
      run(() =>
        seqs.length === 0
          ? 0
          : stmt.markDone.run(at.getTime(), connectionId, JSON.stringify(seqs)).changes,
      ),
    pendingConnections: () =>
      run(() => stmt.pendingConnections.all().map((row) => row.connection_id)),
    stats: (windowMs, at = new Date()) =>
      run(() =>
        statsOf(
          stmt.pendingStats.all().map((r) => ({
            connectionId: r.connection_id,
            pending: r.pending,
            oldest: new Date(r.oldest),
          })),
          stmt.drainedStats
            .all(at.getTime() - windowMs)
            .map((r) => ({ connectionId: r.connection_id, drained: r.drained })),
        ),
      ),
    prune: (before, limit) =>
      run(
        () =>
          stmt.pruneNotices.run(before.getTime(), limit).changes +
          stmt.pruneChanges.run(before.getTime(), limit).changes,
      ),
    keepChanges: (changes) =>
      run(() => {
        if (changes.length > 0) keepAll.immediate(changes);
      }),
    owedChanges: (connectionId, batchKey) =>
      run(() => stmt.owedChanges.all(connectionId, batchKey).map((row) => changeOf(row, fromMs))),
    leftoverChanges: (connectionId, before, limit) =>
      run(() =>
        stmt.leftoverChanges
          .all(connectionId, before.getTime(), limit)
          .map((row) => changeOf(row, fromMs)),
      ),
    dropChanges: (connectionId, batchKey, records) =>
      run(() => {
        if (records.length > 0) dropAll.immediate(connectionId, batchKey, records);
      }),
    watch: (connectionId, destination, forMs) =>
      run(() => {
        stmt.watch.run(connectionId, destination, Date.now() + Math.max(0, forMs));
      }),
    watching: (connectionId) =>
      run(() => {
        const row = stmt.watching.get(connectionId);
        const msLeft = row ? row.until_ms - Date.now() : 0;
        return row && msLeft > 0 ? { destination: row.destination, msLeft } : null;
      }),
    close: async () => {
      await writer.close();
      await run(() => {
        if (onLoop?.db.open) onLoop.db.close();
        if (db.open) db.close();
      });
    },
  };
}
