import type { InboxStats, OwedChange, PendingNotice } from './inbox.js';

/** A `webhook_inbox` row as an engine returns it; T is how it returns times. */
export interface NoticeRow<T> {
  seq: number;
  connection_id: string;
  delivery_id: string;
  resource: string;
  record_id: string;
  action: string;
  occurred_at: string | null;
  received_at: T;
}

/** An `automation_outbox` row as an engine returns it. */
export interface ChangeRow<T> {
  connection_id: string;
  batch_key: string;
  resource: string;
  record_id: string;
  action: 'written' | 'deleted';
  sealed: Buffer;
  applied_at: T;
}

export const noticeOf = <T>(row: NoticeRow<T>, date: (value: T) => Date): PendingNotice => ({
  // Postgres returns bigint as text.
  seq: Number(row.seq),
  connectionId: row.connection_id,
  deliveryId: row.delivery_id,
  resource: row.resource,
  recordId: row.record_id,
  action: row.action,
  occurredAt: row.occurred_at,
  receivedAt: date(row.received_at),
});

export const changeOf = <T>(row: ChangeRow<T>, date: (value: T) => Date): OwedChange => ({
  connectionId: row.connection_id,
  batchKey: row.batch_key,
  resource: row.resource,
  recordId: row.record_id,
  action: row.action,
  sealed: Buffer.from(row.sealed),
  appliedAt: date(row.applied_at),
});

/** Each connection's pending count and oldest notice, and how many it applied lately. */
export function statsOf(
  pending: readonly { connectionId: string; pending: number; oldest: Date }[],
  drained: readonly { connectionId: string; drained: number }[],
): InboxStats[] {
  const byConnection = new Map<string, InboxStats>();
  for (const row of pending) {
    byConnection.set(row.connectionId, {
      connectionId: row.connectionId,
      pending: row.pending,
      oldestPendingAt: row.oldest,
      drained: 0,
    });
  }
  for (const row of drained) {
    const known = byConnection.get(row.connectionId);
    byConnection.set(row.connectionId, {
      connectionId: row.connectionId,
      pending: known?.pending ?? 0,
      oldestPendingAt: known?.oldestPendingAt ?? null,
      drained: row.drained,
    });
  }
  return [...byConnection.values()].sort((a, b) => a.connectionId.localeCompare(b.connectionId));
}
