import { hash } from 'node:crypto';
import { isUtcIso } from './instants.js';
import { toCents } from './money.js';
import { objectTemplate } from './object-template.js';

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
  // Most strings are no timestamp: a look at the 'T' spares them the regular expression; one
  // already in the form this writes needs no parse.
  if (value.length < 16 || value.charCodeAt(10) !== 84 || isUtcIso(value)) return value;
  if (!TIMESTAMP.test(value)) return value;
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

/**
 * The entry of `cache` that `matches` accepts, moved to the front (the shapes of one page
 * alternate among a few), or a new one from `make` put there; at most SHAPES_MAX are kept.
 */
function recentOrMade<T>(cache: T[], matches: (entry: T) => boolean, make: () => T): T {
  for (let i = 0; i < cache.length; i++) {
    const entry = cache[i]!;
    if (!matches(entry)) continue;
    if (i > 0) {
      cache.splice(i, 1);
      cache.unshift(entry);
    }
    return entry;
  }
  const entry = make();
  cache.unshift(entry);
  if (cache.length > SHAPES_MAX) cache.pop();
  return entry;
}

function sortedKeysOf(value: object): SortedKeys {
  const own = Object.keys(value);
  return recentOrMade(
    SHAPES,
    (shape) => sameKeys(shape.own, own),
    () => {
      const keys = [...own].sort();
      return { own, sorted: { keys, indexed: keys.some((key) => INDEX_KEY.test(key)) } };
    },
  ).sorted;
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

/** How one attribute of the service becomes one canonical attribute (see canonicalAttributes). */
const enum Rule {
  /** Written as it came, through scalar(). */
  Scalar,
  /** A bare amount: `<name>_cents` from the decimal. */
  BareCents,
  /** The decimal of a money quadruple: `<name>_cents` as given, else from the decimal. */
  QuadrupleCents,
}

interface Step {
  /** The service's attribute. */
  from: string;
  /** The canonical attribute it writes. */
  to: string;
  rule: Rule;
  /** For QuadrupleCents: the service's `_cents` sibling. */
  given?: string;
}

/**
 * What canonicalAttributes does to one shape of attributes (one resource, one list of keys in
 * one order), decided once per shape: the records of a list share a handful of shapes, so
 * each record only runs the steps.
 *
 * `sorted` is there when the order of the canonical names is what JSON.stringify writes (no
 * integer-like name, no name written twice): the steps of the hashed names in that order,
 * then the volatile ones. `template` then holds those names in that order (hashed ones null,
 * volatile ones undefined), an objectTemplate that V8 keeps in fast mode: a record's
 * attributes start as a copy of it (`{ ...template }` copies its layout too), so that setting
 * its values keeps them fast (an object given ~60 names one by one turns into a slow
 * dictionary), and one JSON.stringify, which leaves the still undefined volatile names out,
 * writes the hash's canonical text without a sorted copy.
 */
interface AttributePlan {
  steps: readonly Step[];
  sorted: { hashed: readonly Step[]; volatile: readonly Step[]; template: object } | null;
}

function planAttributes(
  resource: Resource,
  attributes: Readonly<Record<string, unknown>>,
  names: readonly string[],
): AttributePlan {
  const bare = BARE_MONEY[resource];
  const withCents = new Set<string>();
  for (const name of names) {
    if (name.endsWith('_cents')) withCents.add(name.slice(0, -'_cents'.length));
  }
  const steps: Step[] = [];
  for (const name of names) {
    if (bare.has(name)) {
      steps.push({ from: name, to: `${name}_cents`, rule: Rule.BareCents });
    } else if (withCents.has(name)) {
      const given = `${name}_cents`;
      steps.push({ from: name, to: given, rule: Rule.QuadrupleCents, given });
    } else if (name.endsWith('_cents') && name.slice(0, -'_cents'.length) in attributes) {
      // Written with its decimal sibling above.
    } else if (name.endsWith('_formatted') && withCents.has(name.slice(0, -'_formatted'.length))) {
      // Derived text of a money quadruple.
    } else {
      steps.push({ from: name, to: name, rule: Rule.Scalar });
    }
  }
  const targets = new Set(steps.map((step) => step.to));
  if (targets.size < steps.length || steps.some((step) => INDEX_KEY.test(step.to))) {
    return { steps, sorted: null };
  }
  const hashed = steps
    .filter((step) => !VOLATILE_FIELDS.includes(step.to))
    .sort((a, b) => (a.to < b.to ? -1 : a.to > b.to ? 1 : 0));
  const volatile = steps.filter((step) => VOLATILE_FIELDS.includes(step.to));
  const template: Record<string, Scalar | undefined> = objectTemplate(
    [...hashed, ...volatile].map((step) => step.to),
  );
  for (const step of volatile) template[step.to] = undefined;
  return { steps, sorted: { hashed, volatile, template } };
}

/** Plans of the shapes met last, most recently used first (as SHAPES). */
const PLANS: { resource: Resource; names: readonly string[]; plan: AttributePlan }[] = [];

function attributePlan(
  resource: Resource,
  attributes: Readonly<Record<string, unknown>>,
): AttributePlan {
  const names = Object.keys(attributes);
  return recentOrMade(
    PLANS,
    (known) => known.resource === resource && sameKeys(known.names, names),
    () => ({ resource, names, plan: planAttributes(resource, attributes, names) }),
  ).plan;
}

/**
 * Runs steps over one record's attributes into `out`; a value left undefined (not one JSON
 * gives, but a caller's object may) is left out, and the answer is then false, as it is when
 * an amount was kept beside its null cents (a name outside the shape's plan).
 */
function applySteps(
  steps: readonly Step[],
  attributes: Readonly<Record<string, unknown>>,
  out: Record<string, Scalar>,
): boolean {
  let whole = true;
  for (const step of steps) {
    const value = attributes[step.from];
    if (value === undefined) {
      whole = false;
      continue;
    }
    if (step.rule === Rule.Scalar) {
      out[step.to] = scalar(value);
      continue;
    }
    const given = step.rule === Rule.QuadrupleCents ? attributes[step.given!] : undefined;
    const amount = typeof given === 'number' && Number.isInteger(given) ? given : cents(value);
    out[step.to] = amount;
    if (amount === null && value !== null && !(typeof value === 'string' && value.trim() === '')) {
      // An amount no whole number of cents states (more than two decimals, past 2^53 cents,
      // or no number at all) keeps its own text under its own name: the record loses
      // nothing, and the next read of the same text hashes the same. The name is one no
      // template holds, so the record takes the general way.
      out[step.from] = scalar(value);
      whole = false;
    }
  }
  return whole;
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
  applySteps(attributePlan(resource, attributes).steps, attributes, out);
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
  const { steps, sorted } = attributePlan(resource, item.attributes);
  const relationships = canonicalRelationships(item.relationships);
  if (sorted !== null) {
    const attributes = { ...sorted.template } as Record<string, Scalar>;
    if (applySteps(sorted.hashed, item.attributes, attributes)) {
      const text = JSON.stringify({
        attributes,
        id: item.id,
        relationships: sortedLevel(relationships),
        resource,
      });
      if (applySteps(sorted.volatile, item.attributes, attributes)) {
        return {
          resource,
          id: item.id,
          attributes,
          relationships,
          hash: hash('sha256', text, 'hex'),
        };
      }
    }
  }
  // The general way, for a shape or a record the template does not fit.
  const attributes: Record<string, Scalar> = {};
  applySteps(steps, item.attributes, attributes);
  const body = { resource, id: item.id, attributes, relationships };
  return { ...body, hash: recordHash(body) };
}
