import type Database from 'better-sqlite3';
import type { Acceptance, Notice } from './inbox.js';

/**
 * Stores a group of notices in one immediate transaction on `db`, a repeat of a delivery id
 * answered as a duplicate: the commit of the SQLite inbox, on its writer thread
 * (store/sqlite-inbox-writer.ts) and on the receiver's event loop (store/sqlite-inbox.ts).
 */
export function noticeCommitter(
  db: Database.Database,
): (notices: readonly Notice[], at: number) => Acceptance[] {
  const insert = db.prepare(
    `INSERT INTO webhook_inbox (connection_id, delivery_id, resource, record_id, action,
       occurred_at, received_at) VALUES (?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (connection_id, delivery_id) DO NOTHING`,
  );
  const acceptAll = db.transaction((notices: readonly Notice[], at: number): Acceptance[] =>
    notices.map((n) =>
      insert.run(n.connectionId, n.deliveryId, n.resource, n.recordId, n.action, n.occurredAt, at)
        .changes > 0
        ? 'stored'
        : 'duplicate',
    ),
  );
  return (notices, at) => acceptAll.immediate(notices, at);
}
