import { createPostgresPool, inPostgresTransaction } from './postgres-pool.js';
import { openMirrorFile } from './sqlite-files.js';

/**
 * The database openers the SQLite and Postgres destinations are given: the same drivers,
 * pragmas, pool options and retries as the ledger's (only an SQLite mirror file's pages are
 * larger: sqlite-files.ts). Their shape is declared in destinations/database-openers.ts,
 * which store/ may not import; TypeScript checks the fit where a caller hands this over.
 */
export const databaseOpeners = {
  openSqliteFile: openMirrorFile,
  createPostgresPool,
  inPostgresTransaction,
};
