import type { MirrorRecord, Resource } from './record.js';
import type { TableSpec } from './tables.js';

/**
 * Where mirrored records go. Every write is an upsert keyed by the service's id (DESIGN
 * decision 4), so a retried or repeated batch is harmless.
 */
export interface Destination {
  describe(): DestinationDescription;
  readonly capabilities: DestinationCapabilities;
  /**
   * Creates the tables that are missing and adds the columns a table lacks (additive only:
   * nothing is dropped or retyped). Safe to call from many workers at once.
   */
  ensureSchema(tables: readonly TableSpec[]): Promise<SchemaChanges>;
  /**
   * Makes the table of one resource exist, as ensureSchema does, answering from what this
   * handle knows when it can (cheap enough for every batch): true when the table had to be
   * created now or given a column, i.e. its rows lack what the ledger's hashes describe (its
   * file or table was removed, or a column dropped by hand, since it was last ensured).
   * Destinations without tables answer false.
   */
  ensureTable(resource: Resource): Promise<boolean>;
  /**
   * Writes one batch (at most `capabilities.maxBatchSize` records) in one transaction: all
   * rows or none. A row marked deleted and written again is live again. Records with the
   * same id in one batch: the last one counts.
   */
  upsert(resource: Resource, records: readonly MirrorRecord[], at?: Date): Promise<UpsertResult>;
  /**
   * Sets `deleted_at` on these rows (rows already marked keep their time): says how many it
   * marked, and which records a CRM answered for one by one and would not delete. A database
   * counts the rows whose mark is `at` after the call, so a call repeated with the same `at` (a
   * retried attempt that the first one's marks preceded) counts them again; CRMs keep no mark
   * time and count what they deleted or archived in this call.
   */
  markDeleted(resource: Resource, ids: readonly string[], at?: Date): Promise<DeletionResult>;
  close(): Promise<void>;
}

export interface DestinationDescription {
  readonly kind: 'sqlite' | 'postgres' | 'hubspot' | 'pipedrive' | 'salesforce';
  /**
   * Names the destination in ledger keys: stable, and free of credentials
   * (`sqlite:/abs/path/mirror.db`, `postgres://host:5432/db` or `…/db?schema=name`).
   */
  readonly id: string;
  /** For people: where the rows are. */
  readonly label: string;
}

export interface DestinationCapabilities {
  /** Records per upsert call. */
  readonly maxBatchSize: number;
  /** A batch is applied whole or not at all. */
  readonly atomicBatches: boolean;
  /** upsert() tells inserted, updated and unchanged rows apart. */
  readonly countsChanges: boolean;
  /**
   * Batches a pass may have in upsert() at once (default 1). More than one only where the
   * destination's own work runs elsewhere and batches sharing no record cannot deadlock.
   */
  readonly concurrentBatches?: number;
}

export interface SchemaChanges {
  readonly createdTables: readonly string[];
  /** `table.column` of each column added to an existing table. */
  readonly addedColumns: readonly string[];
}

export interface UpsertResult {
  readonly inserted: number;
  /** Rows whose content changed (a deleted row written again counts here). */
  readonly updated: number;
  /** Rows that already held exactly this record: not written. */
  readonly unchanged: number;
  /** The destination's key of each record, in the order given (the id, for databases). */
  readonly keys: readonly string[];
  /**
   * Records a CRM answered for one by one and refused (a duplicate rule, a value it will not
   * take), or that the mapping left nothing to write for (NOTHING_TO_WRITE), by index in the
   * batch. They are not written and not retried in this pass: the
   * mirror counts them, says why, and tries them again in the next pass. `partial` marks a
   * record that was written but not all of it (an Opportunity whose Contact was refused).
   */
  readonly refused?: readonly RecordRefusal[];
  /**
   * Records the destination has no place for (a CRM holds leads and events only: bookings and
   * appointments), so none of them was written, nor refused. Absent: none.
   */
  readonly passedOver?: number;
  /**
   * Records a CRM wrote that hold no email address (none given, or text that is no address:
   * `n/a`, a phone number): no contact or person is linked to their deal, and a Salesforce Lead
   * has no Email. Written, not refused: a retry could not change it, so the pass stays
   * complete and says how many. Absent: none.
   */
  readonly withoutEmail?: number;
}

/** Why a CRM refused one record: the vendor's error code and its text. */
export interface RefusalReason {
  /** The vendor's error code, e.g. DUPLICATES_DETECTED. */
  readonly code: string;
  readonly message: string;
}

/** What one markDeleted call did. */
export interface DeletionResult {
  /** Rows (or CRM records) marked deleted by this call. */
  readonly marked: number;
  /**
   * Records a CRM refused to delete (a record locked, a permission it lacks), by their
   * mirror id. They are still live there: the mirror says which and why, and leaves them live
   * in the ledger so that the next full pass tries again. Absent: none.
   */
  readonly refused?: readonly DeletionRefusal[];
}

export interface DeletionRefusal extends RefusalReason {
  /** The record's id in the service (the mirror's id, not the CRM's). */
  readonly id: string;
}

export interface RecordRefusal extends RefusalReason {
  readonly index: number;
  readonly partial?: boolean;
}
