import { ConfigError } from '../config/index.js';
import { StoreLocationError } from '../store/errors.js';
import { scrubText } from '../worker/redact.js';
import { shownSafely } from './shown-text.js';
import { TemporalNamespaceMissingError } from '../worker/temporal-errors.js';

/**
 * A failure the user can fix from what we print; exitCode 2 means bad input. Its lines are
 * those given: a message given as one string is one line, so that a newline in what it quotes
 * (a service's error text, a name) is written out, never taken for a line of ebsync's own.
 */
export class UserError extends Error {
  override readonly name = 'UserError';
  readonly retryable = false;
  readonly lines: readonly string[];
  constructor(
    message: string | readonly string[],
    readonly exitCode = 1,
  ) {
    const lines = typeof message === 'string' ? [message] : message;
    super(lines.join('\n'));
    this.lines = lines;
  }
}

/**
 * Prints one clear line per problem (never a stack trace unless EBSYNC_DEBUG is set) and
 * returns the exit code: 2 for bad input, 1 otherwise.
 */
export function reportFailure(error: unknown): number {
  const write = (line: string): void => {
    process.stderr.write(`ebsync: ${shownSafely(scrubText(line))}\n`);
  };
  if (error instanceof ConfigError) {
    for (const line of error.lines) write(line);
    return 2;
  }
  // A file named where none can be (a folder, a device, a folder this user cannot write):
  // the data dir or a flag chose it, so it is bad input too.
  if (error instanceof StoreLocationError) {
    write(error.message.split('\n')[0] ?? error.message);
    return 2;
  }
  if (error instanceof UserError) {
    for (const line of error.lines) write(line);
    return error.exitCode;
  }
  if (error instanceof TemporalNamespaceMissingError) {
    for (const line of error.message.split('\n')) write(line);
    return error.exitCode;
  }
  const message = error instanceof Error ? error.message : String(error);
  write(message.split('\n')[0] ?? 'unknown error');
  if (process.env.EBSYNC_DEBUG && error instanceof Error && error.stack) {
    process.stderr.write(`${scrubText(error.stack)}\n`);
  }
  return 1;
}

export async function runAction(action: () => Promise<void>): Promise<void> {
  try {
    await action();
  } catch (error) {
    process.exitCode = reportFailure(error);
  }
}

/**
 * Things of this deployment's (automation endpoints, schedules) sealed with encryption keys
 * this process has not: listed as unreadable, then this error, exit 1. `why`: which keys;
 * `then`: what follows from it and the way out.
 */
export function sealedOtherwiseError(
  kind: string,
  names: readonly string[],
  why: string,
  then: string,
): UserError {
  return new UserError(
    `${kind} ${names.map((name) => `'${name}'`).join(', ')} cannot be opened with this process's EBSYNC_ENCRYPTION_KEYS (${why}): ${then}`,
    1,
  );
}
