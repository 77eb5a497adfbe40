import Database from 'better-sqlite3';
import { closeSync, existsSync, openSync } from 'node:fs';
import type { Clock } from './clock.js';

/**
 * The sandbox's storage: one SQLite database per instance. Business records live in one
 * document table (`records`: type, id, owning business, optional parent, JSON attributes,
 * soft-delete time) so every resource shares ids, soft deletes and change notification;
 * identity and auth live in their own tables.
 */
export type Db = Database.Database;

export type RecordAttrs = Record<string, unknown>;

export interface StoredRecord<A extends RecordAttrs = RecordAttrs> {
  type: string;
  id: number;
  businessId: number;
  parentId: number | null;
  attrs: A;
  deletedAt: string | null;
}

export type ChangeAction = 'created' | 'updated' | 'deleted';
export interface Change {
  type: string;
  id: number;
  businessId: number;
  action: ChangeAction;
  occurredAt: string;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS sequences (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS businesses (
  id INTEGER PRIMARY KEY, name TEXT NOT NULL, time_zone TEXT NOT NULL DEFAULT 'America/New_York',
  currency TEXT NOT NULL DEFAULT 'USD', created_at TEXT NOT NULL, suspended INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS users (
  id INTEGER PRIMARY KEY, business_id INTEGER NOT NULL REFERENCES businesses(id),
  name TEXT NOT NULL, email TEXT NOT NULL, role TEXT NOT NULL, permissions TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS api_keys (
  id INTEGER PRIMARY KEY, key_hash TEXT NOT NULL UNIQUE, key_hint TEXT NOT NULL,
  business_id INTEGER NOT NULL, user_id INTEGER NOT NULL, name TEXT NOT NULL,
  permissions TEXT NOT NULL, created_at TEXT NOT NULL, last_used_at TEXT, revoked_at TEXT
);
CREATE TABLE IF NOT EXISTS oauth_apps (
  id INTEGER PRIMARY KEY, client_id TEXT NOT NULL UNIQUE, name TEXT NOT NULL,
  redirect_uris TEXT NOT NULL, permissions TEXT NOT NULL,
  legacy_app_id TEXT UNIQUE, legacy_secret_hash TEXT, created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS oauth_grants (
  id INTEGER PRIMARY KEY, app_id INTEGER NOT NULL, business_id INTEGER NOT NULL,
  user_id INTEGER NOT NULL, scope TEXT NOT NULL, created_at TEXT NOT NULL,
  revoked_at TEXT, revoked_reason TEXT
);
CREATE TABLE IF NOT EXISTS oauth_codes (
  code_hash TEXT PRIMARY KEY, grant_id INTEGER NOT NULL, redirect_uri TEXT NOT NULL,
  code_challenge TEXT NOT NULL, expires_at INTEGER NOT NULL, used_at INTEGER
);
CREATE TABLE IF NOT EXISTS oauth_tokens (
  token_hash TEXT PRIMARY KEY, grant_id INTEGER NOT NULL, kind TEXT NOT NULL,
  expires_at INTEGER, created_at INTEGER NOT NULL, used_at INTEGER, revoked_at INTEGER
);
CREATE INDEX IF NOT EXISTS oauth_tokens_grant ON oauth_tokens(grant_id);
-- A rowid table, not WITHOUT ROWID: its ~1 KB rows fit the table's leaf pages, where a
-- WITHOUT ROWID table would spill each into a mostly empty overflow page (3x the memory,
-- and much slower to fill and scan). (type, id) stays the primary key, as a unique index.
CREATE TABLE IF NOT EXISTS records (
  type TEXT NOT NULL, id INTEGER NOT NULL, business_id INTEGER NOT NULL,
  parent_id INTEGER, attrs TEXT NOT NULL, deleted_at TEXT,
  PRIMARY KEY (type, id)
);
CREATE INDEX IF NOT EXISTS records_business ON records(business_id, type, id);
CREATE INDEX IF NOT EXISTS records_parent ON records(type, parent_id, id);
-- Only the types listed by start time: over every record, building it parsed each lead's JSON.
-- A query uses it when it names the type as a literal (Records.list does).
CREATE INDEX IF NOT EXISTS records_starts_at
  ON records(business_id, type, json_extract(attrs, '$.starts_at'))
  WHERE type = 'event_booking' OR type = 'event' OR type = 'appointment';
CREATE TABLE IF NOT EXISTS webhook_endpoints (
  id INTEGER PRIMARY KEY, business_id INTEGER NOT NULL, url TEXT NOT NULL,
  secret TEXT NOT NULL, types TEXT, created_at TEXT NOT NULL, disabled_at TEXT
);
`;

const statements = new WeakMap<Db, Map<string, Database.Statement>>();

/**
 * A prepared statement, compiled once per database: for the paths that run per request or
 * per record (preparing costs tens of µs). Callers that switch a statement's mode (raw,
 * pluck) must own its text.
 */
export function sql(db: Db, text: string): Database.Statement {
  let cache = statements.get(db);
  if (!cache) statements.set(db, (cache = new Map<string, Database.Statement>()));
  let statement = cache.get(text);
  if (!statement) {
    // Bounded, in case a caller ever builds values into the text.
    if (cache.size >= 1000) cache.clear();
    cache.set(text, (statement = db.prepare(text)));
  }
  return statement;
}

/**
 * Runs a bulk write with some schema objects dropped (indexes, triggers: those of
 * sqlite_master matching `where`), then remakes them from their own stored definitions: one
 * sorted build per index instead of a b-tree update per row. Call it inside a transaction,
 * so nobody sees the tables without them.
 */
export function withSchemaDropped<T>(db: Db, where: string, bulk: () => T): T {
  const dropped = db
    .prepare(`SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND (${where})`)
    .all() as { type: 'index' | 'trigger'; name: string; sql: string }[];
  for (const { type, name } of dropped) {
    db.exec(`DROP ${type.toUpperCase()} "${name.replace(/"/g, '""')}"`);
  }
  try {
    return bulk();
  } finally {
    for (const { sql } of dropped) db.exec(sql);
  }
}

/** `file` is a path, or ':memory:' for a database that lives as long as the process. */
export function openDb(file: string): Db {
  // Its generated customers are customer-like data: a new file is owner-only, as ebsync's own
  // databases are (SQLite gives its -wal and -shm files the database's mode).
  // Where it cannot be made, SQLite's open below fails as it always did, and says why.
  if (file !== ':memory:' && !existsSync(file)) {
    try {
      closeSync(openSync(file, 'a', 0o600));
    } catch {
      // said below
    }
  }
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.exec(SCHEMA);
  return db;
}

interface Row {
  type: string;
  id: number;
  business_id: number;
  parent_id: number | null;
  attrs: string;
  deleted_at: string | null;
}

function fromRow<A extends RecordAttrs>(row: Row): StoredRecord<A> {
  return {
    type: row.type,
    id: row.id,
    businessId: row.business_id,
    parentId: row.parent_id,
    attrs: JSON.parse(row.attrs) as A,
    deletedAt: row.deleted_at,
  };
}

export interface ListQuery {
  /** Extra SQL condition over `attrs` (use json_extract(attrs, '$.field')) with `?` params. */
  where?: string;
  params?: readonly unknown[];
  parentId?: number;
  includeDeleted?: boolean;
  orderBy?: string;
  limit?: number;
  offset?: number;
}

/** The record store every resource module uses; it reports each change to listeners. */
export class Records {
  private readonly listeners = new Set<(change: Change) => void>();
  private readonly writes = new Map<string, number>();
  private readonly getStmt;
  private readonly insertStmt;
  private readonly updateStmt;
  private readonly nextIdStmt;

  /** `clock`: the sandbox's, so change times (webhooks' occurred_at) follow a moved clock. */
  constructor(
    readonly db: Db,
    private readonly clock: Clock,
  ) {
    this.getStmt = db.prepare<[string, number], Row>(
      'SELECT * FROM records WHERE type = ? AND id = ?',
    );
    this.insertStmt = db.prepare(
      'INSERT INTO records (type, id, business_id, parent_id, attrs) VALUES (?, ?, ?, ?, ?)',
    );
    this.updateStmt = db.prepare(
      'UPDATE records SET attrs = ?, deleted_at = ? WHERE type = ? AND id = ?',
    );
    this.nextIdStmt = db.prepare<[string], { value: number }>(
      `INSERT INTO sequences (name, value) VALUES (?, 1)
       ON CONFLICT(name) DO UPDATE SET value = value + 1 RETURNING value`,
    );
  }

  onChange(listener: (change: Change) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private emit(
    record: { type: string; id: number; businessId: number },
    action: ChangeAction,
  ): void {
    const change: Change = { ...record, action, occurredAt: this.clock.iso() };
    for (const listener of this.listeners) listener(change);
  }

  /**
   * Writes (of any kind) to records of a type since this store opened: caches of data
   * derived from them (the lead lists' page anchors) compare it to know they are stale.
   */
  writeCount(type: string): number {
    return this.writes.get(type) ?? 0;
  }

  /** For writers that bypass this store (the seed generator's bulk insert). */
  markWritten(type: string): void {
    this.writes.set(type, this.writeCount(type) + 1);
  }

  /** Next id of a sequence; ids are global per type, like a real database. */
  nextId(name: string): number {
    const row = this.nextIdStmt.get(name);
    if (!row) throw new Error(`sequence ${name} did not advance`);
    return row.value;
  }

  insert<A extends RecordAttrs>(
    type: string,
    businessId: number,
    build: (id: number) => A,
    options: { parentId?: number | null; silent?: boolean } = {},
  ): StoredRecord<A> {
    const id = this.nextId(type);
    const attrs = build(id);
    this.insertStmt.run(type, id, businessId, options.parentId ?? null, JSON.stringify(attrs));
    this.markWritten(type);
    const record = {
      type,
      id,
      businessId,
      parentId: options.parentId ?? null,
      attrs,
      deletedAt: null,
    };
    if (!options.silent) this.emit(record, 'created');
    return record;
  }

  /** A live record of this business, or undefined (other businesses' records are invisible). */
  get<A extends RecordAttrs = RecordAttrs>(
    type: string,
    businessId: number,
    id: number,
    options: { includeDeleted?: boolean } = {},
  ): StoredRecord<A> | undefined {
    const row = this.getStmt.get(type, id);
    if (!row || row.business_id !== businessId) return undefined;
    if (row.deleted_at && !options.includeDeleted) return undefined;
    return fromRow<A>(row);
  }

  update<A extends RecordAttrs>(record: StoredRecord<A>, patch: Partial<A>): StoredRecord<A> {
    const attrs = { ...record.attrs, ...patch };
    this.updateStmt.run(JSON.stringify(attrs), record.deletedAt, record.type, record.id);
    this.markWritten(record.type);
    const updated = { ...record, attrs };
    this.emit(updated, 'updated');
    return updated;
  }

  /**
   * `at`: the caller's clock time (ctx.clock.iso()). Not this store's clock: the seed
   * generator writes through this store with a clock of its own, frozen at each record's time.
   */
  softDelete(record: StoredRecord, at: string): void {
    this.updateStmt.run(JSON.stringify(record.attrs), at, record.type, record.id);
    this.markWritten(record.type);
    this.emit(record, 'deleted');
  }

  hardDelete(record: StoredRecord): void {
    sql(this.db, 'DELETE FROM records WHERE type = ? AND id = ?').run(record.type, record.id);
    this.markWritten(record.type);
    this.emit(record, 'deleted');
  }

  list<A extends RecordAttrs = RecordAttrs>(
    type: string,
    businessId: number,
    query: ListQuery = {},
  ): { records: StoredRecord<A>[]; total: number } {
    // The type as a literal, so the planner can use partial indexes (records_starts_at).
    const literal = /^[a-z_]+$/.test(type);
    const conditions = [literal ? `type = '${type}'` : 'type = ?', 'business_id = ?'];
    const params: unknown[] = literal ? [businessId] : [type, businessId];
    if (!query.includeDeleted) conditions.push('deleted_at IS NULL');
    if (query.parentId !== undefined) {
      conditions.push('parent_id = ?');
      params.push(query.parentId);
    }
    if (query.where) {
      conditions.push(`(${query.where})`);
      params.push(...(query.params ?? []));
    }
    const where = conditions.join(' AND ');
    const total = (
      sql(this.db, `SELECT count(*) AS n FROM records WHERE ${where}`).get(...params) as {
        n: number;
      }
    ).n;
    let text = `SELECT * FROM records WHERE ${where} ORDER BY ${query.orderBy ?? 'id'}`;
    const pageParams: unknown[] = [];
    if (query.limit !== undefined) {
      text += ' LIMIT ? OFFSET ?';
      pageParams.push(query.limit, query.offset ?? 0);
    }
    const rows = sql(this.db, text).all(...params, ...pageParams) as Row[];
    return { records: rows.map((row) => fromRow<A>(row)), total };
  }

  /** All live children of a parent, in id order. */
  children<A extends RecordAttrs = RecordAttrs>(type: string, parentId: number): StoredRecord<A>[] {
    return this.childrenOfMany<A>(type, [parentId]).get(parentId) ?? [];
  }

  /**
   * The live children of many parents by parent, each list in id order: one query where a
   * page of items would otherwise ask `children` once per item and type. The parent index is
   * named because, for the ORDER BY, the planner would otherwise walk every record of the type
   * by primary key.
   */
  childrenOfMany<A extends RecordAttrs = RecordAttrs>(
    type: string,
    parentIds: readonly number[],
  ): Map<number, StoredRecord<A>[]> {
    const byParent = new Map<number, StoredRecord<A>[]>();
    if (parentIds.length === 0) return byParent;
    const rows = sql(
      this.db,
      `SELECT * FROM records INDEXED BY records_parent WHERE type = ? AND parent_id IN (${parentIds.map(() => '?').join(',')}) AND deleted_at IS NULL ORDER BY id`,
    ).all(type, ...parentIds) as Row[];
    for (const row of rows) {
      const parent = row.parent_id ?? -1;
      let list = byParent.get(parent);
      if (!list) byParent.set(parent, (list = []));
      list.push(fromRow<A>(row));
    }
    return byParent;
  }
}
