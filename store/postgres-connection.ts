import pg from 'pg';
import { isConflictError } from './database-errors.js';

/** `postgres://` or `postgresql://`, as libpq and node-postgres take them. */
export function isPostgresUrl(text: string): boolean {
  return /^postgres(ql)?:\/\//i.test(text);
}

/** Any `//user:password@` in a text (a URL someone typed) masked, for error messages. */
export function maskCredentials(text: string): string {
  return text.replace(/\/\/[^@/]*@/, '//***@');
}

/** The URL without its password (and query), for logs, errors and ledger keys. */
export function redactPostgresUrl(url: string): string {
  const parsed = new URL(url);
  parsed.password = '';
  parsed.search = '';
  parsed.hash = '';
  return parsed.toString();
}

/** The URL with user and password removed too: the same database however one logs in. */
export function postgresIdentity(url: string): string {
  const parsed = new URL(url);
  const database = parsed.pathname.replace(/^\//, '') || parsed.username || 'postgres';
  return `postgres://${parsed.hostname}:${parsed.port || '5432'}/${database}`;
}

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
