import pg from 'pg';

/**
 * How ebsync sets up its database drivers, shared by the ledger (store/) and the database
 * destinations: Postgres pool timeouts, the transaction retry on conflicts, and which failures
 * are worth retrying (SQLite files open in sqlite-files.ts, which loads no Postgres driver).
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

/*
 * Which database failures are worth retrying unchanged, for both engines: lost or refused
 * connections, a server shutting down or full, lock conflicts (SQLite busy, Postgres deadlock
 * and serialization failures). Everything else is a fault of the statement or the data.
 */

const TRANSIENT_SQLSTATES = new Set(['40001', '40P01', '55P03', '57P01', '57P02', '57P03']);
/** SQLSTATE classes: 08 connection exception, 53 insufficient resources. */
const TRANSIENT_SQLSTATE_CLASSES = new Set(['08', '53']);
const TRANSIENT_NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);

function codeOf(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null || !('code' in error)) return undefined;
  return typeof error.code === 'string' ? error.code : undefined;
}

/** Postgres conflicts that a new transaction resolves: deadlock, serialization failure. */
export function isConflictError(error: unknown): boolean {
  const code = codeOf(error);
  return code === '40001' || code === '40P01';
}

export function isTransientDatabaseError(error: unknown): boolean {
  const code = codeOf(error);
  if (code !== undefined) {
    if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return true;
    if (/^[0-9A-Z]{5}$/.test(code)) {
      return TRANSIENT_SQLSTATES.has(code) || TRANSIENT_SQLSTATE_CLASSES.has(code.slice(0, 2));
    }
    if (TRANSIENT_NETWORK_CODES.has(code)) return true;
  }
  // node-postgres reports a dropped connection and a pool timeout without a code.
  const message = error instanceof Error ? error.message : '';
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(
    message,
  );
}

/** The database's own words, without a stack: safe to show (no statement parameters). */
export function databaseMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
