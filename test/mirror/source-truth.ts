import Database from 'better-sqlite3';
import { expect } from 'vitest';
import type { Sandbox } from '../../sandbox/server.js';
import type { MirrorSummary } from '../../workflows/mirror-types.js';
import { queryDatabase } from '../helpers/postgres.js';

/** The sandbox's own live rows of a type: what a complete mirror must hold. */
export function sourceIds(sb: Sandbox, type: string, extra = ''): Set<string> {
  const rows = sb.ctx.db
    .prepare(
      `SELECT id FROM records WHERE type = ? AND business_id = ? AND deleted_at IS NULL ${extra}`,
    )
    .all(type, sb.businessId) as { id: number }[];
  return new Set(rows.map((r) => String(r.id)));
}

/** The API requests the sandbox saw since its counters were reset, by status (admin left out). */
export function apiRequests(sb: Sandbox): { total: number; byStatus: Record<string, number> } {
  const byStatus: Record<string, number> = {};
  for (const [operation, statuses] of Object.entries(sb.admin.counters().requests)) {
    if (operation.includes('/admin/')) continue;
    for (const [status, count] of Object.entries(statuses)) {
      byStatus[status] = (byStatus[status] ?? 0) + count;
    }
  }
  return { total: Object.values(byStatus).reduce((n, c) => n + c, 0), byStatus };
}

/**
 * The tables a complete pass fills with every live source record (leads may have reported
 * gaps): table, the sandbox's record type, and which of those count (bookings of live events).
 */
export const COMPLETE_TABLES = [
  ['events', 'event', ''],
  ['lead_bookings', 'lead_booking', ''],
  [
    'event_bookings',
    'event_booking',
    `AND parent_id IN (SELECT id FROM records WHERE type = 'event' AND deleted_at IS NULL)`,
  ],
  ['appointments', 'appointment', ''],
] as const;

/**
 * Ids of a mirror table's rows not marked deleted (or only those marked, with `deleted`),
 * duplicates kept (a key must hold once).
 */
export async function destinationIds(
  target: string,
  table: string,
  options: { deleted?: boolean } = {},
): Promise<string[]> {
  const sql = `SELECT id FROM ${table} WHERE deleted_at IS ${options.deleted ? 'NOT ' : ''}NULL`;
  if (target.startsWith('sqlite:')) {
    const db = new Database(target.slice('sqlite:'.length), { readonly: true });
    try {
      return (db.prepare(sql).all() as { id: unknown }[]).map((r) => String(r.id));
    } finally {
      db.close();
    }
  }
  return (await queryDatabase<{ id: unknown }>(target, sql)).map((r) => String(r.id));
}

/**
 * Destination = source: every live event, event booking, lead booking and appointment once;
 * leads mirrored once each, and mirrored + reported unreachable = the service's total.
 */
export async function expectMirrorOfSource(
  sb: Sandbox,
  target: string,
  summary: MirrorSummary,
): Promise<void> {
  expect(summary.phase).toBe('done');
  for (const [table, type, extra] of COMPLETE_TABLES) {
    const rows = await destinationIds(target, table);
    expect(rows.length, `${table} duplicated`).toBe(new Set(rows).size);
    expect(new Set(rows), table).toEqual(sourceIds(sb, type, extra));
  }
  const leads = await destinationIds(target, 'leads');
  const live = sourceIds(sb, 'lead');
  expect(leads.length, 'leads duplicated').toBe(new Set(leads).size);
  expect(leads.filter((id) => !live.has(id))).toEqual([]);
  expect(leads.length + summary.counts.unreachable).toBe(live.size);
}
