import { createPostgresPool, inPostgresTransaction } from './postgres-pool.js';
import { openSqliteFile } from './sqlite-files.js';

/**
 * The database openers the SQLite and Postgres destinations are given: the same drivers,
 * pragmas, pool options and retries as the ledger's. Their shape is declared in
 * destinations/database-openers.ts, which store/ may not import; TypeScript checks the fit
 * where a caller hands this over.
 */
export const databaseOpeners = { openSqliteFile, createPostgresPool, inPostgresTransaction };
