import { describe, expect, it } from 'vitest';
import { createPostgresPool, inPostgresTransaction } from '../../store/postgres-pool.js';
import { createTestDatabase, queryDatabase } from '../helpers/postgres.js';

/**
 * A Postgres restart (`ebsync postgres` stopped under load, a failover) ends every session with
 * FATAL 57P01. A session checked out of the pool between two statements gets that as an
 * 'error' event of its client, and node-postgres throws an 'error' event nobody listens to:
 * found by stopping the shared store under three workers, one of which died of it while its
 * activities waited out their heartbeat timeouts.
 */
describe('a Postgres session ended by the server inside a transaction', () => {
  it('fails that transaction, leaves the process running and the pool usable', async () => {
    const url = await createTestDatabase('pg_terminated');
    const pool = createPostgresPool(url, { applicationName: 'ebsync-test-terminated' });
    try {
      const outcome = await inPostgresTransaction(pool, async (client) => {
        const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        // Ended from another session while this one sits between statements, as a server
        // shutting down ends it.
        await queryDatabase(url, 'SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
        await new Promise((resolve) => setTimeout(resolve, 500));
        await client.query('SELECT 1');
        return 'committed';
      }).catch((error: unknown) => error);
      expect(outcome).toBeInstanceOf(Error);
      const { rows } = await pool.query<{ one: number }>('SELECT 1 AS one');
      expect(rows).toEqual([{ one: 1 }]);
    } finally {
      await pool.end();
    }
  });
});
