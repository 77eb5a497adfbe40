import { LEAD_BOOKING_INCLUDES, type LeadBookingInclude } from '../../api/schemas/lead-bookings.js';
import { canReadPricing, type Caller } from '../auth.js';
import type { Handlers, SandboxContext } from '../context.js';
import { sql, withSchemaDropped, type Db, type RecordAttrs, type StoredRecord } from '../db.js';
import {
  item,
  listBody,
  money,
  ok,
  paging,
  parseInclude,
  reachWindow,
  refList,
  refOne,
  sideload,
  single,
  type Item,
} from '../envelope.js';
import { badRequest, notFound } from '../errors.js';
import {
  addDays,
  businessTimeZone,
  formattedRanges,
  fromZoned,
  longDate,
  parseTime12,
  parseYmd,
  time12,
  ymdOf,
  zonedIso,
  type DateParts,
} from '../time.js';
import type { LeadAttrs } from './leads-model.js';
import { getBackdrop, getPackage } from './offerings.js';
import { BodyFields } from '../body-fields.js';

/**
 * Lead bookings: the package/date selections attached to a lead (a lead's first live booking
 * is its primary one, whose fields the lead list flattens into the lead).
 *
 * Record types (all owned by the business; parent in brackets):
 * - `lead_booking` [lead]: LeadBookingAttrs below. `starts_at`/`ends_at` are zoned ISO strings
 *   in the business time zone (so their first 10 characters are the local event date, which
 *   the date filters compare on); `starts_at_date`/`starts_at_minutes` keep what was asked for
 *   separately, because a booking may have a date without a time, or a package without a date.
 * - `lead_add_on` [lead_booking]: { id, lead_booking_id, add_on_id, name, quantity,
 *   price_cents } — price_cents is the add-on's unit price when it was added.
 * - `lead_extra` [lead_booking] and `lead_booking_extra_category` [lead_booking]: no operation
 *   creates them; the seed generator may insert them ({ id, name, ... } with lead_extras
 *   carrying lead_booking_extra_category_id), and they are then listed and sideloaded.
 * The booking's backdrop is `photobooth_background_id` on the booking itself (one at most).
 */
export interface LeadBookingAttrs extends RecordAttrs {
  id: number;
  lead_id: number;
  brand_id: number;
  /** The package. */
  event_type_id: number | null;
  /** The service. */
  event_category_id: number | null;
  package_group_id: number | null;
  /** Package name. */
  name: string | null;
  service_name: string | null;
  package_group_name: string | null;
  starts_at_date: string | null;
  starts_at_minutes: number | null;
  starts_at: string | null;
  ends_at: string | null;
  length_in_minutes: number | null;
  length_in_days: number | null;
  units: number | null;
  package_unit_range_id: number | null;
  staff_id: number | null;
  staff_name: string | null;
  photobooth_background_id: number | null;
  preview_image: string;
  created_at: string;
}

export interface LeadAddOnAttrs extends RecordAttrs {
  id: number;
  lead_booking_id: number;
  add_on_id: number;
  name: string;
  quantity: number;
  price_cents: number;
}

/** The fields a booking is created or updated with; a key that is present changes (null clears). */
export interface LeadBookingInput {
  event_type_id?: number | null;
  event_category_id?: number | null;
  package_group_id?: number | null;
  /** YYYY-MM-DD */
  starts_at_date?: string | null;
  /** '6:00 PM' (or '18:00') */
  starts_at_time?: string | null;
  length_in_minutes?: number | null;
  length_in_days?: number | null;
  units?: number | null;
  package_unit_range_id?: number | null;
  staff_id?: number | null;
}

export const DEFAULT_PREVIEW_IMAGE = '/images/packages/default.jpg';

/** A user of the business who can be assigned to work (customers cannot). */
export function staffMember(
  ctx: SandboxContext,
  businessId: number,
  id: number,
): { id: number; name: string; email: string } | undefined {
  return sql(
    ctx.db,
    "SELECT id, name, email FROM users WHERE id = ? AND business_id = ? AND role != 'customer'",
  ).get(id, businessId) as { id: number; name: string; email: string } | undefined;
}

export type ReferenceKind = 'package' | 'service' | 'package_group' | 'staff';

/** Whether an id sent in a body names a live record of the business. */
export function referenceExists(
  ctx: SandboxContext,
  businessId: number,
  kind: ReferenceKind,
  id: number,
): boolean {
  if (kind === 'staff') return staffMember(ctx, businessId, id) !== undefined;
  return ctx.records.get(kind, businessId, id) !== undefined;
}

/** Reads the booking fields of an update or add-to-lead body; throws 422 listing every problem. */
export function readLeadBookingInput(
  ctx: SandboxContext,
  businessId: number,
  body: Record<string, unknown>,
): LeadBookingInput {
  const f = new BodyFields(body);
  const input: LeadBookingInput = {};
  const refs: [keyof LeadBookingInput, ReferenceKind][] = [
    ['event_type_id', 'package'],
    ['event_category_id', 'service'],
    ['package_group_id', 'package_group'],
    ['staff_id', 'staff'],
  ];
  for (const [name, kind] of refs) {
    const value = f.integer(name);
    if (value === undefined) continue;
    if (value !== null && !referenceExists(ctx, businessId, kind, value)) {
      f.errors.add(name, 'must exist');
      continue;
    }
    (input as Record<string, unknown>)[name] = value;
  }
  const date = f.date('starts_at_date');
  if (date !== undefined) input.starts_at_date = date;
  const time = f.time('starts_at_time');
  if (time !== undefined) input.starts_at_time = time;
  for (const name of [
    'length_in_minutes',
    'length_in_days',
    'units',
    'package_unit_range_id',
  ] as const) {
    const value = f.integer(name);
    if (value !== undefined) input[name] = value;
  }
  f.errors.throwIfAny();
  return input;
}

// ---------------------------------------------------------------------------------------------
// Indexes

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
  const total =
    filters.length === 0
      ? ((
          sql(ctx.db, 'SELECT live FROM lead_counts WHERE type = ? AND business_id = ?').get(
            type,
            businessId,
          ) as { live: number } | undefined
        )?.live ?? 0)
      : (
          sql(ctx.db, `SELECT count(*) AS n FROM ${table} WHERE ${where}`).get(...params) as {
            n: number;
          }
        ).n;
  if (window.limit === 0) return { records: [], total };
  const from = filters.length === 0 ? seek(ctx, type, table, businessId, window.offset) : undefined;
  // One statement: the page's ids from the side table, then their rows by primary key. Raw
  // rows (arrays), since a page is 100 of them.
  const rows = sql(
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
    ) as [number, number, number | null, string][];
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

// ---------------------------------------------------------------------------------------------
// Creating and changing bookings

function nameOf(ctx: SandboxContext, type: string, businessId: number, id: number | null) {
  if (id === null) return null;
  const record = ctx.records.get(type, businessId, id);
  return typeof record?.attrs.name === 'string' ? record.attrs.name : null;
}

/** starts_at/ends_at from the requested date, time and length, in the business time zone. */
function schedule(
  attrs: LeadBookingAttrs,
  timeZone: string,
): Pick<LeadBookingAttrs, 'starts_at' | 'ends_at'> {
  return scheduleOf(parseYmd(attrs.starts_at_date), attrs, timeZone);
}

/** schedule() for a date already parsed (the seed generator has one). */
export function scheduleOf(
  date: DateParts | undefined | null,
  attrs: Pick<LeadBookingAttrs, 'starts_at_minutes' | 'length_in_minutes' | 'length_in_days'>,
  timeZone: string,
): Pick<LeadBookingAttrs, 'starts_at' | 'ends_at'> {
  if (!date) return { starts_at: null, ends_at: null };
  const startMs = fromZoned(date, attrs.starts_at_minutes ?? 0, timeZone);
  const minutes =
    attrs.length_in_minutes ?? (attrs.length_in_days !== null ? attrs.length_in_days * 1440 : null);
  return {
    starts_at: zonedIso(startMs, timeZone),
    ends_at: minutes === null ? null : zonedIso(startMs + minutes * 60_000, timeZone),
  };
}

/** Applies the sent fields to a booking and recomputes what depends on them. */
function resolveBooking(
  ctx: SandboxContext,
  businessId: number,
  current: LeadBookingAttrs,
  input: LeadBookingInput,
  creating: boolean,
): LeadBookingAttrs {
  const next: LeadBookingAttrs = { ...current };
  const has = (key: keyof LeadBookingInput) => Object.hasOwn(input, key);
  for (const key of [
    'event_type_id',
    'event_category_id',
    'package_group_id',
    'starts_at_date',
    'length_in_minutes',
    'length_in_days',
    'units',
    'package_unit_range_id',
    'staff_id',
  ] as const) {
    if (has(key)) (next as Record<string, unknown>)[key] = input[key] ?? null;
  }
  if (has('starts_at_time')) {
    next.starts_at_minutes =
      input.starts_at_time === null ? null : (parseTime12(input.starts_at_time) ?? null);
  }
  if (has('event_type_id')) {
    const pkg =
      next.event_type_id === null
        ? undefined
        : getPackage(ctx.records, businessId, next.event_type_id);
    next.name = pkg?.attrs.name ?? null;
    next.preview_image = pkg?.attrs.preview_image ?? DEFAULT_PREVIEW_IMAGE;
    if (pkg) {
      // A package belongs to one group and service; they follow it unless sent too.
      if (!has('event_category_id')) next.event_category_id = pkg.attrs.service_id;
      if (!has('package_group_id')) next.package_group_id = pkg.attrs.package_group_id;
      if (creating && !has('length_in_minutes') && !has('length_in_days')) {
        next.length_in_minutes = pkg.attrs.default_length_in_minutes;
      }
    }
  }
  if (has('event_type_id') || has('event_category_id')) {
    next.service_name = nameOf(ctx, 'service', businessId, next.event_category_id);
  }
  if (has('event_type_id') || has('package_group_id')) {
    next.package_group_name = nameOf(ctx, 'package_group', businessId, next.package_group_id);
  }
  if (has('staff_id')) {
    next.staff_name =
      next.staff_id === null ? null : (staffMember(ctx, businessId, next.staff_id)?.name ?? null);
  }
  return { ...next, ...schedule(next, businessTimeZone(ctx.db, businessId)) };
}

/**
 * Adds a booking to a lead. Callers validate the input first (readLeadBookingInput does for
 * HTTP); the package's default length applies when no length is given.
 */
export function addLeadBooking(
  ctx: SandboxContext,
  lead: StoredRecord<LeadAttrs>,
  input: LeadBookingInput,
  options: { touchLead?: boolean } = {},
): StoredRecord<LeadBookingAttrs> {
  const record = ctx.records.insert<LeadBookingAttrs>(
    'lead_booking',
    lead.businessId,
    (id) =>
      resolveBooking(
        ctx,
        lead.businessId,
        {
          id,
          lead_id: lead.id,
          brand_id: lead.attrs.brand_id,
          event_type_id: null,
          event_category_id: null,
          package_group_id: null,
          name: null,
          service_name: null,
          package_group_name: null,
          starts_at_date: null,
          starts_at_minutes: null,
          starts_at: null,
          ends_at: null,
          length_in_minutes: null,
          length_in_days: null,
          units: null,
          package_unit_range_id: null,
          staff_id: null,
          staff_name: null,
          photobooth_background_id: null,
          preview_image: DEFAULT_PREVIEW_IMAGE,
          created_at: ctx.clock.iso(),
        },
        { event_type_id: null, ...input },
        true,
      ),
    { parentId: lead.id },
  );
  if (options.touchLead) touchLead(ctx, lead.businessId, lead.id);
  return record;
}

export function updateLeadBooking(
  ctx: SandboxContext,
  record: StoredRecord<LeadBookingAttrs>,
  input: LeadBookingInput,
): StoredRecord<LeadBookingAttrs> {
  const next = resolveBooking(ctx, record.businessId, record.attrs, input, false);
  const updated = ctx.records.update(record, next);
  touchLead(ctx, record.businessId, record.attrs.lead_id);
  return updated;
}

/**
 * A booking change alters the lead's flattened fields, so the lead reports a change too
 * (webhook consumers re-read the lead, whose list form would otherwise go stale).
 */
function touchLead(ctx: SandboxContext, businessId: number, leadId: number): void {
  const lead = ctx.records.get('lead', businessId, leadId);
  if (lead) ctx.records.update(lead, {});
}

/** Live bookings of the given leads, in id order (so a lead's first is its primary). */
export function bookingsOfLeads(
  ctx: SandboxContext,
  leadIds: readonly number[],
): Map<number, StoredRecord<LeadBookingAttrs>[]> {
  const byLead = new Map<number, StoredRecord<LeadBookingAttrs>[]>();
  if (leadIds.length === 0) return byLead;
  const rows = sql(
    ctx.db,
    `SELECT id, business_id, parent_id, attrs FROM records INDEXED BY records_parent
       WHERE type = 'lead_booking' AND parent_id IN (${leadIds.map(() => '?').join(',')})
         AND deleted_at IS NULL ORDER BY id`,
  )
    .raw()
    .all(...leadIds) as [number, number, number, string][];
  for (const [id, business, parent, attrs] of rows) {
    let list = byLead.get(parent);
    if (!list) byLead.set(parent, (list = []));
    list.push({
      type: 'lead_booking',
      id,
      businessId: business,
      parentId: parent,
      attrs: JSON.parse(attrs) as LeadBookingAttrs,
      deletedAt: null,
    });
  }
  return byLead;
}

// ---------------------------------------------------------------------------------------------
// Serializing

/** Per-request lookups shared by the serializers (time zone, pricing, leads, brands). */
export class LeadView {
  readonly timeZone: string;
  readonly currency: string;
  private readonly leads = new Map<number, StoredRecord<LeadAttrs> | undefined>();
  private readonly brands = new Map<number, string | null>();

  constructor(
    readonly ctx: SandboxContext,
    readonly businessId: number,
    readonly pricing: boolean,
  ) {
    this.timeZone = businessTimeZone(ctx.db, businessId);
    const row = sql(ctx.db, 'SELECT currency FROM businesses WHERE id = ?').get(businessId) as
      { currency: string } | undefined;
    this.currency = row?.currency ?? 'USD';
  }

  static of(ctx: SandboxContext, caller: Caller): LeadView {
    return new LeadView(ctx, caller.businessId, canReadPricing(caller));
  }

  lead(id: number): StoredRecord<LeadAttrs> | undefined {
    if (!this.leads.has(id)) {
      this.leads.set(id, this.ctx.records.get<LeadAttrs>('lead', this.businessId, id));
    }
    return this.leads.get(id);
  }

  brandName(id: number): string | null {
    if (!this.brands.has(id)) this.brands.set(id, nameOf(this.ctx, 'brand', this.businessId, id));
    return this.brands.get(id) ?? null;
  }

  /** ms since the epoch of a stored zoned timestamp, or null. */
  static ms(iso: string | null): number | null {
    if (iso === null) return null;
    const ms = Date.parse(iso);
    return Number.isNaN(ms) ? null : ms;
  }

  /** formatted_* strings of a booking: empty without a date, date only without a time. */
  ranges(booking: LeadBookingAttrs): ReturnType<typeof formattedRanges> {
    const start = LeadView.ms(booking.starts_at);
    const end = LeadView.ms(booking.ends_at);
    if (start === null || booking.starts_at_minutes === null || end !== null) {
      return formattedRanges(start, end, this.timeZone, booking.starts_at_minutes !== null);
    }
    // A time and no length: the start alone.
    const at = time12(start, this.timeZone);
    return {
      formatted_date_range: longDate(start, this.timeZone),
      formatted_time_range: at,
      formatted_datetime_range: `${longDate(start, this.timeZone)} ${at}`,
    };
  }
}

/** The lead's name as staff see it: person, else company, else e-mail. */
export function leadDisplayName(
  lead: Pick<LeadAttrs, 'first_name' | 'last_name' | 'company_name' | 'email'>,
): string {
  const person = [lead.first_name, lead.last_name].filter(Boolean).join(' ').trim();
  return person || lead.company_name || lead.email;
}

/** Minutes after midnight → '6:00 PM'. */
function formattedUnits(units: number | null): string {
  if (units === null) return '';
  return `${units} ${units === 1 ? 'unit' : 'units'}`;
}

export function leadBookingAttributes(view: LeadView, record: StoredRecord<LeadBookingAttrs>) {
  const a = record.attrs;
  const lead = view.lead(a.lead_id);
  const who = lead ? leadDisplayName(lead.attrs) : '';
  const ranges = view.ranges(a);
  return {
    id: a.id,
    lead_id: a.lead_id,
    event_type_id: a.event_type_id,
    starts_at: a.starts_at,
    ends_at: a.ends_at,
    staff_id: a.staff_id,
    staff_name: a.staff_name,
    name: a.name,
    service_name: a.service_name,
    package_group_name: a.package_group_name,
    title: a.name ? `${who} - ${a.name}` : who,
    brand_name: view.brandName(a.brand_id),
    date_mode: 'date_time',
    length_in_minutes: a.length_in_minutes,
    length_in_days: a.length_in_days,
    units: a.units,
    package_unit_range_id: a.package_unit_range_id,
    // The sandbox has no unit-range records to describe; the id round-trips.
    event_type_unit_range: null,
    formatted_date_range: ranges.formatted_date_range,
    formatted_time_range: ranges.formatted_time_range,
    formatted_units: formattedUnits(a.units),
    preview_image: a.preview_image,
  };
}

function extraCategoryExtras(ctx: SandboxContext, record: StoredRecord): StoredRecord[] {
  return ctx.records
    .children('lead_extra', record.parentId ?? -1)
    .filter((extra) => extra.attrs.lead_booking_extra_category_id === record.id);
}

export function leadBookingItem(view: LeadView, record: StoredRecord<LeadBookingAttrs>): Item {
  const { ctx } = view;
  return item('lead_booking', leadBookingAttributes(view, record), {
    lead_add_ons: refList(
      'lead_add_on',
      ctx.records.children('lead_add_on', record.id).map((r) => r.id),
    ),
    lead_extras: refList(
      'lead_extra',
      ctx.records.children('lead_extra', record.id).map((r) => r.id),
    ),
    lead_booking_extra_categories: refList(
      'lead_booking_extra_category',
      ctx.records.children('lead_booking_extra_category', record.id).map((r) => r.id),
    ),
    photobooth_background: refOne('photobooth_background', record.attrs.photobooth_background_id),
  });
}

export function leadAddOnItem(view: LeadView, record: StoredRecord<LeadAddOnAttrs>): Item {
  const a = record.attrs;
  return item(
    'lead_add_on',
    {
      id: a.id,
      lead_booking_id: a.lead_booking_id,
      add_on_id: a.add_on_id,
      name: a.name,
      quantity: a.quantity,
      ...money('price', view.pricing ? a.price_cents : null, view.currency),
    },
    { add_on: refOne('add_on', a.add_on_id) },
  );
}

/** Sideloaded records for bookings, each once. */
export function leadBookingIncluded(
  view: LeadView,
  bookings: readonly StoredRecord<LeadBookingAttrs>[],
  include: ReadonlySet<LeadBookingInclude>,
): Item[] {
  const { ctx } = view;
  const out = new Map<string, Item>();
  const add = (it: Item) => out.set(`${it.type}:${it.id}`, it);
  const plain = (type: string, r: StoredRecord) => item(type, { ...r.attrs, id: r.id });
  for (const booking of bookings) {
    if (include.has('lead_add_ons')) {
      for (const r of ctx.records.children<LeadAddOnAttrs>('lead_add_on', booking.id)) {
        add(leadAddOnItem(view, r));
      }
    }
    if (include.has('lead_extras')) {
      for (const r of ctx.records.children('lead_extra', booking.id)) add(plain('lead_extra', r));
    }
    const nested = include.has('lead_booking_extra_categories.lead_extras');
    if (include.has('lead_booking_extra_categories') || nested) {
      for (const category of ctx.records.children('lead_booking_extra_category', booking.id)) {
        const extras = extraCategoryExtras(ctx, category);
        const it = plain('lead_booking_extra_category', category);
        it.relationships = {
          lead_extras: refList(
            'lead_extra',
            extras.map((e) => e.id),
          ),
        };
        add(it);
        if (nested) for (const extra of extras) add(plain('lead_extra', extra));
      }
    }
    const backdropId = booking.attrs.photobooth_background_id;
    if (include.has('photobooth_background') && backdropId !== null) {
      const backdrop = getBackdrop(ctx.records, booking.businessId, backdropId);
      if (backdrop) add(item('photobooth_background', backdrop.attrs));
    }
  }
  return [...out.values()];
}

// ---------------------------------------------------------------------------------------------
// Handlers

function dateParam(query: Record<string, unknown>, name: string): string | undefined {
  const raw = query[name];
  if (raw === undefined || raw === '') return undefined;
  if (typeof raw !== 'string' || !parseYmd(raw)) {
    throw badRequest('invalid_parameter', `${name} must be a date formatted YYYY-MM-DD`);
  }
  return raw.trim();
}

function nextDay(date: string): string {
  const parts = parseYmd(date);
  return parts ? ymdOf(addDays(parts, 1)) : date;
}

function getBooking(
  ctx: SandboxContext,
  businessId: number,
  params: Record<string, string>,
): StoredRecord<LeadBookingAttrs> {
  const id = Number(params.lead_booking_id);
  const record = ctx.records.get<LeadBookingAttrs>('lead_booking', businessId, id);
  if (!record) throw notFound('Lead booking', id);
  return record;
}

function bookingBody(
  view: LeadView,
  record: StoredRecord<LeadBookingAttrs>,
  include: Set<LeadBookingInclude>,
) {
  return single(
    leadBookingItem(view, record),
    sideload(include, () => leadBookingIncluded(view, [record], include)),
  );
}

function listLeadBookings(ctx: SandboxContext, caller: Caller, query: Record<string, unknown>) {
  const include = parseInclude(query.include, LEAD_BOOKING_INCLUDES);
  const start = dateParam(query, 'event_date_start');
  const end = dateParam(query, 'event_date_end');
  const filters: IndexFilter[] = [];
  if (start !== undefined) filters.push({ where: 'starts_at >= ?', params: [start] });
  if (end !== undefined) {
    // starts_at is local time with an offset, so its date part compares as the local date.
    filters.push({ where: 'starts_at < ?', params: [nextDay(end)] });
  }
  const brandRaw = query.brand_id;
  if (brandRaw !== undefined && brandRaw !== '') {
    if (typeof brandRaw !== 'string' || !/^\d{1,15}$/.test(brandRaw)) {
      throw badRequest('invalid_parameter', 'brand_id must be a positive integer');
    }
    filters.push({ where: 'brand_id = ?', params: [Number(brandRaw)] });
  }
  const p = paging(query, ctx.limits);
  const { records, total } = pageOfRecords<LeadBookingAttrs>(
    ctx,
    'lead_booking',
    caller.businessId,
    filters,
    reachWindow(p, ctx.limits),
  );
  const view = LeadView.of(ctx, caller);
  return listBody(
    records.map((r) => leadBookingItem(view, r)),
    total,
    p,
    sideload(include, () => leadBookingIncluded(view, records, include)),
  );
}

export function leadBookingsHandlers(): Handlers {
  return {
    'leadBookings.list': ({ ctx, caller, query }) => listLeadBookings(ctx, caller, query),

    'leadBookings.get': ({ ctx, caller, params, query }) => {
      const include = parseInclude(query.include, LEAD_BOOKING_INCLUDES);
      const record = getBooking(ctx, caller.businessId, params);
      return bookingBody(LeadView.of(ctx, caller), record, include);
    },

    'leadBookings.update': ({ ctx, caller, params, body }) => {
      const record = getBooking(ctx, caller.businessId, params);
      const input = readLeadBookingInput(ctx, caller.businessId, body as Record<string, unknown>);
      const updated = updateLeadBooking(ctx, record, input);
      return bookingBody(LeadView.of(ctx, caller), updated, new Set());
    },

    'leadBookings.remove': ({ ctx, caller, params }) => {
      const record = getBooking(ctx, caller.businessId, params);
      ctx.records.softDelete(record, ctx.clock.iso());
      touchLead(ctx, record.businessId, record.attrs.lead_id);
      return ok();
    },

    'leadBookings.addToLead': ({ ctx, caller, params, body }) => {
      const leadId = Number(params.lead_id);
      const lead = ctx.records.get<LeadAttrs>('lead', caller.businessId, leadId);
      if (!lead) throw notFound('Lead', leadId);
      const input = readLeadBookingInput(ctx, caller.businessId, body as Record<string, unknown>);
      const record = addLeadBooking(ctx, lead, input, { touchLead: true });
      return bookingBody(LeadView.of(ctx, caller), record, new Set());
    },

    'leadBookings.addAddOn': ({ ctx, caller, params, body }) => {
      const booking = getBooking(ctx, caller.businessId, params);
      const f = new BodyFields(body as Record<string, unknown>);
      const addOnId = f.integer('add_on_id');
      const quantity = f.integer('quantity') ?? 1;
      if (addOnId === null || (addOnId === undefined && !f.sent('add_on_id'))) {
        f.errors.add('add_on_id', "can't be blank");
      }
      const addOn =
        typeof addOnId === 'number'
          ? ctx.records.get('add_on', caller.businessId, addOnId)
          : undefined;
      if (typeof addOnId === 'number' && !addOn) f.errors.add('add_on_id', 'must exist');
      f.errors.throwIfAny();
      if (!addOn) throw new Error('unreachable: add-on checked above');
      // The same add-on again adds to the quantity rather than making a second line.
      const existing = ctx.records
        .children<LeadAddOnAttrs>('lead_add_on', booking.id)
        .find((r) => r.attrs.add_on_id === addOn.id);
      const record = existing
        ? ctx.records.update(existing, { quantity: existing.attrs.quantity + quantity })
        : ctx.records.insert<LeadAddOnAttrs>(
            'lead_add_on',
            caller.businessId,
            (id) => ({
              id,
              lead_booking_id: booking.id,
              add_on_id: addOn.id,
              name: typeof addOn.attrs.name === 'string' ? addOn.attrs.name : '',
              quantity,
              price_cents:
                typeof addOn.attrs.price_cents === 'number' ? addOn.attrs.price_cents : 0,
            }),
            { parentId: booking.id },
          );
      ctx.records.update(booking, {});
      return single(leadAddOnItem(LeadView.of(ctx, caller), record));
    },

    'leadBookings.setBackdrop': ({ ctx, caller, params, body }) => {
      const booking = getBooking(ctx, caller.businessId, params);
      const f = new BodyFields(body as Record<string, unknown>);
      const backdropId = f.integer('photobooth_background_id');
      if (
        backdropId === null ||
        (backdropId === undefined && !f.sent('photobooth_background_id'))
      ) {
        f.errors.add('photobooth_background_id', "can't be blank");
      }
      if (
        typeof backdropId === 'number' &&
        !getBackdrop(ctx.records, caller.businessId, backdropId)
      ) {
        f.errors.add('photobooth_background_id', 'must exist');
      }
      f.errors.throwIfAny();
      const updated = ctx.records.update(booking, {
        photobooth_background_id: backdropId ?? null,
      });
      return bookingBody(LeadView.of(ctx, caller), updated, new Set(['photobooth_background']));
    },

    'leadBookings.removeBackdrop': ({ ctx, caller, params }) => {
      const booking = getBooking(ctx, caller.businessId, params);
      if (booking.attrs.photobooth_background_id !== null) {
        ctx.records.update(booking, { photobooth_background_id: null });
      }
      return ok();
    },
  };
}
