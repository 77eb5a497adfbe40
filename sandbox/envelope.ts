import type { PagingLimits, SandboxContext } from './context.js';
import type { ListQuery, RecordAttrs, StoredRecord } from './db.js';
import { badRequest } from './errors.js';
import { malformedParam, queryParam, type Query } from './query-params.js';

/** JSON:API-like envelopes of the spec: string data.id, integer attributes.id. */
export interface Item {
  id: string;
  type: string;
  attributes: Record<string, unknown>;
  relationships: Record<string, unknown>;
}

export function item(
  type: string,
  attributes: Record<string, unknown> & { id: number | string },
  relationships: Record<string, unknown> = {},
): Item {
  return { id: String(attributes.id), type, attributes, relationships };
}

/** Reference inside relationships: { data: { id, type } } or a list of them. */
export function ref(type: string, id: number | string): { id: string; type: string } {
  return { id: String(id), type };
}
export const refList = (type: string, ids: readonly (number | string)[]) => ({
  data: ids.map((id) => ref(type, id)),
});
export const refOne = (type: string, id: number | string | null | undefined) => ({
  data: id === null || id === undefined ? null : ref(type, id),
});

/**
 * `included` is answered whenever the request used include (the spec's "when include is
 * used"), even when nothing was found to attach; `undefined` means include was not used.
 */
export function single(data: Item, included?: Item[]) {
  return included
    ? { meta: { status: 'ok' as const }, data, included }
    : { meta: { status: 'ok' as const }, data };
}

/** The sideloaded items when the request named any include, else undefined (no `included`). */
export function sideload(include: ReadonlySet<string>, load: () => Item[]): Item[] | undefined {
  return include.size > 0 ? load() : undefined;
}

export function ok() {
  return { meta: { status: 'ok' as const } };
}

export interface Paging {
  page: number;
  per: number;
  offset: number;
}

/**
 * A page or per: decimal digits only, given once ('0x10' or '1e2' used to be read as numbers).
 * A page must also be exact as a number, or meta would echo another page than was asked; a
 * per of any size is clamped by the caller.
 */
function positiveInt(query: Query, name: string, fallback: number, exact: boolean): number {
  const raw = queryParam(query, name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < 1) return malformedParam(name, 'a positive integer', raw);
  if (exact && !Number.isSafeInteger(value)) {
    return malformedParam(name, `a positive integer up to ${Number.MAX_SAFE_INTEGER}`, raw);
  }
  return value;
}

export function paging(query: Query, limits: PagingLimits, defaultPer = 25): Paging {
  const page = positiveInt(query, 'page', 1, true);
  const per = Math.min(positiveInt(query, 'per', defaultPer, false), limits.maxPer);
  return { page, per, offset: (page - 1) * per };
}

/** Parses `include` (comma list, possibly repeated); an unknown name is a 400. */
export function parseInclude<T extends string>(raw: unknown, allowed: readonly T[]): Set<T> {
  if (raw === undefined) return new Set();
  const parts = (Array.isArray(raw) ? raw : [raw]).flatMap((value) =>
    typeof value === 'string' ? value.split(',') : [String(value)],
  );
  const out = new Set<T>();
  for (const part of parts.map((p) => p.trim()).filter(Boolean)) {
    if (!(allowed as readonly string[]).includes(part)) {
      throw badRequest(
        'invalid_parameter',
        `include '${part}' is not available; allowed: ${allowed.join(', ')}`,
      );
    }
    out.add(part as T);
  }
  return out;
}

/**
 * SQL limit and offset for a page, cut at the reach limit: a page that starts past it is
 * empty, and one that straddles it is short.
 */
export function reachWindow(p: Paging, limits: PagingLimits): { limit: number; offset: number } {
  if (p.offset >= limits.reachLimit) return { limit: 0, offset: 0 };
  return { limit: Math.min(p.per, limits.reachLimit - p.offset), offset: p.offset };
}

/** A page of a type's records (ctx.records.list), cut at the reach limit. */
export function listPage<A extends RecordAttrs>(
  ctx: SandboxContext,
  p: Paging,
  type: string,
  businessId: number,
  query: Omit<ListQuery, 'limit' | 'offset'> = {},
): { records: StoredRecord<A>[]; total: number } {
  return ctx.records.list<A>(type, businessId, { ...query, ...reachWindow(p, ctx.limits) });
}

export function listBody(data: Item[], total: number, p: Paging, included?: Item[]) {
  const body: Record<string, unknown> = {
    meta: {
      status: 'ok',
      total_count: total,
      per_page: p.per,
      page: p.page,
      total_pages: Math.ceil(total / p.per),
    },
    data,
  };
  if (included) body.included = included;
  return body;
}

/** Money as the spec writes it: decimal string plus _cents, _currency and _formatted. */
export function money(
  name: string,
  cents: number | null,
  currency = 'USD',
): Record<string, string | number | null> {
  if (cents === null) {
    return {
      [name]: null,
      [`${name}_cents`]: null,
      [`${name}_currency`]: null,
      [`${name}_formatted`]: null,
    };
  }
  const decimal = (cents / 100).toFixed(2);
  const symbol =
    currency === 'USD' ? '$' : currency === 'EUR' ? '€' : currency === 'GBP' ? '£' : '';
  const grouped = Number(decimal).toLocaleString('en-US', {
    minimumFractionDigits: 2,
    maximumFractionDigits: 2,
  });
  return {
    [name]: decimal,
    [`${name}_cents`]: cents,
    [`${name}_currency`]: currency,
    [`${name}_formatted`]: symbol ? `${symbol}${grouped}` : `${grouped} ${currency}`,
  };
}
