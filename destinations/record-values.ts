import { isUtcIso } from '../records/instants.js';
import { DestinationRecordError } from './errors.js';
import type { RecordRefusal } from './destination.js';
import type { ColumnType, JsonValue, MirrorRecord, Resource } from './record.js';
import type { TableSpec } from './tables.js';

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
/** A date, a time, and a zone: `Z` or an offset. */
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/i;

function realDate(text: string): boolean {
  const m = DATE.exec(text);
  if (!m) return false;
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return d.toISOString().startsWith(text);
}

/** The value as stored, or undefined when it does not fit the type. */
function checked(type: ColumnType, value: JsonValue): JsonValue | undefined {
  switch (type) {
    case 'text':
      return typeof value === 'string' ? value : undefined;
    case 'integer':
    case 'cents':
      return Number.isSafeInteger(value) ? value : undefined;
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
    case 'boolean':
      return typeof value === 'boolean' ? value : undefined;
    case 'date':
      return typeof value === 'string' && realDate(value) ? value : undefined;
    case 'timestamp': {
      if (typeof value !== 'string') return undefined;
      // Already UTC with milliseconds and Z (what canonical records hold): nothing to redo.
      if (isUtcIso(value)) return value;
      if (!INSTANT.test(value)) return undefined;
      const ms = Date.parse(value);
      // One form in every destination: UTC, milliseconds, Z.
      return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
    }
    case 'json':
      return value;
  }
}

const EXPECTED: Readonly<Record<ColumnType, string>> = {
  text: 'a string',
  integer: 'a whole number',
  cents: 'a whole number of cents',
  number: 'a finite number',
  boolean: 'true or false',
  date: 'a date YYYY-MM-DD',
  timestamp: 'an ISO 8601 timestamp with Z or an offset',
  json: 'JSON',
};

/** What a value is, never the value itself: errors reach Temporal history, records hold PII. */
function kindOf(value: JsonValue): string {
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number') {
    if (Number.isSafeInteger(value)) return 'a whole number';
    return Number.isInteger(value) ? 'a number too large to hold exactly' : 'a fraction';
  }
  if (typeof value === 'string') return `a string of ${value.length} characters`;
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** A record checked against its table: attribute values by column, in the spec's order. */
export interface CheckedRecord<V = JsonValue> {
  readonly id: string;
  /** Its position in the records given to checkBatch (the last, for an id given twice). */
  readonly index: number;
  readonly raw: MirrorRecord['raw'];
  /** One value per column of `table.columns` (null where the record has none). */
  readonly values: readonly (V | null)[];
  /** Why values of it were left out of their columns (see checkBatch); absent when none were. */
  readonly unfit?: readonly string[];
}

/**
 * The records whose values did not all fit their columns, as written only in part: their rows
 * are written, those columns empty, the whole record in its `record` column; the pass says so
 * and ends incomplete, and the next pass writes them again.
 */
export function unfitRefusals(batch: readonly CheckedRecord<unknown>[]): {
  refused?: RecordRefusal[];
} {
  const refused = batch.flatMap((record) =>
    record.unfit
      ? [
          {
            index: record.index,
            code: 'VALUE_DOES_NOT_FIT',
            message: `${record.unfit.join('; ')}: left empty in ${record.unfit.length > 1 ? 'their columns' : 'its column'} (the record column holds it)`,
            partial: true,
          },
        ]
      : [],
  );
  return refused.length > 0 ? { refused } : {};
}

const asJson = (_type: ColumnType, value: JsonValue): JsonValue => value;

/**
 * Checks a batch before anything is written, so a bad record fails the batch with a message
 * naming it, and the database never sees half a batch. A value the service sent that does not
 * fit its column (a whole number past 2^53 in an integer column) fails no batch: the column is
 * left empty and the record says why (`unfit`, unfitRefusals), so one odd value cannot hold
 * back every pass. Repeated ids: the last one stays.
 * `stored` turns each checked value (never null) into what the destination binds, as the
 * values are gathered: one array per record rather than a second one made from the first.
 */
export function checkBatch<V = JsonValue>(
  resource: Resource,
  table: TableSpec,
  records: readonly MirrorRecord[],
  stored: (type: ColumnType, value: JsonValue) => V = asJson as (
    type: ColumnType,
    value: JsonValue,
  ) => V,
): CheckedRecord<V>[] {
  const columns = table.columns;
  const byId = new Map<string, CheckedRecord<V>>();
  // Messages only: built when a record fails, not for every record.
  const where = (record: MirrorRecord) => `${resource} record ${JSON.stringify(record.id)}`;
  for (const [position, record] of records.entries()) {
    if (record.resource !== resource) {
      throw new DestinationRecordError(`${where(record)} is a ${record.resource} record`);
    }
    if (typeof record.id !== 'string' || record.id === '') {
      throw new DestinationRecordError(`${where(record)}: id must be a non-empty string`);
    }
    const attributes = record.attributes;
    const values = new Array<V | null>(columns.length).fill(null);
    // By column, not by attribute: no lookup of each name. Attributes that are no column are
    // found by count: every own attribute must have been met as a column.
    let met = 0;
    let unfit: string[] | undefined;
    for (let index = 0; index < columns.length; index++) {
      const column = columns[index]!;
      // Own attributes only: a column named like an Object.prototype member reads nothing.
      if (!Object.hasOwn(attributes, column.name)) continue;
      met++;
      const value = attributes[column.name];
      if (value === undefined || value === null) continue;
      const fits = checked(column.type, value);
      if (fits === undefined) {
        (unfit ??= []).push(
          `${column.name} must be ${EXPECTED[column.type]}, got ${kindOf(value)}`,
        );
        continue;
      }
      values[index] = stored(column.type, fits);
    }
    const names = Object.keys(attributes);
    if (met !== names.length) {
      const known = new Set(columns.map((c) => c.name));
      const stranger = names.find((name) => !known.has(name));
      throw new DestinationRecordError(
        `${where(record)}: ${stranger ?? '?'} is not a column of ${table.table}`,
      );
    }
    byId.delete(record.id);
    byId.set(record.id, {
      id: record.id,
      index: position,
      raw: record.raw,
      values,
      ...(unfit ? { unfit } : {}),
    });
  }
  return [...byId.values()];
}
