import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { makePrivateDir, prepareSqliteFile, tightenSqliteFiles } from './private-files.js';

/**
 * How ebsync opens an SQLite file, for the ledger, the local stores and (handed over as
 * store/database-openers.ts) the SQLite destination. Apart from postgres-pool.ts so what uses
 * only SQLite (a status, a CLI command) never loads the Postgres driver.
 */

/** Page cache per SQLite connection, in KiB. */
const SQLITE_CACHE_KIB = 4096;

/**
 * Page size of the files the SQLite destination makes. A mirrored lead (its typed columns
 * and its record) takes about 3.5 KiB, so SQLite's default 4 KiB pages hold one row each and
 * leave the rest empty; 16 KiB pages hold four. A pass of 10,000 leads left a file of 33 MB
 * instead of 48 MB, and SQLite's share of the worker's profile fell by about 40 %. The
 * store's files keep the default: their rows are small and their commits touch few pages.
 */
const MIRROR_PAGE_BYTES = 16_384;

/**
 * Opens (creating) a database file in WAL mode, so readers never block the writer and
 * several processes can share the file; a writer waits up to busyTimeoutMs for another. The
 * file and its side files are its owner's only (private-files.ts), and so is a
 * directory made for it. `synchronous` is per connection: NORMAL in WAL mode loses no
 * committed data on a process crash, only on power loss; FULL syncs the log at every commit,
 * so a commit survives that too.
 */
export function openSqliteFile(
  file: string,
  busyTimeoutMs = 10_000,
  synchronous: 'NORMAL' | 'FULL' = 'NORMAL',
  pageBytes?: number,
): Database.Database {
  if (file !== ':memory:') {
    makePrivateDir(dirname(resolve(file)));
    prepareSqliteFile(file);
  }
  const db = new Database(file);
  try {
    // Only a file without pages yet takes it (and only before WAL is set); others keep theirs.
    if (pageBytes !== undefined) db.pragma(`page_size = ${pageBytes}`);
    // Reads the header: a file that is no database is refused here, its mode left as it was.
    db.pragma('journal_mode = WAL');
  } catch (error) {
    db.close();
    throw error;
  }
  // A database now, with its side files (those an earlier version left readable among them).
  if (file !== ':memory:') tightenSqliteFiles(file);
  db.pragma(`synchronous = ${synchronous}`);
  db.pragma(`busy_timeout = ${busyTimeoutMs}`);
  // better-sqlite3 builds SQLite with a 16 MiB page cache per connection; a worker holds a
  // ledger and a destination open, and the operating system caches the same pages anyway.
  db.pragma(`cache_size = -${SQLITE_CACHE_KIB}`);
  return db;
}

/** A file of the SQLite destination (the mirror): as openSqliteFile, with larger pages. */
export function openMirrorFile(file: string): Database.Database {
  return openSqliteFile(file, undefined, undefined, MIRROR_PAGE_BYTES);
}
