import { createHash } from 'node:crypto';
import type { PayloadCodec } from '@temporalio/common';
import { openSqliteFile } from './sqlite-files.js';
import { bindSealedRows, openValue, sealedRowName, sealValue } from './sealed-values.js';

/** The names of a table of sealed values, each keyed by an owner and a token's hash. */
export interface SealedTokenTableNames {
  table: string;
  owner: string;
  tokenHash: string;
  at: string;
}

/** Sealed values keyed by an owner and a token, which is only ever stored as its hash. */
export interface SealedTokenTable {
  get<T>(owner: string, token: string): Promise<T | undefined>;
  put(owner: string, token: string, value: unknown): Promise<void>;
  /** Drops the values written before `at` (epoch ms). */
  dropBefore(at: number): void;
  close(): void;
}

const hashOf = (token: string): string => createHash('sha256').update(token).digest('hex');

/**
 * A table in an SQLite file for secrets that must survive a crash the moment they are
 * written (rotated tokens: the old one may be dead already): WAL, synchronous FULL, and a
 * wait on a lock held by another process sharing the data dir. Values are sealed with the
 * payload codec.
 */
export function sealedTokenTable(
  file: string,
  codec: PayloadCodec,
  names: SealedTokenTableNames,
): SealedTokenTable {
  const db = openSqliteFile(file, 5_000);
  // FULL, not openSqliteFile's NORMAL: a token written must survive power loss too.
  db.pragma('synchronous = FULL');
  const { table, owner, tokenHash, at } = names;
  db.exec(`CREATE TABLE IF NOT EXISTS ${table} (
    ${owner} TEXT NOT NULL, ${tokenHash} TEXT NOT NULL, sealed BLOB NOT NULL,
    ${at} INTEGER NOT NULL, PRIMARY KEY (${owner}, ${tokenHash}))`);
  const insert = db.prepare(
    `INSERT OR REPLACE INTO ${table} (${owner}, ${tokenHash}, sealed, ${at}) VALUES (?, ?, ?, ?)`,
  );
  const select = db.prepare<[string, string], { sealed: Buffer }>(
    `SELECT sealed FROM ${table} WHERE ${owner} = ? AND ${tokenHash} = ?`,
  );
  const drop = db.prepare(`DELETE FROM ${table} WHERE ${at} < ?`);
  const rowName = (key: string, hash: string) => sealedRowName(table, [key, hash]);
  let bound: Promise<void> | undefined;
  const ready = () => (bound ??= bindSealedRows(db, codec, table, [owner, tokenHash]));
  return {
    async get<T>(key: string, token: string): Promise<T | undefined> {
      await ready();
      const hash = hashOf(token);
      const row = select.get(key, hash);
      return row ? openValue<T>(codec, row.sealed, rowName(key, hash)) : undefined;
    },
    async put(key: string, token: string, value: unknown): Promise<void> {
      await ready();
      const hash = hashOf(token);
      insert.run(key, hash, await sealValue(codec, value, rowName(key, hash)), Date.now());
    },
    dropBefore(time: number) {
      drop.run(time);
    },
    close() {
      db.close();
    },
  };
}
