import { hash } from 'node:crypto';
import { toCents } from './money.js';

/**
 * One canonical record per source record: what the ledger hashes and the destinations write.
 * Plain JSON (no classes, no Dates), so it can cross any boundary unchanged.
 */
import type { Resource } from './resource.js';
export { RESOURCES, type Resource } from './resource.js';

export type Scalar = string | number | boolean | null;

export interface CanonicalRecord {
  resource: Resource;
  /** The service's id (data.id, a string). */
  id: string;
  /** Scalars only: money as integer `_cents`, timestamps as UTC ISO, lists and objects as canonical JSON text. */
  attributes: Record<string, Scalar>;
  /** Relationship name → referenced id, ids (in the service's order), or null. */
  relationships: Record<string, string | string[] | null>;
  /** sha256 hex of the canonical JSON of everything above except VOLATILE_FIELDS. */
  hash: string;
}

/**
 * Attributes that change on every read although the record did not ("3 days ago"): kept in
 * `attributes` for destinations that want them, left out of the hash so that they never make
 * an unchanged record look changed.
 */
export const VOLATILE_FIELDS: readonly string[] = [
  'created_at_description',
  'booked_at_description',
];

/**
 * Amounts the service sends as a bare number, without the `_cents` sibling of its money
 * quadruples: they become `<name>_cents` like the others.
 */
export const BARE_MONEY_FIELDS: Readonly<Partial<Record<Resource, readonly string[]>>> = {
  leads: ['estimated_budget'],
};

const BARE_MONEY: Readonly<Record<Resource, ReadonlySet<string>>> = {
  leads: new Set(BARE_MONEY_FIELDS.leads),
  lead_bookings: new Set(BARE_MONEY_FIELDS.lead_bookings),
  events: new Set(BARE_MONEY_FIELDS.events),
  event_bookings: new Set(BARE_MONEY_FIELDS.event_bookings),
  appointments: new Set(BARE_MONEY_FIELDS.appointments),
};

/** An item as every list and single answer carries it (tolerant: relationships optional). */
export interface SourceItem {
  id: string;
  type: string;
  attributes: Readonly<Record<string, unknown>>;
  relationships?: Readonly<Record<string, unknown>> | undefined;
}

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})$/;

/** A timestamp with an offset as UTC ISO (`…Z`, milliseconds); any other value unchanged. */
export function utcTimestamp(value: string): string {
  // Most strings are no timestamp: a look at the 'T' spares them the regular expression.
  if (value.length < 16 || value.charCodeAt(10) !== 84 || !TIMESTAMP.test(value)) return value;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? value : new Date(ms).toISOString();
}

/** JSON with object keys sorted at every depth: equal values give equal text. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortedDeep(value));
}

/** Keys an object orders before all others (integer-like), whatever their insertion order. */
const INDEX_KEY = /^(?:0|[1-9]\d*)$/;

/**
 * Key orders already sorted, by an object's own key order: the records of one list share a
 * handful of shapes, so most records sort nothing. A shape is found by comparing key lists
 * (keys JSON.parse made are interned strings, so each comparison is cheap), most recently
 * used first; at most SHAPES_MAX are kept, so odd data cannot grow it.
 */
interface Shape {
  own: readonly string[];
  sorted: SortedKeys;
}
const SHAPES: Shape[] = [];
const SHAPES_MAX = 32;

interface SortedKeys {
  keys: readonly string[];
  /** Whether one is integer-like (see flatJson). */
  indexed: boolean;
}

function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function sortedKeysOf(value: object): SortedKeys {
  const own = Object.keys(value);
  for (let i = 0; i < SHAPES.length; i++) {
    const shape = SHAPES[i]!;
    if (!sameKeys(shape.own, own)) continue;
    // Moved to the front: the shapes of one page alternate among a few.
    if (i > 0) {
      SHAPES.splice(i, 1);
      SHAPES.unshift(shape);
    }
    return shape.sorted;
  }
  const keys = [...own].sort();
  const sorted = { keys, indexed: keys.some((key) => INDEX_KEY.test(key)) };
  SHAPES.unshift({ own, sorted });
  if (SHAPES.length > SHAPES_MAX) SHAPES.pop();
  return sorted;
}

/**
 * One level of a record body (scalars, ids or lists of ids as values) copied with its keys
 * in sorted order, `skip` left out, so that a single JSON.stringify of the copies writes
 * canonicalJson's text on V8's fast path: the records of a list share shapes, so the copies do
 * too. Anything deeper, or an integer-like key (JSON writes those first whatever the order
 * they were set in), takes the general path instead.
 */
function sortedLevel(
  value: Readonly<Record<string, unknown>>,
  skip?: readonly string[],
): Record<string, unknown> {
  const { keys, indexed } = sortedKeysOf(value);
  const out: Record<string, unknown> = {};
  let flat = !indexed;
  for (const key of keys) {
    if (skip?.includes(key)) continue;
    const v = value[key];
    if (v !== null && typeof v === 'object') {
      if (!Array.isArray(v) || v.some((item) => item !== null && typeof item === 'object')) {
        flat = false;
      }
    }
    out[key] = v;
  }
  return flat ? out : (sortedDeep(out) as Record<string, unknown>);
}

function sortedDeep(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedDeep);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[key];
      if (v !== undefined) out[key] = sortedDeep(v);
    }
    return out;
  }
  return value;
}

function cents(value: unknown): number | null {
  const readable =
    (typeof value === 'number' && Number.isFinite(value)) ||
    (typeof value === 'string' && value.trim() !== '');
  if (!readable) return null;
  try {
    return toCents(value);
  } catch {
    // More than two decimals or not a number: no honest cents value.
    return null;
  }
}

function scalar(value: unknown): Scalar {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return utcTimestamp(value);
  if (typeof value === 'number' || typeof value === 'boolean') return value;
  return canonicalJson(value);
}

/**
 * Attributes in canonical form. A money quadruple `x`, `x_cents`, `x_currency`, `x_formatted`
 * keeps `x_cents` (from the decimal `x` when the service left cents out) and `x_currency`;
 * the decimal and formatted texts are derived from them and dropped.
 */
export function canonicalAttributes(
  resource: Resource,
  attributes: Readonly<Record<string, unknown>>,
): Record<string, Scalar> {
  const out: Record<string, Scalar> = {};
  const bare = BARE_MONEY[resource];
  const names = Object.keys(attributes);
  // The decimals that have a `_cents` sibling, found once: this runs for every record read.
  const withCents = new Set<string>();
  for (const name of names) {
    if (name.endsWith('_cents')) withCents.add(name.slice(0, -'_cents'.length));
  }
  for (const name of names) {
    const value = attributes[name];
    if (value === undefined) continue;
    if (bare.has(name)) {
      out[`${name}_cents`] = cents(value);
    } else if (withCents.has(name)) {
      const given = attributes[`${name}_cents`];
      out[`${name}_cents`] =
        typeof given === 'number' && Number.isInteger(given) ? given : cents(value);
    } else if (name.endsWith('_cents') && name.slice(0, -'_cents'.length) in attributes) {
      // Written with its decimal sibling above.
    } else if (name.endsWith('_formatted') && withCents.has(name.slice(0, -'_formatted'.length))) {
      // Derived text of a money quadruple.
    } else {
      out[name] = scalar(value);
    }
  }
  return out;
}

function refId(ref: unknown): string | undefined {
  if (ref === null || typeof ref !== 'object') return undefined;
  const id = (ref as { id?: unknown }).id;
  return typeof id === 'string' ? id : typeof id === 'number' ? String(id) : undefined;
}

/** `{ name: { data: ref | ref[] | null } }` → `{ name: id | ids | null }`; other shapes are skipped. */
export function canonicalRelationships(
  relationships: Readonly<Record<string, unknown>> | undefined,
): Record<string, string | string[] | null> {
  const out: Record<string, string | string[] | null> = {};
  for (const [name, rel] of Object.entries(relationships ?? {})) {
    if (rel === null || typeof rel !== 'object' || !('data' in rel)) continue;
    const data = rel.data;
    if (data === null) out[name] = null;
    else if (Array.isArray(data)) {
      out[name] = data.map(refId).filter((id): id is string => id !== undefined);
    } else {
      const id = refId(data);
      if (id !== undefined) out[name] = id;
    }
  }
  return out;
}

/**
 * sha256 hex over the canonical JSON of a record without its volatile fields: the text of
 * canonicalJson({ resource, id, attributes minus VOLATILE_FIELDS, relationships }).
 */
export function recordHash(record: Omit<CanonicalRecord, 'hash'>): string {
  const text = JSON.stringify({
    attributes: sortedLevel(record.attributes, VOLATILE_FIELDS),
    id: record.id,
    relationships: sortedLevel(record.relationships),
    resource: record.resource,
  });
  return hash('sha256', text, 'hex');
}

/** The canonical record of one item of the service. */
export function canonicalRecord(resource: Resource, item: SourceItem): CanonicalRecord {
  const body = {
    resource,
    id: item.id,
    attributes: canonicalAttributes(resource, item.attributes),
    relationships: canonicalRelationships(item.relationships),
  };
  return { ...body, hash: recordHash(body) };
}
