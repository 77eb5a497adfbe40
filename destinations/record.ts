/**
 * What every destination takes: one canonical record per source record, already normalized
 * (money in integer cents, timestamps in UTC ISO 8601, relationships as ids). Destinations
 * do not normalize; they check each value against its column's type and write it.
 */

import type { Resource } from '../records/resource.js';
export { isResource, RESOURCES, type Resource } from '../records/resource.js';

/**
 * Column types. `cents` is money as an integer number of cents; `timestamp` an instant
 * (timestamptz in Postgres, UTC ISO text in SQLite); `date` a calendar day `YYYY-MM-DD`;
 * `number` a finite decimal (distances, coordinates, rates, lengths); `json` any JSON value.
 */
export const COLUMN_TYPES = [
  'text',
  'integer',
  'cents',
  'timestamp',
  'date',
  'boolean',
  'number',
  'json',
] as const;
export type ColumnType = (typeof COLUMN_TYPES)[number];

export type JsonValue =
  string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/** The value a column of each type takes in `MirrorRecord.attributes` (null for every type). */
export interface ColumnValueOf {
  text: string;
  integer: number;
  cents: number;
  /** ISO 8601 with an offset or Z, e.g. `2027-06-12T18:00:00.000Z`. */
  timestamp: string;
  /** `YYYY-MM-DD`. */
  date: string;
  boolean: boolean;
  number: number;
  json: JsonValue;
}

export interface MirrorRecord {
  readonly resource: Resource;
  /** The service's id (`data.id`, a string): the table's primary key. */
  readonly id: string;
  /**
   * Column name → canonical value, for the columns of `tables.ts`. A column left out is
   * written as NULL; a name that is not a column of the table is refused.
   */
  readonly attributes: Readonly<Record<string, JsonValue>>;
  /** The whole canonical record, stored as JSON in the table's `record` column. */
  readonly raw: JsonObject;
  /**
   * The destination's key from the ledger's last write of this record, when there was one: a
   * CRM without upsert (Pipedrive) updates by it instead of searching.
   */
  readonly destinationKey?: string;
}
