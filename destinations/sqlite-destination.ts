import { statSync } from 'node:fs';
import type Database from 'better-sqlite3';
import { sqliteIdentity } from '../config/database-locations.js';
import type { DatabaseOpeners } from './database-openers.js';
import type { Destination, SchemaChanges, UpsertResult } from './destination.js';
import { toDestinationError } from './errors.js';
import type { ColumnType, JsonValue, MirrorRecord, Resource } from './record.js';
import { checkBatch, unfitRefusals } from './record-values.js';
import {
  columnDefinitions,
  planTable,
  quoteIdentifier,
  type TablePlan,
  type TypeNames,
} from './schema-plan.js';
import { TABLES, type TableSpec } from './tables.js';

/** STRICT tables: SQLite refuses a value of another type instead of storing it anyway. */
const TYPES: TypeNames = {
  text: 'TEXT',
  integer: 'INTEGER',
  cents: 'INTEGER',
  timestamp: 'TEXT',
  date: 'TEXT',
  boolean: 'INTEGER',
  number: 'REAL',
  json: 'TEXT',
};

const q = quoteIdentifier;

/** Which file is at the path now (device and inode), or undefined when none is. */
function fileIdentity(file: string): string | undefined {
  if (file === ':memory:') return file;
  const stat = statSync(file, { throwIfNoEntry: false });
  return stat ? `${stat.dev}:${stat.ino}` : undefined;
}

/** A checked value as SQLite binds it: checkBatch calls it for values only, never for a null. */
function toSqlite(type: ColumnType, value: JsonValue): string | number {
  if (type === 'json') return JSON.stringify(value);
  if (typeof value === 'boolean') return value ? 1 : 0;
  return value as string | number;
}

/**
 * A rowid table with `id` as a unique key, not WITHOUT ROWID: a record of a few KB fits a
 * rowid table's leaf page, where a WITHOUT ROWID table keeps only about a quarter page of
 * each row in the tree and spills the rest into an overflow page of its own, so every upsert
 * touched two pages and the tree grew tall. Tables created before stay as they are; the same
 * statements serve both.
 */
function createTableSql(plan: TablePlan): string {
  const columns = columnDefinitions(plan, TYPES);
  return `CREATE TABLE ${q(plan.table.table)} (\n  ${columns.join(',\n  ')}\n) STRICT`;
}

function indexSql(table: TableSpec): string[] {
  return table.columns
    .filter((c) => c.indexed)
    .map(
      (c) =>
        `CREATE INDEX IF NOT EXISTS ${q(`${table.table}_${c.name}_idx`)} ON ${q(table.table)} (${q(c.name)})`,
    );
}

interface TableWriter {
  upsert: Database.Statement;
  existing: Database.Statement<[string], { id: string }>;
  markDeleted: Database.Statement;
  markedAt: Database.Statement<[string, string], { n: number }>;
}

/**
 * Mirrors into one SQLite file (WAL): one STRICT table per resource, timestamps as UTC ISO
 * text, booleans as 0/1, JSON as text. The file can be read while ebsync writes it.
 */
export function openSqliteDestination(openers: DatabaseOpeners, file: string): Destination {
  const open = (): Database.Database => {
    try {
      return openers.openSqliteFile(file);
    } catch (error) {
      throw toDestinationError('SQLite', error);
    }
  };
  let db = open();
  /** The file this handle has open; a removed or replaced file has another (or none). */
  let opened = fileIdentity(file);
  const writers = new Map<TableSpec, TableWriter>();
  /** The spec each resource was last ensured with: upserts write its columns. */
  const ensured = new Map<Resource, TableSpec>();

  /**
   * The handle of the file now at the path. A handle outlives the file it opened: after the
   * user removed the mirror's file (to start over), writes through the old handle would land
   * in a file no one can see. So each call first looks at the path (one stat), and a file
   * removed or replaced is opened anew, its tables made again (the ledger is told so).
   */
  const current = (): void => {
    const now = fileIdentity(file);
    if (now !== undefined && now === opened) return;
    try {
      if (db.open) db.close();
    } catch {
      // The old file is gone: nothing of it is needed any more.
    }
    writers.clear();
    ensured.clear();
    db = open();
    opened = fileIdentity(file);
    tx = transactionsOf(db);
  };

  const writerFor = (table: TableSpec): TableWriter => {
    const cached = writers.get(table);
    if (cached) return cached;
    const t = q(table.table);
    const names = table.columns.map((c) => q(c.name));
    const writer: TableWriter = {
      upsert: db.prepare(
        `INSERT INTO ${t} (id, record, deleted_at, synced_at${names.map((n) => `, ${n}`).join('')})
         VALUES (?, ?, NULL, ?${names.map(() => ', ?').join('')})
         ON CONFLICT (id) DO UPDATE SET record = excluded.record, deleted_at = NULL,
           synced_at = excluded.synced_at${names.map((n) => `, ${n} = excluded.${n}`).join('')}
         WHERE deleted_at IS NOT NULL OR record IS NOT excluded.record${names
           .map((n) => ` OR ${n} IS NOT excluded.${n}`)
           .join('')}`,
      ),
      existing: db.prepare(`SELECT id FROM ${t} WHERE id IN (SELECT value FROM json_each(?))`),
      markDeleted: db.prepare(
        `UPDATE ${t} SET deleted_at = ?, synced_at = ?
         WHERE deleted_at IS NULL AND id IN (SELECT value FROM json_each(?))`,
      ),
      markedAt: db.prepare<[string, string], { n: number }>(
        `SELECT count(*) AS n FROM ${t}
         WHERE deleted_at = ? AND id IN (SELECT value FROM json_each(?))`,
      ),
    };
    writers.set(table, writer);
    return writer;
  };

  const ensureIn = (tables: readonly TableSpec[]): SchemaChanges => {
    const createdTables: string[] = [];
    const addedColumns: string[] = [];
    for (const table of tables) {
      const info = db
        .prepare<[], { name: string; type: string }>(`PRAGMA table_info(${q(table.table)})`)
        .all();
      const existing = info.length ? new Map(info.map((c) => [c.name, c.type])) : undefined;
      const plan = planTable(table, existing, TYPES);
      if (plan.create) {
        db.exec(createTableSql(plan));
        createdTables.push(table.table);
      }
      for (const column of plan.add) {
        db.exec(`ALTER TABLE ${q(table.table)} ADD COLUMN ${q(column.name)} ${TYPES[column.type]}`);
        addedColumns.push(`${table.table}.${column.name}`);
      }
      for (const sql of indexSql(table)) db.exec(sql);
      ensured.set(table.resource, table);
    }
    return { createdTables, addedColumns };
  };

  const writeIn = (
    table: TableSpec,
    records: readonly MirrorRecord[],
    at: string,
  ): UpsertResult => {
    const batch = checkBatch(table.resource, table, records, toSqlite);
    const writer = writerFor(table);
    const before = new Set(
      writer.existing.all(JSON.stringify(batch.map((r) => r.id))).map((r) => r.id),
    );
    let inserted = 0;
    let updated = 0;
    for (const record of batch) {
      const { changes } = writer.upsert.run(
        record.id,
        JSON.stringify(record.raw),
        at,
        ...record.values,
      );
      if (changes === 0) continue;
      if (before.has(record.id)) updated++;
      else inserted++;
    }
    return {
      inserted,
      updated,
      unchanged: batch.length - inserted - updated,
      keys: records.map((r) => r.id),
      ...unfitRefusals(batch),
    };
  };

  /** The transactions of the handle open now (remade with it). */
  const transactionsOf = (handle: Database.Database) => ({
    ensure: handle.transaction(ensureIn),
    writeBatch: handle.transaction(writeIn),
  });
  let tx = transactionsOf(db);

  /** Whether the resource's table had to be made now (in the file open now). */
  /** Whether the table had to be made or given a column now (see Destination.ensureTable). */
  const ensureKnown = (resource: Resource): boolean => {
    if (ensured.has(resource)) return false;
    const changes = tx.ensure.immediate([TABLES[resource]]);
    return changes.createdTables.length > 0 || changes.addedColumns.length > 0;
  };

  const tableOf = (resource: Resource): TableSpec => {
    ensureKnown(resource);
    return ensured.get(resource) ?? TABLES[resource];
  };

  const run = <T>(body: () => T): Promise<T> => {
    try {
      return Promise.resolve(body());
    } catch (error) {
      return Promise.reject(toDestinationError('SQLite', error));
    }
  };

  const id = sqliteIdentity(file);
  return {
    describe: () => ({ kind: 'sqlite', id, label: `SQLite file ${id.slice('sqlite:'.length)}` }),
    capabilities: { maxBatchSize: 1000, atomicBatches: true, countsChanges: true },
    ensureSchema: (tables) =>
      run(() => {
        current();
        return tx.ensure.immediate(tables);
      }),
    ensureTable: (resource) =>
      run(() => {
        current();
        return ensureKnown(resource);
      }),
    upsert: (resource, records, at = new Date()) =>
      run(() => {
        if (records.length === 0) return { inserted: 0, updated: 0, unchanged: 0, keys: [] };
        current();
        return tx.writeBatch.immediate(tableOf(resource), records, at.toISOString());
      }),
    markDeleted: (resource, ids, at = new Date()) =>
      run(() => {
        if (ids.length === 0) return { marked: 0 };
        current();
        const when = at.toISOString();
        const writer = writerFor(tableOf(resource));
        const list = JSON.stringify([...ids]);
        // One transaction: the count is of the marks this call's `at` left, its own and those
        // of an earlier call with the same `at` (a retried attempt), never another writer's.
        const marked = db
          .transaction(() => {
            // synced_at is when the row was written, now: never moved back to the mark's time.
            writer.markDeleted.run(when, new Date().toISOString(), list);
            return writer.markedAt.get(when, list)?.n ?? 0;
          })
          .immediate();
        return { marked };
      }),
    close: () =>
      run(() => {
        if (db.open) db.close();
      }),
  };
}
