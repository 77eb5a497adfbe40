/**
 * The ledger: what ebsync has written where. One entry per (connection, destination,
 * resource, source id) holds the destination's key for the record, the hash of the
 * canonical record last written, the generation of the last pass that saw it, when it was
 * first and last seen, and when it was found deleted. Passes get a generation number and
 * checkpoints (JSON cursors) so an interrupted pass resumes where it stopped.
 *
 * Every operation takes a page of records at a time, and is safe to repeat (activities are
 * retried) and to run from many workers at once (the Postgres ledger is shared by them).
 */

/** A checkpoint: any JSON the pass needs to resume (page numbers, date windows, ...). */
export type JsonValue =
  string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** Which records: one connection's one resource in one destination. */
export interface LedgerScope {
  readonly connectionId: string;
  /** The destination's stable id (`Destination.describe().id`). */
  readonly destination: string;
  readonly resource: string;
}

/** A pass over some resources of one connection into one destination. */
export interface PassKey {
  readonly connectionId: string;
  readonly destination: string;
  /** Names the pass, e.g. the resource set `leads` or `all`, and the mode. */
  readonly pass: string;
}

export interface Fingerprint {
  readonly id: string;
  /** Hash of the canonical record. */
  readonly hash: string;
}

/**
 * `new`: the ledger has no entry; `changed`: its hash differs, or it was marked deleted and
 * is back; `unchanged`: the destination already holds exactly this content.
 */
export type EntryState = 'new' | 'changed' | 'unchanged';

export interface Classified {
  readonly id: string;
  readonly state: EntryState;
  /** The destination's key from the last write (CRMs need it to update); null when new. */
  readonly destinationKey: string | null;
  /** Generation of the last pass (or write) that saw the record; null when new. */
  readonly seenGeneration: number | null;
  /** Set when the destination refused the record's last write (REFUSED_HASH). */
  readonly refused?: true;
}

/**
 * The hash the ledger keeps for a record the destination refused: no record hashes to it, so
 * the next pass writes it again.
 */
export const REFUSED_HASH = 'refused';

export interface WrittenEntry {
  readonly id: string;
  readonly hash: string;
  readonly destinationKey: string;
}

export interface LedgerEntry {
  readonly id: string;
  readonly destinationKey: string;
  readonly hash: string;
  /** Generation of the last pass (or write) that saw the record. */
  readonly generation: number;
  readonly firstSeenAt: Date;
  readonly lastSeenAt: Date;
  readonly deletedAt: Date | null;
  /**
   * What automation endpoints were last sent of the record: the hash of the record sent as
   * written, FORWARDED_DELETED once its deletion was sent, null when nothing was (or nobody
   * wanted it). Kept apart from `hash`, which says what the destination holds: a pass may
   * write a change before the drain applies its notice, and the endpoints are owed it still.
   */
  readonly forwardedHash: string | null;
}

export interface PassState {
  readonly generation: number;
  readonly startedAt: Date;
  /** True when an open pass was picked up again rather than started. */
  readonly resumed: boolean;
  /** Checkpoints saved by the pass so far, by partition ('' when the pass has one). */
  readonly checkpoints: Readonly<Record<string, JsonValue>>;
}

export interface SavedCheckpoint {
  readonly checkpoint: JsonValue;
  /** Counts the saves of this partition's checkpoint in its pass: 1, 2, ... */
  readonly version: number;
}

export interface PassStatus {
  /** The open pass, if one is under way (or was interrupted). */
  readonly open: { readonly generation: number; readonly startedAt: Date } | null;
  readonly lastCompleted: {
    readonly generation: number;
    readonly startedAt: Date;
    readonly completedAt: Date;
  } | null;
}

export interface LedgerCounts {
  /** Entries not marked deleted. */
  readonly live: number;
  readonly deleted: number;
}

/**
 * The hash forgetHashes leaves: no sha256 hex is this, so every record compares changed.
 */
export const FORGOTTEN_HASH = 'forgotten';

/** The forwarded hash of a record whose deletion endpoints were sent: no sha256 hex is this. */
export const FORWARDED_DELETED = 'deleted';

export interface Ledger {
  /** Where it lives, without credentials: `sqlite:/path/store.db` or `postgres://host:port/db`. */
  readonly location: string;

  /** One answer per item, in the order given. Ids repeated in `items` are answered each time. */
  classify(scope: LedgerScope, items: readonly Fingerprint[]): Promise<Classified[]>;

  /**
   * Records writes to the destination: hash, destination key, seen in `generation` at `at`.
   * Creates entries (first seen = `at`) or updates them, and clears a deletion mark.
   */
  recordWritten(
    scope: LedgerScope,
    generation: number,
    entries: readonly WrittenEntry[],
    at?: Date,
  ): Promise<void>;

  /** Marks entries seen in `generation` without a write; returns how many entries exist. */
  markSeen(
    scope: LedgerScope,
    generation: number,
    ids: readonly string[],
    at?: Date,
  ): Promise<number>;

  /**
   * Live entries whose last sighting is older than `generation`, ordered by id, `limit` at a
   * time after the id `after` (keyset paging: pass the last id of the previous page).
   */
  listUnseen(
    scope: LedgerScope,
    generation: number,
    page: { readonly after?: string; readonly limit: number },
  ): Promise<LedgerEntry[]>;

  /** Marks entries deleted (those already marked keep their first mark); returns how many changed. */
  markDeleted(scope: LedgerScope, ids: readonly string[], at?: Date): Promise<number>;

  /**
   * Makes every entry of the scope look changed, so that the next write of each record
   * happens: for a destination table that was made anew (its file or table removed), whose
   * rows the hashes no longer describe. Seen marks, deletion marks and destination keys stay,
   * so a pass's counts hold. Returns how many entries it touched.
   */
  forgetHashes(scope: LedgerScope): Promise<number>;

  /**
   * Records what automation endpoints were sent of these entries (LedgerEntry.forwardedHash;
   * FORWARDED_DELETED for a deletion). Entries that do not exist are passed over. Touches
   * nothing else: the destination's hash, seen and deletion marks stay.
   */
  markForwarded(scope: LedgerScope, entries: readonly Fingerprint[]): Promise<void>;

  /** The entries of these ids that exist, in no particular order. */
  get(scope: LedgerScope, ids: readonly string[]): Promise<LedgerEntry[]>;

  counts(scope: LedgerScope): Promise<LedgerCounts>;

  /** Live entries seen in `generation` or later: the distinct records a pass reached. */
  countSeen(scope: LedgerScope, generation: number): Promise<number>;

  /**
   * Of those, the entries whose hash was forgotten after they were seen and not written since:
   * records a pass wrote into a table made anew later in the pass (its file or table
   * removed), which the new table lacks and the pass, reading each record once, did not write
   * again.
   */
  countForgottenSeen(scope: LedgerScope, generation: number): Promise<number>;

  /**
   * The lowest and highest numeric id among live entries seen in `generation` or later (ids
   * that are not whole numbers left out); null when there are none. Where a pass probes the
   * ids between those its lists returned.
   */
  seenIdRange(
    scope: LedgerScope,
    generation: number,
  ): Promise<{ readonly min: number; readonly max: number } | null>;

  /**
   * Starts a pass, or resumes the open one of this key with its checkpoints. A new pass gets
   * the next generation of its (connection, destination); `restart` abandons an open pass.
   */
  beginPass(
    key: PassKey,
    options?: { readonly restart?: boolean; readonly at?: Date },
  ): Promise<PassState>;

  /**
   * Saves a partition's cursor of the open pass `generation` and returns its new version (1
   * for the first save). Throws PassSupersededError when that pass is no longer the open one
   * (restarted or completed by someone else). With `replaces`, the save happens only over
   * that version (what the caller read; 0: none saved yet), else CheckpointConflictError:
   * two workers that read the same cursor never both write theirs.
   */
  saveCheckpoint(
    key: PassKey,
    generation: number,
    checkpoint: JsonValue,
    partition?: string,
    options?: { readonly replaces?: number },
  ): Promise<number>;

  /** The open pass's checkpoints, or undefined when no pass is open. */
  readCheckpoints(key: PassKey): Promise<PassState | undefined>;

  /** One partition's checkpoint of the open pass `generation`, with its version. */
  readCheckpoint(
    key: PassKey,
    generation: number,
    partition?: string,
  ): Promise<SavedCheckpoint | undefined>;

  /** Drops checkpoints of the open pass: one partition, or all of them. */
  clearCheckpoints(key: PassKey, partition?: string): Promise<void>;

  /**
   * Completes the open pass `generation` (its checkpoints go). Repeating it is harmless;
   * PassSupersededError when another pass took its place.
   */
  completePass(key: PassKey, generation: number, at?: Date): Promise<void>;

  passStatus(key: PassKey): Promise<PassStatus>;

  /**
   * Records `connectionId` as a writer of `destination` unless another connection already is
   * one, and returns those others (sorted; empty when this one may write). The mirror's tables
   * and a CRM's objects are keyed by the service's ids alone, so a second business's records
   * would overwrite the first's without a word: a destination has one writer. Atomic, so two
   * connections claiming at once never both get it.
   */
  claimDestination(destination: string, connectionId: string): Promise<string[]>;

  /** The connections recorded as writers of `destination`, sorted; claims nothing. */
  destinationWriters(destination: string): Promise<string[]>;

  /**
   * Forgets everything the ledger holds of one connection in one destination: its entries,
   * passes, checkpoints and its claim, so that another connection may write there. The
   * destination's rows stay. Says how many entries went, and whether it held anything of
   * the two at all (a claim or a pass without entries is something).
   */
  forgetDestination(
    destination: string,
    connectionId: string,
  ): Promise<{ entries: number; held: boolean }>;

  /**
   * Takes the connection's next request slot, `intervalMs` after the one before it, and
   * returns how long to wait for it (0: now). Every worker sharing the store draws from the
   * same row, so together they send no faster than one request per interval
   * (docs/rate-limits.md). Postgres reckons time by its own clock, so workers on machines
   * whose clocks differ still space their requests.
   */
  reserveRequest(connectionId: string, intervalMs: number): Promise<number>;

  /** No slot of the connection begins sooner than `delayMs` from now (a Retry-After). */
  holdRequests(connectionId: string, delayMs: number): Promise<void>;

  close(): Promise<void>;
}
