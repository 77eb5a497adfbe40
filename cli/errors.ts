import { ConfigError } from '../config/index.js';
import { StoreLocationError } from '../store/errors.js';
import { scrubText } from '../worker/redact.js';
import { TemporalNamespaceMissingError } from '../worker/temporal-errors.js';

/** A failure the user can fix from what we print; exitCode 2 means bad input. */
export class UserError extends Error {
  override readonly name = 'UserError';
  readonly retryable = false;
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

/** Longest error line printed: a value given on the command line is echoed in its line. */
const MAX_LINE = 2_000;
/** C0 (but the tab) and C1 control characters, and DEL. */
// eslint-disable-next-line no-control-regex -- control characters are what is escaped
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/g;

/**
 * A line as a terminal may show it: control characters a value brought in (an escape
 * sequence in a --cron, a newline) written as `\xNN`, and a line past MAX_LINE cut.
 */
export function shownSafely(line: string): string {
  const escaped = line.replace(
    CONTROL,
    (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`,
  );
  return escaped.length <= MAX_LINE
    ? escaped
    : `${escaped.slice(0, MAX_LINE)}… (${escaped.length - MAX_LINE} more characters)`;
}

/**
 * Prints one clear line per problem (never a stack trace unless EBSYNC_DEBUG is set) and
 * returns the exit code: 2 for bad input, 1 otherwise.
 */
export function reportFailure(error: unknown): number {
  const write = (line: string): void => {
    process.stderr.write(`ebsync: ${scrubText(shownSafely(line))}\n`);
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
  if (error instanceof UserError || error instanceof TemporalNamespaceMissingError) {
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
