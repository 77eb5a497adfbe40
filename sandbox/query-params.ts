import { badRequest } from './errors.js';
import { dateForm, parseYmd, type DateParts } from './time.js';

/**
 * The one reader of singular query parameters, for every route and the admin API: each used
 * to read its own, so a repeated one was refused as "must be a positive integer" of two valid
 * ids, answered with the array quoted, or its last value taken silently. A malformed one is a
 * 400 `invalid_parameter` in one line naming the parameter and what it takes. (`include` and
 * `category_ids[]` are lists and are read where they are used.)
 */
export type Query = Record<string, unknown>;

/** Shown in a refusal: the value as sent, cut short. */
function shown(value: string): string {
  return value.slice(0, 40);
}

/** The parameter's one value, or undefined when absent or empty. */
export function queryParam(query: Query, name: string): string | undefined {
  const value = query[name];
  if (Array.isArray(value)) {
    throw badRequest(
      'invalid_parameter',
      `${name} may be given only once; it was given ${value.length} times`,
    );
  }
  if (value === undefined || value === '') return undefined;
  // The query-string parser only makes strings and arrays of them; anything else is a bug here.
  if (typeof value !== 'string') throw new TypeError(`query ${name} is a ${typeof value}`);
  return value;
}

/** Refuses a value not of the form the parameter takes. */
export function malformedParam(name: string, expected: string, value: string): never {
  throw badRequest('invalid_parameter', `${name} must be ${expected}, got '${shown(value)}'`);
}

/** Trimmed text; blank is absent. */
export function queryText(query: Query, name: string): string | undefined {
  const value = queryParam(query, name)?.trim();
  return value === '' ? undefined : value;
}

/** An id: decimal digits, at least 1 and exact as a number. */
export function queryId(query: Query, name: string): number | undefined {
  return queryIdOr(query, name, undefined);
}

/** An id, or a word standing for one (the appointments' `staff_id=my`). */
export function queryIdOr<W extends string | undefined>(
  query: Query,
  name: string,
  word: W,
): number | W | undefined {
  const value = queryParam(query, name);
  if (value === undefined) return undefined;
  if (word !== undefined && value === word) return word;
  if (!/^\d{1,15}$/.test(value) || Number(value) < 1) {
    return malformedParam(name, `a positive integer${word ? ` or '${word}'` : ''}`, value);
  }
  return Number(value);
}

/** A calendar date as YYYY-MM-DD, within the years every date field takes. */
export function queryDate(query: Query, name: string): DateParts | undefined {
  const value = queryParam(query, name);
  if (value === undefined) return undefined;
  return parseYmd(value) ?? malformedParam(name, dateForm('YYYY-MM-DD'), value);
}

/** One of a fixed set of words. */
export function queryEnum<T extends string>(
  query: Query,
  name: string,
  allowed: readonly T[],
): T | undefined {
  const value = queryParam(query, name);
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value)) {
    return malformedParam(name, `one of ${allowed.join(', ')}`, value);
  }
  return value as T;
}
