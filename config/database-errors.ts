/*
 * Which database failures are worth retrying unchanged, for both engines: lost or refused
 * connections, a server shutting down or full, lock conflicts (SQLite busy, Postgres deadlock
 * and serialization failures). Everything else is a fault of the statement or the data.
 * Pure (error codes and messages, no driver loaded), so both store/ and destinations/ classify
 * their failures by the same rules.
 */

const TRANSIENT_SQLSTATES = new Set(['40001', '40P01', '55P03', '57P01', '57P02', '57P03']);
/** SQLSTATE classes: 08 connection exception, 53 insufficient resources. */
const TRANSIENT_SQLSTATE_CLASSES = new Set(['08', '53']);
const TRANSIENT_NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);

function codeOf(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null || !('code' in error)) return undefined;
  return typeof error.code === 'string' ? error.code : undefined;
}

/** Postgres conflicts that a new transaction resolves: deadlock, serialization failure. */
export function isConflictError(error: unknown): boolean {
  const code = codeOf(error);
  return code === '40001' || code === '40P01';
}

export function isTransientDatabaseError(error: unknown): boolean {
  const code = codeOf(error);
  if (code !== undefined) {
    if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return true;
    if (/^[0-9A-Z]{5}$/.test(code)) {
      return TRANSIENT_SQLSTATES.has(code) || TRANSIENT_SQLSTATE_CLASSES.has(code.slice(0, 2));
    }
    if (TRANSIENT_NETWORK_CODES.has(code)) return true;
  }
  // node-postgres reports a dropped connection and a pool timeout without a code.
  const message = error instanceof Error ? error.message : '';
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(
    message,
  );
}

/**
 * node-postgres's words when the server asks for a password (SCRAM) and the URL gave none:
 * they name the protocol step, not what the user left out.
 */
const NO_PASSWORD = /client password must be a string/;

/** The database's own words, without a stack: safe to show (no statement parameters). */
export function databaseMessage(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  if (NO_PASSWORD.test(message)) {
    return 'the server asks for a password and the URL has none: add it to the URL (user:password before the @)';
  }
  return message;
}
