import { defaultPayloadConverter, type PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';
import type Database from 'better-sqlite3';

const { temporal } = proto;

/**
 * Values kept on disk sealed exactly as Temporal payloads are (the payload codec: AES-256-GCM
 * under EBSYNC_ENCRYPTION_KEYS), so one key rotation covers history and local files alike.
 *
 * A stored value is sealed for its row: the codec authenticates the row's name (its table and
 * key) as additional data, and opening names the row again. A value copied into another row
 * (one connection's signing secret under another's name, one endpoint's URL under another's)
 * then fails to open instead of being used there.
 */

/** Payload metadata naming the row a value is sealed for (read by worker/codec.ts). */
export const SEALED_ROW = 'ebsync-sealed-row';

/** The name a row is sealed under: its table and key, unambiguous whatever the key holds. */
export function sealedRowName(table: string, key: readonly string[]): string {
  return JSON.stringify([table, ...key]);
}

function named(payload: proto.temporal.api.common.v1.IPayload, row: string | undefined) {
  if (row === undefined) return payload;
  return { ...payload, metadata: { ...payload.metadata, [SEALED_ROW]: Buffer.from(row) } };
}

export async function sealValue(
  codec: PayloadCodec,
  value: unknown,
  row?: string,
): Promise<Buffer> {
  const [sealed] = await codec.encode([named(defaultPayloadConverter.toPayload(value), row)]);
  if (!sealed) throw new Error('codec returned no payload');
  return Buffer.from(temporal.api.common.v1.Payload.encode(sealed).finish());
}

export async function openValue<T>(
  codec: PayloadCodec,
  bytes: Buffer,
  row?: string,
): Promise<T | undefined> {
  const [payload] = await codec.decode([named(temporal.api.common.v1.Payload.decode(bytes), row)]);
  return payload ? defaultPayloadConverter.fromPayload<T>(payload) : undefined;
}

/**
 * Seals a table's values written before values were sealed for their rows, once per table
 * (marked in `sealed_row_bindings`): each value that opens without a row is sealed again for
 * the row it is in, if no one changed that row meanwhile. Afterwards the table's values open
 * only for their own rows. A value that opens neither way is left as it is; reading it says so.
 */
export async function bindSealedRows(
  db: Database.Database,
  codec: PayloadCodec,
  table: string,
  keyColumns: readonly string[],
): Promise<void> {
  db.exec(`CREATE TABLE IF NOT EXISTS sealed_row_bindings (
    table_name TEXT PRIMARY KEY, bound_at INTEGER NOT NULL)`);
  const done = db.prepare('SELECT 1 FROM sealed_row_bindings WHERE table_name = ?');
  if (done.get(table)) return;
  const rows = db
    .prepare<[], Record<string, unknown>>(`SELECT ${keyColumns.join(', ')}, sealed FROM ${table}`)
    .all();
  const resealed: { key: string[]; before: Buffer; after: Buffer }[] = [];
  for (const row of rows) {
    const key = keyColumns.map((column) => String(row[column]));
    const before = row.sealed as Buffer;
    const value = await openValue(codec, before).catch(() => undefined);
    if (value === undefined) continue; // sealed for its row already, or not ours to open
    resealed.push({ key, before, after: await sealValue(codec, value, sealedRowName(table, key)) });
  }
  const where = keyColumns.map((column) => `${column} = ?`).join(' AND ');
  const update = db.prepare(`UPDATE ${table} SET sealed = ? WHERE ${where} AND sealed = ?`);
  db.transaction(() => {
    for (const { key, before, after } of resealed) update.run(after, ...key, before);
    db.prepare('INSERT OR IGNORE INTO sealed_row_bindings VALUES (?, ?)').run(table, Date.now());
  })();
}
