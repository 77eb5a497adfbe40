import pg from 'pg';
import { isConflictError } from '../config/database-errors.js';

/**
 * How ebsync sets up its Postgres driver, for the ledger and inbox and (handed over as
 * database-openers.ts) the Postgres destination: pool timeouts and the transaction retry on
 * conflicts. SQLite files open in sqlite-files.ts, which loads no Postgres driver; which
 * failures are worth retrying is config/database-errors.ts, which loads no driver at all.
 */

export interface PoolOptions {
  /** Connections this process may hold (each worker process has its own pool). */
  max?: number;
  applicationName: string;
}

export function createPostgresPool(url: string, options: PoolOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    application_name: options.applicationName,
    connectionTimeoutMillis: 10_000,
    idleTimeoutMillis: 30_000,
  });
  // An idle connection dropped by the server (restart, failover) is not a crash: the pool
  // discards it and the next query opens a new one.
  pool.on('error', () => undefined);
  return pool;
}

/**
 * Runs fn in one transaction. A deadlock or serialization failure rolls back and runs fn
 * again (a few times): concurrent writers of overlapping rows resolve here, not in callers.
 */
export async function inPostgresTransaction<T>(
  pool: pg.Pool,
  fn: (client: pg.PoolClient) => Promise<T>,
  attempts = 5,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const client = await pool.connect();
    let broken = false;
    try {
      await client.query('BEGIN');
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {
        broken = true;
      });
      if (!isConflictError(error) || attempt >= attempts) throw error;
    } finally {
      client.release(broken);
    }
    await new Promise((r) => setTimeout(r, 10 * attempt + Math.random() * 20));
  }
}
