import type { SandboxContext } from '../context.js';
import { sql, withSchemaDropped, type Db, type RecordAttrs, type StoredRecord } from '../db.js';
import type { LeadAttrs } from './leads-model.js';
import type { LeadBookingAttrs } from './lead-bookings-model.js';

/**
 * The list index of leads and their bookings: side tables kept by triggers, full-text search,
 * counts and page anchors, so lists stay fast at 100,000 leads.
 */

const indexed = new WeakSet<Db>();

/** Lead fields the search row holds, in order, then the digits-only phone. */
const SEARCHABLE = [
  'first_name',
  'last_name',
  'company_name',
  'email',
  'phone',
  'venue_name',
  'venue_address',
  'venue_city',
  'venue_state',
  'venue_zip',
  'notes',
] as const;
/** The characters the digits-only phone drops, so '5551234567' finds '(555) 123-4567'. */
const PHONE_PUNCTUATION = ['-', ' ', '(', ')', '.'] as const;
const SIDE_TABLES = ['lead_index', 'lead_booking_index', 'lead_counts'] as const;

/**
 * The search text of a lead, as the trigger's SQL builds it from the stored JSON (bulk
 * writers use this to skip the JSON round trip; the fields are strings or null).
 */
function leadSearchBody(attrs: LeadAttrs): string {
  let body = '';
  for (const field of SEARCHABLE) body += `${attrs[field] ?? ''} `;
  let digits = attrs.phone ?? '';
  for (const c of PHONE_PUNCTUATION) digits = digits.replaceAll(c, '');
  return body + digits;
}

/**
 * What the lead and lead-booking lists filter and page on, kept beside `records` so the
 * lists stay fast at 100k leads: `lead_index` and `lead_booking_index` (plain columns with
 * plain indexes; expression indexes on `records` would parse every row's JSON), `lead_search`,
 * the full-text table behind the lead list's `text`, and `lead_counts`, the live leads and
 * bookings per business, so an unfiltered list does not count 100k index entries per page.
 * Triggers on `records` keep them in step, so a record written by any module (or the seed
 * generator) is listed; records written before they existed are copied in when they are made.
 */
export function ensureLeadIndexes(db: Db): void {
  if (indexed.has(db)) return;
  const j = (field: string) => `json_extract(new.attrs, '$.${field}')`;
  const searchable = SEARCHABLE.map((f) => `coalesce(${j(f)}, '')`)
    .concat(
      `coalesce(${PHONE_PUNCTUATION.reduce((e, c) => `replace(${e}, '${c}', '')`, j('phone'))}, '')`,
    )
    .join(" || ' ' || ");
  const leadRow = `INSERT OR REPLACE INTO lead_index VALUES (new.id, new.business_id,
    new.deleted_at IS NULL, ${j('email')}, ${j('origin')}, ${j('lead_type')}, ${j('source')})`;
  const searchRow = `INSERT INTO lead_search(rowid, body) VALUES (new.id, ${searchable})`;
  const bookingRow = `INSERT OR REPLACE INTO lead_booking_index VALUES (new.id, new.business_id,
    new.deleted_at IS NULL, ${j('starts_at')}, ${j('brand_id')})`;
  const count = (row: 'old' | 'new', sign: '+' | '-') =>
    `INSERT INTO lead_counts VALUES (${row}.type, ${row}.business_id, ${sign}(${row}.deleted_at IS NULL))
       ON CONFLICT DO UPDATE SET live = live + excluded.live`;
  const exists = (name: string) =>
    db.prepare('SELECT 1 FROM sqlite_master WHERE name = ?').get(name) !== undefined;
  const had = new Map(SIDE_TABLES.map((name) => [name, exists(name)]));
  db.exec(`
    CREATE TABLE IF NOT EXISTS lead_index (
      id INTEGER PRIMARY KEY, business_id INTEGER NOT NULL, live INTEGER NOT NULL,
      email TEXT, origin TEXT, lead_type TEXT, source TEXT);
    CREATE INDEX IF NOT EXISTS lead_index_live ON lead_index(business_id, live);
    CREATE INDEX IF NOT EXISTS lead_index_email ON lead_index(business_id, live, email);
    CREATE INDEX IF NOT EXISTS lead_index_origin ON lead_index(business_id, live, origin);
    CREATE INDEX IF NOT EXISTS lead_index_type ON lead_index(business_id, live, lead_type);
    CREATE INDEX IF NOT EXISTS lead_index_source ON lead_index(business_id, live, source);
    CREATE VIRTUAL TABLE IF NOT EXISTS lead_search
      USING fts5(body, content = '', contentless_delete = 1,
        tokenize = 'unicode61 remove_diacritics 2');
    CREATE TABLE IF NOT EXISTS lead_booking_index (
      id INTEGER PRIMARY KEY, business_id INTEGER NOT NULL, live INTEGER NOT NULL,
      starts_at TEXT, brand_id INTEGER);
    CREATE INDEX IF NOT EXISTS lead_booking_index_live
      ON lead_booking_index(business_id, live);
    CREATE INDEX IF NOT EXISTS lead_booking_index_starts
      ON lead_booking_index(business_id, live, starts_at);
    CREATE TABLE IF NOT EXISTS lead_counts (
      type TEXT NOT NULL, business_id INTEGER NOT NULL, live INTEGER NOT NULL,
      PRIMARY KEY (type, business_id));

    CREATE TRIGGER IF NOT EXISTS lead_index_insert AFTER INSERT ON records
      WHEN new.type = 'lead' BEGIN ${leadRow}; ${searchRow}; END;
    CREATE TRIGGER IF NOT EXISTS lead_index_update AFTER UPDATE ON records
      WHEN new.type = 'lead' BEGIN
        ${leadRow};
        DELETE FROM lead_search WHERE rowid = old.id;
        ${searchRow};
      END;
    CREATE TRIGGER IF NOT EXISTS lead_index_delete AFTER DELETE ON records
      WHEN old.type = 'lead' BEGIN
        DELETE FROM lead_index WHERE id = old.id;
        DELETE FROM lead_search WHERE rowid = old.id;
      END;
    CREATE TRIGGER IF NOT EXISTS lead_booking_index_insert AFTER INSERT ON records
      WHEN new.type = 'lead_booking' BEGIN ${bookingRow}; END;
    CREATE TRIGGER IF NOT EXISTS lead_booking_index_update AFTER UPDATE ON records
      WHEN new.type = 'lead_booking' BEGIN ${bookingRow}; END;
    CREATE TRIGGER IF NOT EXISTS lead_booking_index_delete AFTER DELETE ON records
      WHEN old.type = 'lead_booking' BEGIN
        DELETE FROM lead_booking_index WHERE id = old.id;
      END;
    CREATE TRIGGER IF NOT EXISTS lead_counts_insert AFTER INSERT ON records
      WHEN new.type IN ('lead', 'lead_booking') BEGIN ${count('new', '+')}; END;
    CREATE TRIGGER IF NOT EXISTS lead_counts_update AFTER UPDATE ON records
      WHEN new.type IN ('lead', 'lead_booking')
        AND (old.deleted_at IS NULL) <> (new.deleted_at IS NULL) BEGIN
        ${count('old', '-')};
        ${count('new', '+')};
      END;
    CREATE TRIGGER IF NOT EXISTS lead_counts_delete AFTER DELETE ON records
      WHEN old.type IN ('lead', 'lead_booking') BEGIN ${count('old', '-')}; END;
  `);
  const backfill = (type: string, ...rows: string[]) => {
    for (const row of rows) {
      // The trigger bodies read `new.`; the copy selects the existing rows under that name.
      const select = row.replace(/VALUES \(([\s\S]*)\)$/, 'SELECT $1');
      db.exec(`${select} FROM records AS new WHERE new.type = '${type}'`);
    }
  };
  if (!had.get('lead_index')) backfill('lead', leadRow, searchRow);
  if (!had.get('lead_booking_index')) backfill('lead_booking', bookingRow);
  if (!had.get('lead_counts')) recountLeads(db);
  indexed.add(db);
}

/** Live leads and bookings per business, counted afresh from the side tables. */
function recountLeads(db: Db): void {
  db.exec(`
    DELETE FROM lead_counts;
    INSERT INTO lead_counts SELECT 'lead', business_id, count(*) FROM lead_index
      WHERE live = 1 GROUP BY business_id;
    INSERT INTO lead_counts SELECT 'lead_booking', business_id, count(*) FROM lead_booking_index
      WHERE live = 1 GROUP BY business_id;
  `);
}

/**
 * Side-table rows made from attributes in hand, for bulkLeadIndexing: plain tuples, so a
 * generator on another thread can make them and send them over.
 */
export interface LeadSideRows {
  /** id, email, origin, lead_type, source */
  leads: [number, string, string, string | null, string | null][];
  /** id, search text */
  search: [number, string][];
  /** id, starts_at, brand_id */
  bookings: [number, string | null, number][];
}

export function emptySideRows(): LeadSideRows {
  return { leads: [], search: [], bookings: [] };
}

export function addLeadSideRows(into: LeadSideRows, id: number, a: LeadAttrs): void {
  into.leads.push([id, a.email, a.origin, a.lead_type, a.source]);
  into.search.push([id, leadSearchBody(a)]);
}

export function addBookingSideRows(into: LeadSideRows, id: number, a: LeadBookingAttrs): void {
  into.bookings.push([id, a.starts_at, a.brand_id]);
}

/**
 * Runs a bulk insert of one business's live leads and lead bookings (the seed generator's)
 * with the side tables' triggers and indexes off: `bulk` hands over each batch's side rows
 * itself through `write` (no JSON re-parse, no per-row index updates), then the triggers and
 * indexes are remade and the counts recounted. Call it inside a transaction, so nobody sees
 * the tables without them.
 */
export function bulkLeadIndexing<T>(
  db: Db,
  businessId: number,
  bulk: (write: (side: LeadSideRows) => void) => T,
): T {
  ensureLeadIndexes(db);
  const lead = db.prepare('INSERT INTO lead_index VALUES (?, ?, 1, ?, ?, ?, ?)');
  const search = db.prepare('INSERT INTO lead_search(rowid, body) VALUES (?, ?)');
  const booking = db.prepare('INSERT INTO lead_booking_index VALUES (?, ?, 1, ?, ?)');
  try {
    return withSchemaDropped(
      db,
      `(type = 'trigger' AND tbl_name = 'records' AND name LIKE 'lead\\_%' ESCAPE '\\')
         OR (type = 'index' AND tbl_name IN ('lead_index', 'lead_booking_index'))`,
      // Table by table per batch: interleaved row by row with each other, each table's
      // writes ran at about half the speed.
      () =>
        bulk((side) => {
          for (const [id, ...rest] of side.leads) lead.run(id, businessId, ...rest);
          for (const [id, body] of side.search) search.run(id, body);
          for (const [id, ...rest] of side.bookings) booking.run(id, businessId, ...rest);
        }),
    );
  } finally {
    recountLeads(db);
  }
}

/** Every ANCHOR_STEP-th live id of an unfiltered list, up to the reach limit. */
const ANCHOR_STEP = 500;
interface Anchors {
  writes: number;
  ids: number[];
}
const anchorCache = new WeakMap<Db, Map<string, Anchors>>();

/**
 * Where an unfiltered page deep in a list starts: the nearest anchor id at or before it and
 * the offset left from there, so the page skips at most ANCHOR_STEP index entries instead
 * of all before it (OFFSET 9,900 cost ~0.5 ms a page). Anchors are rebuilt after any write
 * to the type's records (Records.writeCount), so they never describe a different list.
 */
function seek(
  ctx: SandboxContext,
  type: 'lead' | 'lead_booking',
  table: string,
  businessId: number,
  offset: number,
): { fromId: number; offset: number } | undefined {
  if (offset < ANCHOR_STEP) return undefined;
  let byList = anchorCache.get(ctx.db);
  if (!byList) anchorCache.set(ctx.db, (byList = new Map<string, Anchors>()));
  const key = `${type}:${businessId}`;
  const writes = ctx.records.writeCount(type);
  let anchors = byList.get(key);
  if (anchors?.writes !== writes) {
    const ids = sql(
      ctx.db,
      `SELECT id FROM ${table} WHERE business_id = ? AND live = 1 ORDER BY id LIMIT ?`,
    )
      .pluck()
      .all(businessId, ctx.limits.reachLimit) as number[];
    anchors = { writes, ids: ids.filter((_, k) => k % ANCHOR_STEP === 0) };
    byList.set(key, anchors);
  }
  const k = Math.min(Math.floor(offset / ANCHOR_STEP), anchors.ids.length - 1);
  const fromId = anchors.ids[k];
  return fromId === undefined ? undefined : { fromId, offset: offset - k * ANCHOR_STEP };
}

/** Filtered lists whose ids are kept; the least recently asked is dropped past this. */
const FILTERED_KEPT = 16;
const filteredCache = new WeakMap<Db, Map<string, { writes: number; ids: number[] }>>();

/**
 * Every live id a filtered list holds, in list order, kept until a record of its type is
 * written (Records.writeCount). A partitioned read asks for each page of the same filter in
 * turn, and every page counted the whole filter again and skipped its offset: at 100,000
 * leads a page of one origin's e-mail domain took about 40 ms, twice an unfiltered page.
 */
function filteredIds(
  ctx: SandboxContext,
  type: 'lead' | 'lead_booking',
  table: string,
  where: string,
  params: unknown[],
): number[] {
  let kept = filteredCache.get(ctx.db);
  if (!kept)
    filteredCache.set(ctx.db, (kept = new Map<string, { writes: number; ids: number[] }>()));
  const key = `${type}\n${where}\n${JSON.stringify(params)}`;
  const writes = ctx.records.writeCount(type);
  const known = kept.get(key);
  kept.delete(key);
  if (known?.writes === writes) {
    kept.set(key, known);
    return known.ids;
  }
  const ids = sql(ctx.db, `SELECT id FROM ${table} WHERE ${where} ORDER BY id`)
    .pluck()
    .all(...params) as number[];
  if (kept.size >= FILTERED_KEPT) {
    const [oldest] = kept.keys();
    if (oldest !== undefined) kept.delete(oldest);
  }
  kept.set(key, { writes, ids });
  return ids;
}

export interface IndexFilter {
  where: string;
  params: unknown[];
}

/**
 * One page of live lead or lead-booking records by id: ids and the count come from the
 * side tables (index-only; unfiltered, the count is the maintained one), then the page's
 * records are read by primary key.
 */
export function pageOfRecords<A extends RecordAttrs>(
  ctx: SandboxContext,
  type: 'lead' | 'lead_booking',
  businessId: number,
  filters: IndexFilter[],
  window: { limit: number; offset: number },
): { records: StoredRecord<A>[]; total: number } {
  ensureLeadIndexes(ctx.db);
  const table = type === 'lead' ? 'lead_index' : 'lead_booking_index';
  const where = ['business_id = ?', 'live = 1'].concat(filters.map((f) => f.where)).join(' AND ');
  const params = [businessId, ...filters.flatMap((f) => f.params)];
  const matching = filters.length === 0 ? undefined : filteredIds(ctx, type, table, where, params);
  const total =
    matching?.length ??
    (
      sql(ctx.db, 'SELECT live FROM lead_counts WHERE type = ? AND business_id = ?').get(
        type,
        businessId,
      ) as { live: number } | undefined
    )?.live ??
    0;
  if (window.limit === 0) return { records: [], total };
  let rows: [number, number, number | null, string][];
  if (matching) {
    const ids = matching.slice(window.offset, window.offset + window.limit);
    rows = sql(
      ctx.db,
      `SELECT id, business_id, parent_id, attrs FROM records
         WHERE type = '${type}' AND id IN (SELECT value FROM json_each(?)) ORDER BY id`,
    )
      .raw()
      .all(JSON.stringify(ids)) as typeof rows;
  } else {
    const from = seek(ctx, type, table, businessId, window.offset);
    // One statement: the page's ids from the side table, then their rows by primary key. Raw
    // rows (arrays), since a page is 100 of them.
    rows = sql(
      ctx.db,
      `SELECT id, business_id, parent_id, attrs FROM records
         WHERE type = '${type}' AND id IN (
           SELECT id FROM ${table} WHERE ${where}${from ? ' AND id >= ?' : ''}
             ORDER BY id LIMIT ? OFFSET ?)
         ORDER BY id`,
    )
      .raw()
      .all(
        ...params,
        ...(from ? [from.fromId] : []),
        window.limit,
        from ? from.offset : window.offset,
      ) as typeof rows;
  }
  return {
    total,
    records: rows.map(([id, business, parent, attrs]) => ({
      type,
      id,
      businessId: business,
      parentId: parent,
      attrs: JSON.parse(attrs) as A,
      deletedAt: null,
    })),
  };
}
