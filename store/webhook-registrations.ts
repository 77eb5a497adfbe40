import type { PayloadCodec } from '@temporalio/common';
import Database from 'better-sqlite3';
import { openSqliteFile } from './sqlite-files.js';
import { bindSealedRows, openValue, sealedRowName, sealValue } from './sealed-values.js';

/** A connection's webhook registration: where its changes go and how deliveries are signed. */
export interface WebhookRegistration {
  /** The signing secret (`whsec_…` for Standard Webhooks). Sealed at rest, never logged. */
  secret: string;
  /** Destination target the per-record workflows write to (`sqlite:PATH`, `postgres://…`). */
  destination: string;
  /** The URL registered with the service, and the service's id of the endpoint if it gave one. */
  url: string;
  endpointId: string | null;
  registeredAt: string;
  /**
   * Endpoints earlier registrations made at the sandbox that no registration since could
   * remove (one with --secret-stdin has no admin API to ask): they still sign with a secret
   * the receiver no longer holds, until the next --sandbox-admin registration removes them.
   */
  leftEndpoints?: { id: string; url: string }[];
}

export interface WebhookRegistrations {
  get(connectionId: string): Promise<WebhookRegistration | undefined>;
  /** The connections that have a registration, in name order. */
  connectionIds(): string[];
  put(connectionId: string, registration: WebhookRegistration): Promise<void>;
  remove(connectionId: string): boolean;
  close(): void;
}

const CONNECTION_IDS = 'SELECT connection_id FROM webhook_registrations ORDER BY connection_id';

/**
 * The connections registered in `file`, read only: no codec, no table made, nothing written
 * (the status page asks every few seconds). A file without the table holds none.
 */
export function registeredConnectionIds(file: string): string[] {
  const db = new Database(file, { readonly: true, fileMustExist: true, timeout: 1_000 });
  try {
    const table = db
      .prepare<[], number>(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'webhook_registrations'",
      )
      .pluck()
      .get();
    if (!table) return [];
    return db.prepare<[], string>(CONNECTION_IDS).pluck().all();
  } finally {
    db.close();
  }
}

/**
 * Registrations in an SQLite file under the data dir, each sealed with the payload codec.
 * The receiver reads one per delivery (a primary-key lookup and one AES-GCM open).
 */
export function sqliteWebhookRegistrations(
  file: string,
  codec: PayloadCodec,
): WebhookRegistrations {
  const db = openSqliteFile(file, 5_000);
  db.exec(`CREATE TABLE IF NOT EXISTS webhook_registrations (
    connection_id TEXT PRIMARY KEY, sealed BLOB NOT NULL, updated_at INTEGER NOT NULL)`);
  const select = db.prepare<[string], { sealed: Buffer }>(
    'SELECT sealed FROM webhook_registrations WHERE connection_id = ?',
  );
  const upsert = db.prepare(
    'INSERT OR REPLACE INTO webhook_registrations (connection_id, sealed, updated_at) VALUES (?, ?, ?)',
  );
  const remove = db.prepare('DELETE FROM webhook_registrations WHERE connection_id = ?');
  const ids = db.prepare<[], string>(CONNECTION_IDS).pluck();
  const rowName = (connectionId: string) => sealedRowName('webhook_registrations', [connectionId]);
  let bound: Promise<void> | undefined;
  const ready = () =>
    (bound ??= bindSealedRows(db, codec, 'webhook_registrations', ['connection_id']));
  return {
    async get(connectionId) {
      await ready();
      const row = select.get(connectionId);
      return row
        ? openValue<WebhookRegistration>(codec, row.sealed, rowName(connectionId))
        : undefined;
    },
    async put(connectionId, registration) {
      await ready();
      upsert.run(
        connectionId,
        await sealValue(codec, registration, rowName(connectionId)),
        Date.now(),
      );
    },
    connectionIds: () => ids.all(),
    remove: (connectionId) => remove.run(connectionId).changes > 0,
    close: () => db.close(),
  };
}
