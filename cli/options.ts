import { InvalidArgumentError } from 'commander';
import { CONNECTION_RULE_TEXT, isConnectionName } from '../config/connection-names.js';
import { durationText, parseDuration } from '../config/duration.js';
import { isNamespaceName, NAMESPACE_RULE_TEXT } from '../config/namespace-names.js';

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

/**
 * A connection's name (`--connection`), refused before anything runs when no connection
 * could have it: otherwise the command went on to Temporal and said to connect it under a
 * name `ebsync connect --name` refuses.
 */
export function connectionFlag() {
  return (value: string): string => {
    if (!isConnectionName(value)) {
      throw new InvalidArgumentError(`Expected a connection name: ${CONNECTION_RULE_TEXT}.`);
    }
    return value;
  };
}

/**
 * The namespace `temporal` and `dev` create (`--namespace`): the dev server made one named
 * 'bad ns!' without a word, which every later command then had to quote.
 */
export function namespaceFlag() {
  return (value: string): string => {
    if (!isNamespaceName(value)) {
      throw new InvalidArgumentError(`Expected ${NAMESPACE_RULE_TEXT}.`);
    }
    return value;
  };
}

/** A TCP port, where 0 picks a free one. */
export const portFlag = () => intFlag(0, 65535);

/**
 * A duration in milliseconds: `90` (seconds, the flag's unit), `500ms`, `30s`, `5m` or `1h`,
 * from `min` to `max` milliseconds.
 */
export function durationFlag(min = 1, max = 86_400_000) {
  // Only examples the flag takes: --every (1s at least) is not offered 500ms.
  const within = (ms: number): boolean => ms >= min && ms <= max;
  const examples = [
    ...(within(90_000) ? ['seconds (90)'] : []),
    `with a unit (${[500, 30_000, 300_000, 3_600_000].filter(within).map(durationText).join(', ')})`,
  ].join(' or ');
  return (value: string): number => {
    const text = value.trim();
    const ms = parseDuration(/^\d+(\.\d+)?$/.test(text) ? `${text}s` : text);
    if (ms === undefined || ms < min || ms > max) {
      throw new InvalidArgumentError(
        `Expected a duration from ${durationText(min)} to ${durationText(max)}: ${examples}.`,
      );
    }
    return ms;
  };
}

/** A duration for messages: `300s`, `1.5s`. */
export function formatDuration(ms: number): string {
  return `${Math.round(ms / 100) / 10}s`;
}
