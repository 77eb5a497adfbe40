import type Database from 'better-sqlite3';
import type pg from 'pg';

/**
 * How the database destinations open their connections, handed in by whoever opens a
 * destination: the drivers are set up in store/ (store/database-openers.ts), beside the
 * ledger that opens the same way, and destinations/ may import only records and config. The
 * destinations use what they are given and open nothing themselves.
 */
export interface DatabaseOpeners {
  /** An SQLite file as ebsync keeps it: WAL, busy timeout, owner-only modes. */
  openSqliteFile: (file: string) => Database.Database;
  /** A Postgres pool with ebsync's timeouts; `max` connections per process. */
  createPostgresPool: (url: string, options: { max?: number; applicationName: string }) => pg.Pool;
  /** Runs fn in one transaction, again after a deadlock or serialization failure. */
  inPostgresTransaction: <T>(
    pool: pg.Pool,
    fn: (client: pg.PoolClient) => Promise<T>,
  ) => Promise<T>;
}
