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

/**
 * A Postgres URL as node-postgres is to read it: its `sslmode` with libpq's meaning, the one
 * psql gives it and a provider's URL means. node-postgres 8 took `prefer`, `require` and
 * `verify-ca` as `verify-full` and printed a 9-line SECURITY WARNING saying its next major
 * will not; its `uselibpqcompat=true` gives libpq's meaning now, quietly, and keeps it
 * across that upgrade:
 * - `disable`: no TLS;
 * - `require`: TLS, the server's certificate not checked (checked against `sslrootcert`, as
 *   `verify-ca`, when one is given);
 * - `verify-ca`: TLS, the certificate checked against `sslrootcert` (required), not the host;
 * - `verify-full`: TLS, the certificate and the host name checked (against `sslrootcert`, or
 *   the system's authorities);
 * - `prefer` and `allow`: TLS as `require`, since the driver cannot fall back to a connection
 *   in the clear as libpq does: never less than libpq would give.
 * `no-verify`, node-postgres's own mode (TLS, nothing checked), and a URL that says
 * `uselibpqcompat` itself are left as they are.
 */
export function withLibpqSslMode(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url;
  }
  const mode = parsed.searchParams.get('sslmode');
  if (mode === null || mode === 'no-verify' || parsed.searchParams.has('uselibpqcompat')) {
    return url;
  }
  if (mode === 'allow' || mode === 'prefer') parsed.searchParams.set('sslmode', 'require');
  parsed.searchParams.set('uselibpqcompat', 'true');
  return parsed.toString();
}

export function createPostgresPool(url: string, options: PoolOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString: withLibpqSslMode(url),
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
    // The pool listens for errors of idle clients only. A server shutting down (a restart, a
    // failover) ends this session while it is checked out, between two statements: unheard,
    // node-postgres throws that 'error' event and the worker process dies. The statement
    // under way, or the next one, fails with it anyway, and the session is not given back.
    const onError = () => {
      broken = true;
    };
    client.on('error', onError);
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
      client.removeListener('error', onError);
    }
    await new Promise((r) => setTimeout(r, 10 * attempt + Math.random() * 20));
  }
}
