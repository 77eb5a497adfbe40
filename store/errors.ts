import { databaseMessage, isTransientDatabaseError } from '../config/database-errors.js';

/**
 * Failures of the ledger. `retryable` says whether the same call may succeed later unchanged
 * (the database is restarting, a lock is held); the others need a change or a person.
 */
export abstract class StoreError extends Error {
  abstract readonly retryable: boolean;
}

/** The database cannot be reached or is busy right now. */
export class StoreUnavailableError extends StoreError {
  override readonly name = 'StoreUnavailableError';
  readonly retryable = true;
}

/** The database refused the statement for good (permissions, a corrupt file, ...). */
export class StoreFailedError extends StoreError {
  override readonly name = 'StoreFailedError';
  readonly retryable = false;
}

/** The store's schema is newer than this ebsync, or a migration failed. */
export class StoreMigrationError extends StoreError {
  override readonly name = 'StoreMigrationError';
  readonly retryable = false;
}

/** A location that is neither a file path, `sqlite:PATH`, nor a postgres:// URL. */
export class StoreLocationError extends StoreError {
  override readonly name = 'StoreLocationError';
  readonly retryable = false;
}

/**
 * A destination another connection already writes to (Ledger.claimDestination): its rows are
 * keyed by the service's ids alone, so this connection's records would overwrite the other's.
 * A person must choose another destination, or forget the other connection's mirror there.
 */
export class DestinationClaimedError extends StoreError {
  override readonly name = 'DestinationClaimedError';
  readonly retryable = false;
  /**
   * `target` is the `--to` naming the destination (no credentials: forgetting opens none).
   * `outcome` says what did not happen: a command refusing up front started nothing rather
   * than wrote nothing, and says so in the same place, once.
   */
  constructor(
    readonly target: string,
    readonly connectionId: string,
    readonly writers: readonly string[],
    outcome = 'nothing was written',
  ) {
    const them =
      writers.length === 1 ? `connection ${writers[0]}` : `connections ${writers.join(', ')}`;
    const forget = writers
      .map((w) => `'ebsync sync --forget --connection ${w} --to ${target}'`)
      .join(' and ');
    super(
      `destination ${target} already holds the records of ${them}, keyed by the service's ids alone, so ` +
        `connection ${connectionId}'s would overwrite them; ${outcome}. Mirror ` +
        `${connectionId} into a destination of its own (--to: another SQLite file, or a Postgres ` +
        `?schema=NAME), or, if ${them}'s records are no longer wanted there, run ${forget} first`,
    );
  }
}

/**
 * The pass a caller works for is no longer the open one: another worker restarted or
 * completed it. The caller stops; its work is not lost (the ledger entries stand).
 */
export class PassSupersededError extends StoreError {
  override readonly name = 'PassSupersededError';
  readonly retryable = false;
}

/**
 * Another save of the same checkpoint came between this caller's read and its save (a retry
 * racing the attempt it replaced). Retrying reads the newer checkpoint and goes on from it.
 */
export class CheckpointConflictError extends StoreError {
  override readonly name = 'CheckpointConflictError';
  readonly retryable = true;
}

/**
 * `store` is where the worker looked (no credentials): a worker whose EBSYNC_STORE_URL differs
 * from the one the pass began in meets this on every step, and only the store names the cause.
 */
export function passSuperseded(
  key: { connectionId: string; pass: string },
  generation: number,
  store: string,
): PassSupersededError {
  return new PassSupersededError(
    `pass ${key.pass} generation ${generation} of connection ${key.connectionId} is no longer the open pass in the store ${store}: ` +
      `a newer pass of this mirror began, or this worker's EBSYNC_STORE_URL is not the store the pass began in (every worker of a task queue must share one)`,
  );
}

export function checkpointConflict(
  key: { connectionId: string; pass: string },
  partition: string,
  expected: number,
  found: number,
): CheckpointConflictError {
  return new CheckpointConflictError(
    `checkpoint '${partition}' of pass ${key.pass} of connection ${key.connectionId} is at version ${found}, not ${expected}: another save came first`,
  );
}

/** Any failure of a ledger call as one of the typed errors above. */
export function toStoreError(engine: 'SQLite' | 'Postgres', error: unknown): StoreError {
  if (error instanceof StoreError) return error;
  const message = `the ${engine} store failed: ${databaseMessage(error)}`;
  return isTransientDatabaseError(error)
    ? new StoreUnavailableError(message, { cause: error })
    : new StoreFailedError(message, { cause: error });
}

/** Runs a synchronous store call (better-sqlite3) as a promise that rejects with a typed error. */
export function sqliteCall<T>(body: () => T): Promise<T> {
  try {
    return Promise.resolve(body());
  } catch (error) {
    return Promise.reject(toStoreError('SQLite', error));
  }
}

/** Runs a Postgres store call, its failure as a typed error. */
export async function postgresCall<T>(body: () => Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (error) {
    throw toStoreError('Postgres', error);
  }
}
