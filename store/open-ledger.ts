import { join } from 'node:path';
import { isPostgresUrl, maskCredentials, sqlitePathOf } from '../config/database-locations.js';
import { StoreLocationError } from './errors.js';
import type { Ledger } from './ledger.js';
import { openPostgresLedger } from './postgres-ledger.js';
import { openSqliteLedger } from './sqlite-ledger.js';

/** Where the ledger lives when nothing else is said: one SQLite file in the data directory. */
export function defaultLedgerFile(dataDir: string): string {
  return join(dataDir, 'store.db');
}

/**
 * Opens the ledger at `location` and brings its schema up to date: a `postgres://` URL
 * (shared by many workers), or an SQLite file as `sqlite:PATH` or a plain path.
 */
export async function openLedger(location: string): Promise<Ledger> {
  if (isPostgresUrl(location)) return openPostgresLedger(location);
  const path = sqlitePathOf(location);
  if (path === '' || /^[a-z][a-z0-9+.-]*:\/\//i.test(path)) {
    throw new StoreLocationError(
      `store location '${maskCredentials(location)}' is not allowed: expected a file path, sqlite:PATH or postgres://…`,
    );
  }
  return openSqliteLedger(path);
}
