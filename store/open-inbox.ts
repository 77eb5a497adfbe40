import type { Inbox } from './inbox.js';
import { storeLocationOf } from './open-ledger.js';
import { openPostgresInbox } from './postgres-inbox.js';
import { openSqliteInbox } from './sqlite-inbox.js';

/**
 * Opens the webhook inbox in the store at `location` (the ledger's, `EBSYNC_STORE_URL`) and
 * brings the store's schema up to date.
 */
export async function openInbox(location: string): Promise<Inbox> {
  const where = storeLocationOf(location);
  return where.kind === 'postgres' ? openPostgresInbox(where.url) : openSqliteInbox(where.path);
}
