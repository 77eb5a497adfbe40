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

/** Which engine a store location names. */
export type StoreLocation =
  | { readonly kind: 'postgres'; readonly url: string }
  | { readonly kind: 'sqlite'; readonly path: string };

/**
 * Reads a store location: a `postgres://` URL (shared by many workers), or an SQLite file as
 * `sqlite:PATH` or a plain path. Anything else is refused without echoing a password.
 */
export function storeLocationOf(location: string): StoreLocation {
  if (isPostgresUrl(location)) return { kind: 'postgres', url: location };
  const path = sqlitePathOf(location);
  if (path === '' || /^[a-z][a-z0-9+.-]*:\/\//i.test(path)) {
    throw new StoreLocationError(
      `store location '${maskCredentials(location)}' is not allowed: expected a file path, sqlite:PATH or postgres://…`,
    );
  }
  return { kind: 'sqlite', path };
}

/** Opens the ledger at `location` and brings the store's schema up to date. */
export async function openLedger(location: string): Promise<Ledger> {
  const where = storeLocationOf(location);
  return where.kind === 'postgres' ? openPostgresLedger(where.url) : openSqliteLedger(where.path);
}
