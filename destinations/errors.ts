import { databaseMessage, isTransientDatabaseError } from '../config/database-errors.js';
import type { UpsertResult } from './destination.js';

/**
 * Failures of a destination. `retryable` says whether the same call may succeed later
 * unchanged (a lost connection, a lock held by another writer); the others need a change.
 */
export abstract class DestinationError extends Error {
  abstract readonly retryable: boolean;
}

/** A record that does not fit its table: a value of the wrong type, an unknown column. */
export class DestinationRecordError extends DestinationError {
  override readonly name = 'DestinationRecordError';
  readonly retryable = false;
}

/** An existing table whose column has another type than ebsync's: a person must decide. */
export class DestinationSchemaError extends DestinationError {
  override readonly name = 'DestinationSchemaError';
  readonly retryable = false;
}

/** A destination named in a form ebsync does not know (`--to`). */
export class DestinationTargetError extends DestinationError {
  override readonly name = 'DestinationTargetError';
  readonly retryable = false;
}

/** The database could not take the write now: connection lost, busy, deadlock. */
export class DestinationUnavailableError extends DestinationError {
  override readonly name = 'DestinationUnavailableError';
  readonly retryable = true;
}

/** Any other database failure: retrying the same batch would fail the same way. */
export class DestinationWriteError extends DestinationError {
  override readonly name = 'DestinationWriteError';
  readonly retryable = false;
}

/** Any failure of a database destination as one of the typed errors above. */
export function toDestinationError(
  engine: 'SQLite' | 'Postgres',
  error: unknown,
): DestinationError {
  if (error instanceof DestinationError) return error;
  const message = `the ${engine} destination failed: ${databaseMessage(error)}`;
  return isTransientDatabaseError(error)
    ? new DestinationUnavailableError(message, { cause: error })
    : new DestinationWriteError(message, { cause: error });
}

/**
 * A CRM turned the call away under its short rate window (HubSpot TEN_SECONDLY_ROLLING,
 * Pipedrive's 2-second window): the same call succeeds after `retryAfterMs`, which the
 * activity passes on to Temporal as the next retry's delay.
 */
export class DestinationRateLimitedError extends DestinationError {
  override readonly name = 'DestinationRateLimitedError';
  readonly retryable = true;
  constructor(
    message: string,
    readonly retryAfterMs: number,
  ) {
    super(message);
  }
}

/**
 * What an upsert wrote of its batch before the destination paused: the records at `indexes`
 * (positions in the batch, ascending), as `result` says of them (its keys and refusals by position in
 * `indexes`). The ledger records them as any written batch, so the next pass neither counts
 * them missing nor looks them up to write them again.
 */
export interface PausedPart {
  readonly indexes: readonly number[];
  readonly result: UpsertResult;
}

/**
 * A CRM's quota for the day (or the org's API allowance) is spent: no call can succeed before
 * `resumeAt`, so the mirror pass stops cleanly instead of retrying into the same wall.
 */
export class DestinationPausedError extends DestinationError {
  override readonly name = 'DestinationPausedError';
  readonly retryable = false;
  constructor(
    message: string,
    /** ISO 8601 instant from which calls are taken again. */
    readonly resumeAt: string,
    /** Set by an upsert cut short by the pause (see PausedPart). */
    readonly partial?: PausedPart,
  ) {
    super(message);
  }
}

/** The CRM refused the credential: only a new token (a setting) fixes it. */
export class DestinationAuthError extends DestinationError {
  override readonly name = 'DestinationAuthError';
  readonly retryable = false;
}
