import {
  REFUSED_HASH,
  type Classified,
  type Fingerprint,
  type LedgerEntry,
  type PassStatus,
  type WrittenEntry,
} from './ledger.js';

/** A `ledger_entries` row as an engine returns it; T is how it returns times. */
export interface EntryRow<T> {
  source_id: string;
  destination_key: string;
  content_hash: string;
  seen_generation: number;
  first_seen_at: T;
  last_seen_at: T;
  deleted_at: T | null;
  forwarded_hash: string | null;
}

export const ENTRY_COLUMNS =
  'source_id, destination_key, content_hash, seen_generation, first_seen_at, last_seen_at, deleted_at, forwarded_hash';

export function entryOf<T>(row: EntryRow<T>, date: (value: T) => Date): LedgerEntry {
  return {
    id: row.source_id,
    destinationKey: row.destination_key,
    hash: row.content_hash,
    generation: row.seen_generation,
    firstSeenAt: date(row.first_seen_at),
    lastSeenAt: date(row.last_seen_at),
    deletedAt: row.deleted_at === null ? null : date(row.deleted_at),
    forwardedHash: row.forwarded_hash,
  };
}

/** Answers in the order of the items, from the stored rows found for them. */
export function classifyAgainst(
  items: readonly Fingerprint[],
  rows: readonly EntryRow<unknown>[],
): Classified[] {
  const stored = new Map(rows.map((r) => [r.source_id, r]));
  return items.map(({ id, hash }) => {
    const row = stored.get(id);
    if (!row) return { id, state: 'new', destinationKey: null, seenGeneration: null };
    const state = row.content_hash === hash && row.deleted_at === null ? 'unchanged' : 'changed';
    return {
      id,
      state,
      destinationKey: row.destination_key,
      seenGeneration: row.seen_generation,
      ...(row.content_hash === REFUSED_HASH ? { refused: true as const } : {}),
    };
  });
}

/**
 * One entry per id (the last given wins), sorted by id: writers that touch rows in the same
 * order cannot deadlock each other.
 */
export function latestById<E extends Fingerprint = WrittenEntry>(entries: readonly E[]): E[] {
  const byId = new Map<string, E>();
  for (const entry of entries) byId.set(entry.id, entry);
  return [...byId.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

export function sortedUnique(ids: readonly string[]): string[] {
  return [...new Set(ids)].sort();
}

/** A `passes` row as an engine returns it; T is how it returns times. */
export interface StoredPass<T> {
  open_generation: number | null;
  open_started_at: T | null;
  completed_generation: number | null;
  completed_started_at: T | null;
  completed_at: T | null;
}

export const PASS_COLUMNS =
  'open_generation, open_started_at, completed_generation, completed_started_at, completed_at';

/** A `passes` row with its times as dates. */
export interface PassRow {
  readonly openGeneration: number | null;
  readonly openStartedAt: Date | null;
  readonly completedGeneration: number | null;
  readonly completedStartedAt: Date | null;
  readonly completedAt: Date | null;
}

export function passRowOf<T>(
  row: StoredPass<T> | undefined,
  date: (value: T) => Date,
): PassRow | undefined {
  const orNull = (value: T | null) => (value === null ? null : date(value));
  return (
    row && {
      openGeneration: row.open_generation,
      openStartedAt: orNull(row.open_started_at),
      completedGeneration: row.completed_generation,
      completedStartedAt: orNull(row.completed_started_at),
      completedAt: orNull(row.completed_at),
    }
  );
}

export function openPassOf(row: PassRow | undefined): PassStatus['open'] {
  return row?.openGeneration != null && row.openStartedAt != null
    ? { generation: row.openGeneration, startedAt: row.openStartedAt }
    : null;
}

export function passStatusOf(row: PassRow | undefined): PassStatus {
  return {
    open: openPassOf(row),
    lastCompleted:
      row?.completedGeneration != null && row.completedStartedAt != null && row.completedAt != null
        ? {
            generation: row.completedGeneration,
            startedAt: row.completedStartedAt,
            completedAt: row.completedAt,
          }
        : null,
  };
}
