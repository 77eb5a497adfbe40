import Database from 'better-sqlite3';
import { expect } from 'vitest';
import { openDestination } from '../../destinations/open-destination.js';
import { databaseOpeners } from '../../store/database-openers.js';
import { TABLES } from '../../destinations/tables.js';
import type { Sandbox } from '../../sandbox/server.js';
import { queryDatabase } from '../helpers/postgres.js';
import { hintBody, newSecret, post, standardHeaders } from './deliveries.js';

/**
 * The flood: deliveries with 20 % repeats of earlier ones, 5 % bad signatures and 1 %
 * malformed bodies, in phases; before each phase every target lead is edited at the sandbox
 * (`Flood <id> v<phase>`), so the order in which a record's states reach the destination can
 * be checked against the order the service made them. Shared by the in-process flood and the
 * one through two receiver and two worker processes on Postgres.
 */
export type Kind = 'valid' | 'duplicate' | 'bad-signature' | 'malformed';

export interface FloodItem {
  kind: Kind;
  /** The delivery id (a repeat carries the id of the delivery it repeats). */
  id: string;
  record: string;
}

export interface Flood {
  /** Deliveries per phase; edits go before each. */
  phases: FloodItem[][];
  /** One last valid delivery per target, after the last edit. */
  last: FloodItem[];
}

export function floodPlan(options: {
  total: number;
  phases: number;
  targets: readonly string[];
  /** Records bad deliveries name: they must never be read. */
  untouched: readonly string[];
  prefix: string;
}): Flood {
  const { total, targets, untouched, prefix } = options;
  const phases: FloodItem[][] = Array.from({ length: options.phases }, () => []);
  const valid: FloodItem[] = [];
  for (let i = 0; i < total; i += 1) {
    const roll = i % 100;
    const kind: Kind =
      roll < 20 && valid.length > 0
        ? 'duplicate'
        : roll < 25
          ? 'bad-signature'
          : roll < 26
            ? 'malformed'
            : 'valid';
    let item: FloodItem;
    if (kind === 'duplicate') item = { ...valid[(i * 7919) % valid.length]!, kind };
    else if (kind === 'valid') {
      item = { kind, id: `${prefix}_${i}`, record: targets[i % targets.length]! };
      valid.push(item);
    } else item = { kind, id: `${prefix}_bad_${i}`, record: untouched[i % untouched.length]! };
    phases[Math.floor((i * options.phases) / total)]!.push(item);
  }
  const last = targets.map((record) => ({
    kind: 'valid' as const,
    id: `${prefix}_last_${record}`,
    record,
  }));
  return { phases, last };
}

/** The item as a sender would post it: signed, or signed wrong, or not a delivery at all. */
export function sendItem(url: string, secret: string, item: FloodItem) {
  const body =
    item.kind === 'malformed'
      ? `{"id":"${item.id}","data":{"record_type":"lead","id":"${item.record}"`
      : hintBody(item.id, 'lead', item.record);
  const signedWith = item.kind === 'bad-signature' ? newSecret() : secret;
  return post(url, body, standardHeaders(signedWith, item.id, body));
}

export const floodName = (record: string, phase: number): string => `Flood ${record} v${phase}`;

/**
 * The sandbox's leads in id order, split as the flood uses them: the first 100 are edited and
 * noticed, the 50 from the 301st are named only by bad deliveries (never to be read).
 */
export function floodLeads(sb: Sandbox): { targets: string[]; untouched: string[] } {
  const ids = (
    sb.ctx.db
      .prepare("SELECT id FROM records WHERE type = 'lead' AND business_id = ? ORDER BY id")
      .all(sb.businessId) as { id: number }[]
  ).map((r) => String(r.id));
  return { targets: ids.slice(0, 100), untouched: ids.slice(300, 350) };
}

/** The statuses each kind must get: 2xx for deliveries and repeats, 4xx for bad ones. */
export function expectStatuses(statuses: ReadonlyMap<Kind, number[]>): void {
  expect(new Set(statuses.get('valid'))).toEqual(new Set([200]));
  expect(new Set(statuses.get('duplicate'))).toEqual(new Set([200]));
  expect(new Set(statuses.get('bad-signature'))).toEqual(new Set([401]));
  expect(new Set(statuses.get('malformed'))).toEqual(new Set([400]));
}

/**
 * Every write of a lead row, in order, kept by a trigger in the destination itself: what the
 * drains wrote, and when, without trusting their own counts.
 */
export async function logLeadWrites(destination: string): Promise<void> {
  const opened = openDestination(databaseOpeners, destination);
  await opened.ensureSchema([TABLES.leads]);
  await opened.close();
  if (destination.startsWith('sqlite:')) {
    const db = new Database(destination.slice('sqlite:'.length));
    db.exec(`
      CREATE TABLE lead_writes (n INTEGER PRIMARY KEY, id TEXT, first_name TEXT);
      CREATE TRIGGER lead_inserted AFTER INSERT ON leads
        BEGIN INSERT INTO lead_writes (id, first_name) VALUES (NEW.id, NEW.first_name); END;
      CREATE TRIGGER lead_updated AFTER UPDATE ON leads
        BEGIN INSERT INTO lead_writes (id, first_name) VALUES (NEW.id, NEW.first_name); END;`);
    db.close();
    return;
  }
  await queryDatabase(
    destination,
    `CREATE TABLE lead_writes (n bigserial PRIMARY KEY, id text, first_name text);
     CREATE FUNCTION log_lead_write() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN INSERT INTO lead_writes (id, first_name) VALUES (NEW.id, NEW.first_name);
       RETURN NEW; END $$;
     CREATE TRIGGER lead_written AFTER INSERT OR UPDATE ON leads
       FOR EACH ROW EXECUTE FUNCTION log_lead_write();`,
  );
}

/** The lead writes the trigger kept, by lead, in the order they were made. */
export async function leadWrites(destination: string): Promise<Map<string, (string | null)[]>> {
  let rows: { id: string; first_name: string | null }[];
  if (destination.startsWith('sqlite:')) {
    const db = new Database(destination.slice('sqlite:'.length), { readonly: true });
    rows = db.prepare('SELECT id, first_name FROM lead_writes ORDER BY n').all() as typeof rows;
    db.close();
  } else {
    rows = await queryDatabase(destination, 'SELECT id, first_name FROM lead_writes ORDER BY n');
  }
  const byLead = new Map<string, (string | null)[]>();
  for (const row of rows) byLead.set(row.id, [...(byLead.get(row.id) ?? []), row.first_name]);
  return byLead;
}

/**
 * Each target's writes after the first flood phase's edit: its states in the order the
 * service made them, each at most once (applied once in effect), ending with the last.
 */
export function expectInOrder(
  writes: ReadonlyMap<string, (string | null)[]>,
  targets: readonly string[],
  phases: number,
): void {
  for (const record of targets) {
    const versions = (writes.get(record) ?? [])
      .map((name) => /^Flood \d+ v(\d+)$/.exec(name ?? '')?.[1])
      .flatMap((v) => (v === undefined ? [] : [Number(v)]));
    expect(versions.length, `lead ${record}: ${versions.join(',')}`).toBeGreaterThan(0);
    // Strictly rising: never an older state after a newer one, never a state twice.
    expect(
      versions.every((v, i) => i === 0 || v > versions[i - 1]!),
      `lead ${record} written out of order or twice: ${versions.join(',')}`,
    ).toBe(true);
    expect(versions.at(-1), `lead ${record}`).toBe(phases);
  }
}

/** The inbox rows of a connection: delivery id → applied or not. */
export async function inboxRows(
  store: string,
  connectionId: string,
): Promise<Map<string, boolean>> {
  const sql = 'SELECT delivery_id, done_at FROM webhook_inbox WHERE connection_id = $1';
  let rows: { delivery_id: string; done_at: unknown }[];
  if (store.startsWith('sqlite:')) {
    const db = new Database(store.slice('sqlite:'.length), { readonly: true });
    rows = db.prepare(sql.replace('$1', '?')).all(connectionId) as typeof rows;
    db.close();
  } else {
    rows = await queryDatabase(store, sql, [connectionId]);
  }
  return new Map(rows.map((r) => [r.delivery_id, r.done_at !== null]));
}

/** Every delivery answered 2xx is in the inbox once and applied; no bad one is there at all. */
export async function expectInboxOf(
  store: string,
  connectionId: string,
  flood: Flood,
  /** The connection's rows, when they are to be narrowed first (default: all of them). */
  narrowed?: Map<string, boolean>,
): Promise<void> {
  const rows = narrowed ?? (await inboxRows(store, connectionId));
  const items = [...flood.phases.flat(), ...flood.last];
  const unique = new Set(items.filter((i) => i.kind === 'valid').map((i) => i.id));
  expect(rows.size).toBe(unique.size);
  expect([...unique].filter((id) => !rows.has(id))).toEqual([]);
  expect([...rows].filter(([, done]) => !done).map(([id]) => id)).toEqual([]);
  const bad = items.filter((i) => i.kind === 'bad-signature' || i.kind === 'malformed');
  expect(bad.filter((i) => rows.has(i.id)).map((i) => i.id)).toEqual([]);
}
