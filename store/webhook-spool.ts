import type Database from 'better-sqlite3';
import { openSqliteFile } from './sqlite-files.js';
import { toStoreError } from './errors.js';
import type { Acceptance, Notice, PendingNotice } from './inbox.js';
import { noticeOf, type NoticeRow } from './inbox-rows.js';

/**
 * The receiver's own spool: a local SQLite file (WAL, synchronous FULL, as the inbox) where a
 * verified notice is kept when the store cannot take it, so the 2xx never waits on the store
 * and a store outage longer than the sender's retries loses nothing. The receiver forwards its
 * notices to the inbox once the store is back (webhooks/spooled-store.ts); the inbox's dedupe
 * on the delivery id makes a notice forwarded twice, or also stored by a late commit, count
 * once. Like the inbox it holds no record data: connection, delivery id, record, action.
 */
export class WebhookSpool {
  private readonly keepOne: Database.Statement<
    [string, string, string, string, string, string | null, number]
  >;
  private readonly oldestRows: Database.Statement<[number], NoticeRow<number>>;
  private readonly dropOne: Database.Statement<[string, string]>;
  private readonly countRows: Database.Statement<[], { n: number; oldest: number | null }>;

  private constructor(private readonly db: Database.Database) {
    this.keepOne = db.prepare(
      `INSERT INTO webhook_spool (connection_id, delivery_id, resource, record_id, action,
         occurred_at, spooled_at) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (connection_id, delivery_id) DO NOTHING`,
    );
    this.oldestRows = db.prepare(
      `SELECT seq, connection_id, delivery_id, resource, record_id, action, occurred_at,
         spooled_at AS received_at
       FROM webhook_spool ORDER BY seq LIMIT ?`,
    );
    this.dropOne = db.prepare(
      'DELETE FROM webhook_spool WHERE connection_id = ? AND delivery_id = ?',
    );
    this.countRows = db.prepare(
      'SELECT count(*) AS n, min(spooled_at) AS oldest FROM webhook_spool',
    );
  }

  /** Opens (creating) the spool at `file`; a file that cannot be opened is a StoreError. */
  static open(file: string): WebhookSpool {
    let db: Database.Database | undefined;
    try {
      db = openSqliteFile(file, 2_000, 'FULL');
      db.exec(`CREATE TABLE IF NOT EXISTS webhook_spool (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        connection_id TEXT NOT NULL,
        delivery_id TEXT NOT NULL,
        resource TEXT NOT NULL,
        record_id TEXT NOT NULL,
        action TEXT NOT NULL,
        occurred_at TEXT,
        spooled_at INTEGER NOT NULL,
        UNIQUE (connection_id, delivery_id))`);
      return new WebhookSpool(db);
    } catch (error) {
      db?.close();
      throw toStoreError('SQLite', error);
    }
  }

  /** Keeps a notice, committed (fsynced) when it returns; a delivery id kept before is `duplicate`. */
  keep(notice: Notice, at = Date.now()): Acceptance {
    try {
      const { changes } = this.keepOne.run(
        notice.connectionId,
        notice.deliveryId,
        notice.resource,
        notice.recordId,
        notice.action,
        notice.occurredAt,
        at,
      );
      return changes > 0 ? 'stored' : 'duplicate';
    } catch (error) {
      throw toStoreError('SQLite', error);
    }
  }

  /** Up to `limit` kept notices, oldest first; `receivedAt` is when the spool kept each. */
  oldest(limit: number): PendingNotice[] {
    return this.oldestRows.all(limit).map((row) => noticeOf(row, (ms) => new Date(ms)));
  }

  /** Forgets notices the inbox has taken. */
  drop(notices: readonly Pick<Notice, 'connectionId' | 'deliveryId'>[]): void {
    this.db.transaction(() => {
      for (const n of notices) this.dropOne.run(n.connectionId, n.deliveryId);
    })();
  }

  /** How many notices it holds, and when the oldest of them was kept (null: none). */
  held(): { count: number; oldestAt: Date | null } {
    const row = this.countRows.get();
    return {
      count: row?.n ?? 0,
      oldestAt: row?.oldest === null || row?.oldest === undefined ? null : new Date(row.oldest),
    };
  }

  close(): void {
    this.db.close();
  }
}
