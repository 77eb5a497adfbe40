/**
 * The webhook inbox (DESIGN decision 3): a delivery's notice is stored here before the
 * receiver answers 2xx, and a connection's drain takes notices from here in batches. A notice
 * says only that a record changed: connection, delivery id, record type and id, action, when.
 * No record data.
 *
 * Beside it, the changes owed to automation endpoints: the record as a drain wrote it, sealed
 * by the caller, kept until the endpoints took it, so that neither the drain's nor the
 * forwarding activity's Temporal history carries it.
 */

/** A verified delivery's notice, as the receiver stores it. */
export interface Notice {
  readonly connectionId: string;
  /** The sender's delivery id: unique per connection, the dedupe key. */
  readonly deliveryId: string;
  /** The mirrored table (`leads`, `lead_bookings`, …). */
  readonly resource: string;
  readonly recordId: string;
  readonly action: string;
  /** When the sender says the change happened, as it wrote it; null when it did not say. */
  readonly occurredAt: string | null;
}

/** `stored`: a new notice; `duplicate`: its delivery id was stored before (nothing changed). */
export type Acceptance = 'stored' | 'duplicate';

/** A notice not yet applied, with its place in arrival order. */
export interface PendingNotice extends Notice {
  readonly seq: number;
  readonly receivedAt: Date;
}

/** One connection's inbox, for the status. */
export interface InboxStats {
  readonly connectionId: string;
  /** Notices stored and not applied yet. */
  readonly pending: number;
  /** When the oldest of them was stored; null when none is pending. */
  readonly oldestPendingAt: Date | null;
  /** Notices applied in the last `windowMs` before `at`. */
  readonly drained: number;
}

/** A change a drain applied that automation endpoints want. */
export interface OwedChange {
  readonly connectionId: string;
  /** Names the drain batch that applied it: the same on every retry of that batch. */
  readonly batchKey: string;
  readonly resource: string;
  readonly recordId: string;
  readonly action: 'written' | 'deleted';
  /** The record as written, sealed by the caller (the store never sees it in the clear). */
  readonly sealed: Buffer;
  readonly appliedAt: Date;
}

export interface Inbox {
  /** Where it lives, without credentials (as `Ledger.location`). */
  readonly location: string;

  /**
   * Stores a notice; resolves once it is committed (durable: an fsync in SQLite, a commit in
   * Postgres). Calls that arrive together share one transaction (group commit). A delivery id
   * the connection stored before resolves `duplicate` and stores nothing.
   */
  accept(notice: Notice): Promise<Acceptance>;

  /** Notices accepted since open and the commits they took: group commit at work. */
  acceptedSoFar(): { readonly notices: number; readonly commits: number };

  /** Up to `limit` pending notices of a connection, oldest first. */
  pending(connectionId: string, limit: number): Promise<PendingNotice[]>;

  /**
   * Up to `limit` pending notices of these records, whatever their age, oldest first: a batch
   * that reads a record applies every notice of it stored before the read, not only those
   * among the oldest `EBSYNC_WEBHOOK_BATCH`.
   */
  pendingOf(
    connectionId: string,
    records: readonly { resource: string; recordId: string }[],
    limit: number,
  ): Promise<{ seq: number; resource: string; recordId: string }[]>;

  /** Marks these notices applied; returns how many were still pending. */
  markDone(connectionId: string, seqs: readonly number[], at?: Date): Promise<number>;

  /** Connections with notices pending (a drain to wake after a crash). */
  pendingConnections(): Promise<string[]>;

  /** Every connection with pending notices or notices applied in the window before `at`. */
  stats(windowMs: number, at?: Date): Promise<InboxStats[]>;

  /**
   * Deletes applied notices older than `before` (their delivery ids then dedupe no more) and
   * owed changes applied before it (their endpoints gave up long ago); at most `limit` rows
   * of each, so a long backlog of them is taken in parts. Returns how many went.
   */
  prune(before: Date, limit: number): Promise<number>;

  /** Keeps changes for their endpoints; a change kept before under the same key is replaced. */
  keepChanges(changes: readonly OwedChange[]): Promise<void>;

  /** The changes a batch still owes, in no particular order. */
  owedChanges(connectionId: string, batchKey: string): Promise<OwedChange[]>;

  /**
   * A connection's changes kept before `before`, oldest first, at most `limit`: those of
   * batches whose forwarding an earlier run of the drain left when it continued as new.
   */
  leftoverChanges(connectionId: string, before: Date, limit: number): Promise<OwedChange[]>;

  /** Drops changes every endpoint has taken (or refused for good). */
  dropChanges(
    connectionId: string,
    batchKey: string,
    records: readonly { resource: string; recordId: string }[],
  ): Promise<void>;

  /**
   * A drain promises to look at the connection's inbox on its own for the next `forMs`
   * (by the store's clock), writing to `destination`; 0 ends the promise. While it holds,
   * receivers send no wake-ups (DESIGN decision 3).
   */
  watch(connectionId: string, destination: string, forMs: number): Promise<void>;

  /** The drain's promise for a connection, if one holds: its destination and ms left. */
  watching(connectionId: string): Promise<DrainWatch | null>;

  close(): Promise<void>;
}

export interface DrainWatch {
  readonly destination: string;
  readonly msLeft: number;
}
