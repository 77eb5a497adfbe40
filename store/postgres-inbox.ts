import { inPostgresTransaction } from './postgres-pool.js';
import { postgresIdentity } from '../config/database-locations.js';
import { postgresCall, toStoreError } from './errors.js';
import { GroupCommit } from './group-commit.js';
import type { Acceptance, Inbox, Notice } from './inbox.js';
import { changeOf, noticeOf, statsOf, type ChangeRow, type NoticeRow } from './inbox-rows.js';
import { openMigratedPool } from './postgres-ledger.js';

const same = (date: Date) => date;

/**
 * The inbox in the Postgres store, which several receivers behind a load balancer and the
 * workers of many machines share: the unique (connection, delivery id) key dedupes across all
 * of them. A group of notices is one INSERT, committed before any of them is answered.
 */
export async function openPostgresInbox(
  url: string,
  options: { maxConnections?: number } = {},
): Promise<Inbox> {
  const pool = await openMigratedPool(url, 'ebsync-inbox', options.maxConnections);
  const run = postgresCall;

  const acceptAll = async (notices: readonly Notice[]): Promise<Acceptance[]> => {
    // A delivery id twice in one group: the first is the one stored, the rest duplicates.
    const first = new Map<string, number>();
    notices.forEach((n, i) => {
      const key = `${n.connectionId}\n${n.deliveryId}`;
      if (!first.has(key)) first.set(key, i);
    });
    const unique = [...first.values()].map((i) => notices[i]!);
    const { rows } = await pool.query<{ connection_id: string; delivery_id: string }>(
      `INSERT INTO webhook_inbox (connection_id, delivery_id, resource, record_id, action,
         occurred_at, received_at)
       SELECT c, d, r, i, a, o, now()
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
         WITH ORDINALITY AS u(c, d, r, i, a, o, n)
       ORDER BY n
       ON CONFLICT (connection_id, delivery_id) DO NOTHING
       RETURNING connection_id, delivery_id`,
      [
        unique.map((n) => n.connectionId),
        unique.map((n) => n.deliveryId),
        unique.map((n) => n.resource),
        unique.map((n) => n.recordId),
        unique.map((n) => n.action),
        unique.map((n) => n.occurredAt),
      ],
    );
    const stored = new Set(rows.map((r) => `${r.connection_id}\n${r.delivery_id}`));
    return notices.map((n, i) => {
      const key = `${n.connectionId}\n${n.deliveryId}`;
      return first.get(key) === i && stored.has(key) ? 'stored' : 'duplicate';
    });
  };
  const group = new GroupCommit<Notice, Acceptance>(acceptAll);

  return {
    location: postgresIdentity(url),
    accept: (notice) =>
      group.add(notice).catch((error: unknown) => {
        throw toStoreError('Postgres', error);
      }),
    acceptedSoFar: () => ({ notices: group.items, commits: group.commits }),
    pending: (connectionId, limit) =>
      run(async () => {
        const { rows } = await pool.query<NoticeRow<Date>>(
          `SELECT seq, connection_id, delivery_id, resource, record_id, action, occurred_at,
             received_at FROM webhook_inbox
           WHERE connection_id = $1 AND done_at IS NULL ORDER BY seq LIMIT $2`,
          [connectionId, limit],
        );
        return rows.map((row) => noticeOf(row, same));
      }),
    pendingOf: (connectionId, records, limit) =>
      run(async () => {
        if (records.length === 0) return [];
        const { rows } = await pool.query<{ seq: string; resource: string; record_id: string }>(
          `SELECT seq, resource, record_id FROM webhook_inbox
           WHERE connection_id = $1 AND done_at IS NULL AND (resource, record_id) IN (
             SELECT * FROM unnest($2::text[], $3::text[]))
           ORDER BY seq LIMIT $4`,
          [connectionId, records.map((r) => r.resource), records.map((r) => r.recordId), limit],
        );
        return rows.map((r) => ({
          seq: Number(r.seq),
          resource: r.resource,
          recordId: r.record_id,
        }));
      }),
    markDone: (connectionId, seqs, at = new Date()) =>
      run(async () => {
        if (seqs.length === 0) return 0;
        const result = await pool.query(
          `UPDATE webhook_inbox SET done_at = $1
           WHERE connection_id = $2 AND done_at IS NULL AND seq = ANY($3::bigint[])`,
          [at, connectionId, seqs],
        );
        return result.rowCount ?? 0;
      }),
    pendingConnections: () =>
      run(async () => {
        const { rows } = await pool.query<{ connection_id: string }>(
          'SELECT DISTINCT connection_id FROM webhook_inbox WHERE done_at IS NULL ORDER BY 1',
        );
        return rows.map((r) => r.connection_id);
      }),
    stats: (windowMs, at = new Date()) =>
      run(async () => {
        const [pending, drained] = await Promise.all([
          pool.query<{ connection_id: string; pending: number; oldest: Date }>(
            `SELECT connection_id, count(*)::int AS pending, min(received_at) AS oldest
             FROM webhook_inbox WHERE done_at IS NULL GROUP BY connection_id`,
          ),
          pool.query<{ connection_id: string; drained: number }>(
            `SELECT connection_id, count(*)::int AS drained FROM webhook_inbox
             WHERE done_at IS NOT NULL AND done_at >= $1 GROUP BY connection_id`,
            [new Date(at.getTime() - windowMs)],
          ),
        ]);
        return statsOf(
          pending.rows.map((r) => ({
            connectionId: r.connection_id,
            pending: r.pending,
            oldest: r.oldest,
          })),
          drained.rows.map((r) => ({ connectionId: r.connection_id, drained: r.drained })),
        );
      }),
    prune: (before, limit) =>
      run(async () => {
        const notices = await pool.query(
          `DELETE FROM webhook_inbox WHERE seq IN (
             SELECT seq FROM webhook_inbox WHERE done_at IS NOT NULL AND done_at < $1 LIMIT $2)`,
          [before, limit],
        );
        const changes = await pool.query(
          `DELETE FROM automation_outbox
           WHERE (connection_id, batch_key, resource, record_id) IN (
             SELECT connection_id, batch_key, resource, record_id FROM automation_outbox
             WHERE applied_at < $1 LIMIT $2)`,
          [before, limit],
        );
        return (notices.rowCount ?? 0) + (changes.rowCount ?? 0);
      }),
    keepChanges: (changes) =>
      run(async () => {
        if (changes.length === 0) return;
        await inPostgresTransaction(pool, async (client) => {
          for (const c of changes) {
            await client.query(
              `INSERT INTO automation_outbox (connection_id, batch_key, resource, record_id,
                 action, sealed, applied_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
               ON CONFLICT (connection_id, batch_key, resource, record_id) DO UPDATE SET
                 action = EXCLUDED.action, sealed = EXCLUDED.sealed,
                 applied_at = EXCLUDED.applied_at`,
              [c.connectionId, c.batchKey, c.resource, c.recordId, c.action, c.sealed, c.appliedAt],
            );
          }
        });
      }),
    owedChanges: (connectionId, batchKey) =>
      run(async () => {
        const { rows } = await pool.query<ChangeRow<Date>>(
          `SELECT connection_id, batch_key, resource, record_id, action, sealed, applied_at
           FROM automation_outbox WHERE connection_id = $1 AND batch_key = $2`,
          [connectionId, batchKey],
        );
        return rows.map((row) => changeOf(row, same));
      }),
    leftoverChanges: (connectionId, before, limit) =>
      run(async () => {
        const { rows } = await pool.query<ChangeRow<Date>>(
          `SELECT connection_id, batch_key, resource, record_id, action, sealed, applied_at
           FROM automation_outbox WHERE connection_id = $1 AND applied_at < $2
           ORDER BY applied_at LIMIT $3`,
          [connectionId, before, limit],
        );
        return rows.map((row) => changeOf(row, same));
      }),
    dropChanges: (connectionId, batchKey, records) =>
      run(async () => {
        if (records.length === 0) return;
        await pool.query(
          `DELETE FROM automation_outbox
           WHERE connection_id = $1 AND batch_key = $2
             AND (resource, record_id) IN (SELECT * FROM unnest($3::text[], $4::text[]))`,
          [connectionId, batchKey, records.map((r) => r.resource), records.map((r) => r.recordId)],
        );
      }),
    // The store's clock, not this machine's: receivers and drains on other machines agree.
    watch: (connectionId, destination, forMs) =>
      run(async () => {
        await pool.query(
          `INSERT INTO drain_watches (connection_id, destination, until)
           VALUES ($1, $2, now() + make_interval(secs => $3::float8 / 1000))
           ON CONFLICT (connection_id) DO UPDATE SET
             destination = EXCLUDED.destination, until = EXCLUDED.until`,
          [connectionId, destination, Math.max(0, forMs)],
        );
      }),
    watching: (connectionId) =>
      run(async () => {
        const { rows } = await pool.query<{ destination: string; ms_left: number }>(
          `SELECT destination, (extract(epoch FROM until - now()) * 1000)::float8 AS ms_left
           FROM drain_watches WHERE connection_id = $1`,
          [connectionId],
        );
        const row = rows[0];
        return row && row.ms_left > 0
          ? { destination: row.destination, msLeft: row.ms_left }
          : null;
      }),
    close: async () => {
      if (!pool.ended) await pool.end();
    },
  };
}
