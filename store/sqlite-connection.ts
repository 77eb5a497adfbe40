import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';

/** `sqlite:PATH` names a file explicitly (the form `--to` and store locations take). */
export function sqlitePathOf(location: string): string {
  return location.startsWith('sqlite:') ? location.slice('sqlite:'.length) : location;
}

/** The location a file is known by in ledger keys and messages: absolute, so one per file. */
export function sqliteIdentity(file: string): string {
  return file === ':memory:' ? 'sqlite::memory:' : `sqlite:${resolve(file)}`;
}

/**
 * Opens (creating) a database file in WAL mode, so readers never block the writer and
 * several processes can share the file; a writer waits up to busyTimeoutMs for another.
 */
export function openSqliteFile(file: string, busyTimeoutMs = 10_000): Database.Database {
  if (file !== ':memory:') mkdirSync(dirname(resolve(file)), { recursive: true });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  // NORMAL in WAL mode loses no committed data on a process crash, only on power loss.
  db.pragma('synchronous = NORMAL');
  db.pragma(`busy_timeout = ${busyTimeoutMs}`);
  return db;
}
