import { databaseMessage, isTransientDatabaseError } from '../store/database-errors.js';

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
