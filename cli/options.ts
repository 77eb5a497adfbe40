import { InvalidArgumentError } from 'commander';
import { parseDuration } from '../config/duration.js';
import { UserError } from './errors.js';

/**
 * The one parser of numbers and durations given on the command line. Commander prints
 * "error: option '--x <n>' argument 'v' is invalid. <why>" on one line and the program
 * exits 2; nothing half-parsed (NaN, 12abc) gets through.
 */
export function intFlag(min: number, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    const n = Number(value);
    if (!/^-?\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(
        max === Number.MAX_SAFE_INTEGER
          ? `Expected a whole number of at least ${min}.`
          : `Expected a whole number from ${min} to ${max}.`,
      );
    }
    return n;
  };
}

/** A TCP port, where 0 picks a free one. */
export const portFlag = () => intFlag(0, 65535);

/**
 * A duration in milliseconds: `90` (seconds, the flag's unit), `500ms`, `30s`, `5m` or `1h`,
 * from `min` to `max` milliseconds.
 */
export function durationFlag(min = 1, max = 86_400_000) {
  const shown = (ms: number): string =>
    ms % 3_600_000 === 0
      ? `${ms / 3_600_000}h`
      : ms % 60_000 === 0
        ? `${ms / 60_000}m`
        : ms % 1000 === 0
          ? `${ms / 1000}s`
          : `${ms}ms`;
  return (value: string): number => {
    const text = value.trim();
    const ms = parseDuration(/^\d+(\.\d+)?$/.test(text) ? `${text}s` : text);
    if (ms === undefined || ms < min || ms > max) {
      throw new InvalidArgumentError(
        `Expected a duration from ${shown(min)} to ${shown(max)}: seconds (90) or with a unit (500ms, 30s, 5m, 1h).`,
      );
    }
    return ms;
  };
}

/** A duration for messages: `300s`, `1.5s`. */
export function formatDuration(ms: number): string {
  return `${Math.round(ms / 100) / 10}s`;
}

/** Standard input to its end, trimmed (a secret piped in, a signing secret). */
export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').trim();
}

/** The value of a secret flag that says: read it from standard input. */
export const FROM_STDIN = '-';

/** A flag that takes a secret, and where else the secret can come from. */
export interface SecretFlag {
  /** `--api-key` */
  flag: string;
  /** The setting read when the flag is not given a value, e.g. `EBS_API_KEY`. */
  env: string;
  /** What it is, for messages: `integration key`. */
  what: string;
}

/**
 * A secret for a command. The safe ways: the environment (`fallback`, from `spec.env`; no
 * flag or the flag without a value) or standard input (`--flag -`). A value typed after the
 * flag still works, but it shows in `ps` and in shell history, so using one prints one
 * warning line naming the safer ways (never the secret). `check` says why a value is not
 * allowed; a refused value is refused before any warning.
 */
export async function secretFrom(
  given: string | boolean | undefined,
  fallback: string | undefined,
  spec: SecretFlag,
  check: (value: string) => string | undefined = () => undefined,
): Promise<string | undefined> {
  let value: string | undefined;
  if (given === FROM_STDIN) {
    value = await readStdin();
    if (!value) {
      throw new UserError(
        `${spec.flag} ${FROM_STDIN} read nothing from standard input: pipe the ${spec.what} in, or set ${spec.env}`,
        2,
      );
    }
  } else if (typeof given === 'string') {
    value = given;
  } else {
    return fallback;
  }
  const problem = check(value);
  if (problem) throw new UserError(`${spec.flag} is not allowed: ${problem}`, 2);
  if (given !== FROM_STDIN) {
    process.stderr.write(
      `ebsync: warning: ${spec.flag} with a value puts the ${spec.what} where ps and shell history show it; set ${spec.env}, or pass ${spec.flag} ${FROM_STDIN} and give it on standard input\n`,
    );
  }
  return value;
}
