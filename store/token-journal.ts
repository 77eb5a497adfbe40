import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import type { PayloadCodec } from '@temporalio/common';
import { openValue, sealValue } from './sealed-values.js';

/**
 * Where a refresh activity writes the rotated tokens the moment the OAuth server hands them
 * over, before it returns. If the worker dies between that and reporting the result, the retry
 * finds them here instead of presenting the (now dead) old refresh token again, which would
 * revoke the whole grant. Entries are sealed with the payload codec and keyed by a hash of
 * the refresh token they replaced.
 */
export interface TokenJournal {
  recall<T>(connectionId: string, replacedRefreshToken: string): Promise<T | undefined>;
  record(connectionId: string, replacedRefreshToken: string, value: unknown): Promise<void>;
  close(): void;
}

const hashOf = (token: string): string => createHash('sha256').update(token).digest('hex');

export function sqliteTokenJournal(file: string, codec: PayloadCodec): TokenJournal {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  // FULL: the write is on disk before the activity goes on; that is the point of the journal.
  db.pragma('synchronous = FULL');
  db.pragma('busy_timeout = 5000');
  db.exec(`CREATE TABLE IF NOT EXISTS token_rotations (
    connection_id TEXT NOT NULL, replaced_hash TEXT NOT NULL, sealed BLOB NOT NULL,
    recorded_at INTEGER NOT NULL, PRIMARY KEY (connection_id, replaced_hash))`);
  const insert = db.prepare(
    'INSERT OR REPLACE INTO token_rotations (connection_id, replaced_hash, sealed, recorded_at) VALUES (?, ?, ?, ?)',
  );
  const select = db.prepare<[string, string], { sealed: Buffer }>(
    'SELECT sealed FROM token_rotations WHERE connection_id = ? AND replaced_hash = ?',
  );
  const prune = db.prepare('DELETE FROM token_rotations WHERE recorded_at < ?');

  return {
    async recall<T>(connectionId: string, replaced: string): Promise<T | undefined> {
      const row = select.get(connectionId, hashOf(replaced));
      return row ? openValue<T>(codec, row.sealed) : undefined;
    },
    async record(connectionId: string, replaced: string, value: unknown): Promise<void> {
      insert.run(connectionId, hashOf(replaced), await sealValue(codec, value), Date.now());
      // Rotations older than a week can no longer be asked for by any retry.
      prune.run(Date.now() - 7 * 24 * 3600 * 1000);
    },
    close() {
      db.close();
    },
  };
}
