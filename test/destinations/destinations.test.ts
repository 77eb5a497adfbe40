import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { DestinationTargetError } from '../../destinations/errors.js';
import {
  destinationIdentity,
  openDestination,
  parseDestinationTarget,
} from '../../destinations/open-destination.js';
import { databaseOpeners } from '../../store/database-openers.js';
import type { JsonValue } from '../../destinations/record.js';
import { ALL_TABLES, TABLES } from '../../destinations/tables.js';
import { columnsOf } from '../../destinations/schema-plan.js';
import { createTestDatabase, queryDatabase } from '../helpers/postgres.js';
import { describeDestination, leadRecord } from './destination-suite.js';

const typeOf = (table: string, column: string) =>
  ALL_TABLES.filter((t) => t.table === table)
    .flatMap(columnsOf)
    .find((c) => c.name === column)?.type;

const dir = mkdtempSync(join(tmpdir(), 'ebsync-destination-'));
let files = 0;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function withSqlite<T>(target: string, fn: (db: Database.Database) => T): Promise<T> {
  const db = new Database(target.slice('sqlite:'.length));
  try {
    return Promise.resolve(fn(db));
  } finally {
    db.close();
  }
}

describeDestination('SQLite', {
  fresh: () => Promise.resolve(`sqlite:${join(dir, `mirror-${++files}.db`)}`),
  open: (target) => openDestination(databaseOpeners, target),
  rows: (target, table) =>
    withSqlite(target, (db) =>
      db
        .prepare<[], Record<string, string | number | null>>(`SELECT * FROM ${table} ORDER BY id`)
        .all()
        .map((row) =>
          Object.fromEntries(
            Object.entries(row).map(([name, value]): [string, JsonValue] => {
              const type = typeOf(table, name);
              if (value === null) return [name, null];
              if (type === 'boolean') return [name, value === 1];
              if (type === 'json') return [name, JSON.parse(String(value)) as JsonValue];
              return [name, value];
            }),
          ),
        ),
    ),
  refuseId: (target, table, id) =>
    withSqlite(target, (db) => {
      db.exec(`CREATE TRIGGER refuse_${table} BEFORE INSERT ON ${table}
        WHEN NEW.id = '${id}' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`);
    }),
  columns: (target, table) =>
    withSqlite(target, (db) =>
      db
        .prepare<[], { name: string }>(`PRAGMA table_info(${table})`)
        .all()
        .map((c) => c.name),
    ),
  removeTable: (target) => {
    const file = target.slice('sqlite:'.length);
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true });
    return Promise.resolve();
  },
});

describe('SQLite file layout', () => {
  /** Leads whose whole record is about 3 KB, as a lead with notes and custom fields is. */
  const largeLeads = (n: number) =>
    Array.from({ length: n }, (_, i) => {
      const lead = leadRecord(String(i + 1));
      return { ...lead, raw: { ...lead.raw, notes: `Call back after the tasting. `.repeat(100) } };
    });

  it('keeps a record of a few KB in its row, not in an overflow page of its own', async () => {
    const target = `sqlite:${join(dir, `mirror-${++files}.db`)}`;
    const destination = openDestination(databaseOpeners, target);
    try {
      expect(await destination.upsert('leads', largeLeads(200))).toMatchObject({ inserted: 200 });
    } finally {
      await destination.close();
    }
    const pages = await withSqlite(target, (db) =>
      db
        .prepare<[], { pagetype: string; n: number }>(
          `SELECT pagetype, count(*) AS n FROM dbstat WHERE name = 'leads' GROUP BY pagetype`,
        )
        .all(),
    );
    const count = (type: string) => pages.find((p) => p.pagetype === type)?.n ?? 0;
    expect(count('leaf')).toBeGreaterThan(0);
    expect(count('overflow')).toBe(0);
  });

  it('packs several large rows in a page of a file it makes, and keeps writing an older file', async () => {
    const pageRows = async (target: string) =>
      withSqlite(target, (db) => ({
        pageSize: db.pragma('page_size', { simple: true }) as number,
        rowsPerLeaf: db
          .prepare<[], { n: number }>(
            `SELECT avg(ncell) AS n FROM dbstat WHERE name = 'leads' AND pagetype = 'leaf'`,
          )
          .get()!.n,
      }));
    const made = `sqlite:${join(dir, `mirror-${++files}.db`)}`;
    const older = `sqlite:${join(dir, `mirror-${++files}.db`)}`;
    // A file an earlier ebsync made: SQLite's default page size, WAL.
    await withSqlite(older, (db) => void db.pragma('journal_mode = WAL'));
    for (const target of [made, older]) {
      const destination = openDestination(databaseOpeners, target);
      try {
        expect(await destination.upsert('leads', largeLeads(100))).toMatchObject({ inserted: 100 });
      } finally {
        await destination.close();
      }
    }
    const fresh = await pageRows(made);
    expect(fresh.pageSize).toBe(16_384);
    expect(fresh.rowsPerLeaf).toBeGreaterThanOrEqual(3);
    expect(await pageRows(older)).toMatchObject({ pageSize: 4096 });
  });

  it('says a table given back a column dropped by hand, as one made again: its rows lack it', async () => {
    const target = `sqlite:${join(dir, `mirror-${++files}.db`)}`;
    const first = openDestination(databaseOpeners, target);
    await first.ensureSchema([TABLES.leads]);
    await first.upsert('leads', largeLeads(3));
    await first.close();
    await withSqlite(target, (db) => db.exec('ALTER TABLE leads DROP COLUMN first_name'));
    // A webhook batch's handle meets it first, not a pass's plan: the ledger must learn of it
    // there too, or every row stays 'up to date' without the column.
    const destination = openDestination(databaseOpeners, target);
    try {
      expect(await destination.ensureTable('leads')).toBe(true);
      expect(await destination.ensureTable('leads')).toBe(false);
    } finally {
      await destination.close();
    }
  });

  it('goes on writing a table an earlier ebsync created WITHOUT ROWID', async () => {
    const target = `sqlite:${join(dir, `mirror-${++files}.db`)}`;
    const first = openDestination(databaseOpeners, target);
    await first.ensureSchema([TABLES.leads]);
    await first.close();
    await withSqlite(target, (db) => {
      const { sql } = db
        .prepare<[], { sql: string }>(`SELECT sql FROM sqlite_master WHERE name = 'leads'`)
        .get()!;
      db.exec(`DROP TABLE leads; ${sql}, WITHOUT ROWID;`);
    });
    const destination = openDestination(databaseOpeners, target);
    try {
      expect(await destination.upsert('leads', largeLeads(20))).toMatchObject({ inserted: 20 });
      expect(await destination.upsert('leads', largeLeads(20))).toMatchObject({ unchanged: 20 });
      const changed = largeLeads(2).map((l) => leadRecord(l.id, { first_name: 'Bea' }));
      expect(await destination.upsert('leads', changed)).toMatchObject({ updated: 2 });
      expect(await destination.markDeleted('leads', ['3'])).toEqual({ marked: 1 });
    } finally {
      await destination.close();
    }
    const rows = await withSqlite(target, (db) => ({
      sql: db
        .prepare<[], { sql: string }>(`SELECT sql FROM sqlite_master WHERE name = 'leads'`)
        .get()!.sql,
      names: db
        .prepare<[], { first_name: string }>(`SELECT first_name FROM leads WHERE id IN ('1', '2')`)
        .all()
        .map((r) => r.first_name),
      deleted: db
        .prepare<[], { n: number }>(`SELECT count(*) AS n FROM leads WHERE deleted_at IS NOT NULL`)
        .get()!.n,
    }));
    expect(rows).toEqual({
      sql: expect.stringMatching(/WITHOUT ROWID/) as string,
      names: ['Bea', 'Bea'],
      deleted: 1,
    });
  });
});

const postgresBackend = (schema: string) => ({
  fresh: async () => {
    const url = await createTestDatabase('mirror');
    return schema === 'public' ? url : `${url}?schema=${schema}`;
  },
  open: (target: string) => openDestination(databaseOpeners, target),
  rows: async (target: string, table: string) => {
    const { url } = parsePostgres(target);
    const rows = await queryDatabase<{ row: Record<string, JsonValue> }>(
      url,
      `SELECT to_jsonb(t) AS row FROM "${schema}"."${table}" AS t ORDER BY id`,
    );
    return rows.map(({ row }) =>
      Object.fromEntries(
        Object.entries(row).map(([name, value]): [string, JsonValue] =>
          typeOf(table, name) === 'timestamp' && typeof value === 'string'
            ? [name, new Date(value).toISOString()]
            : [name, value],
        ),
      ),
    );
  },
  refuseId: async (target: string, table: string, id: string) => {
    const { url } = parsePostgres(target);
    await queryDatabase(
      url,
      `CREATE FUNCTION refuse_row() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN IF NEW.id = '${id}' THEN RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW; END $$`,
    );
    await queryDatabase(
      url,
      `CREATE TRIGGER refuse BEFORE INSERT ON "${schema}"."${table}"
       FOR EACH ROW EXECUTE FUNCTION refuse_row()`,
    );
  },
  columns: async (target: string, table: string) => {
    const { url } = parsePostgres(target);
    const rows = await queryDatabase<{ column_name: string }>(
      url,
      'SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2',
      [schema, table],
    );
    return rows.map((r) => r.column_name);
  },
  removeTable: async (target: string, table: string) => {
    const { url } = parsePostgres(target);
    await queryDatabase(url, `DROP TABLE "${schema}"."${table}"`);
  },
});

function parsePostgres(target: string): { url: string } {
  const parsed = parseDestinationTarget(target);
  if (parsed.kind !== 'postgres') throw new Error(`not a Postgres target: ${target}`);
  return parsed;
}

describeDestination('Postgres', postgresBackend('public'));
describeDestination('Postgres (own schema)', postgresBackend('business_42'));

describe('destination targets', () => {
  it('reads sqlite:PATH and postgres:// URLs, with an optional schema', () => {
    expect(parseDestinationTarget('sqlite:.ebsync/mirror.db')).toEqual({
      kind: 'sqlite',
      path: '.ebsync/mirror.db',
    });
    expect(parseDestinationTarget('postgres://u:p@db.internal:5433/bi?schema=acme')).toEqual({
      kind: 'postgres',
      url: 'postgres://u:p@db.internal:5433/bi',
      schema: 'acme',
    });
  });

  it('refuses a sqlite: path that names a folder, saying what would do', () => {
    expect(() => parseDestinationTarget('sqlite:out/')).toThrow(
      'destination sqlite:out/ names a folder: expected sqlite:PATH of a file (e.g. sqlite:out/mirror.db)',
    );
  });

  it('refuses anything else in one line, without echoing a password', () => {
    for (const bad of ['mirror.db', 'sqlite:', 'mysql://root:hunter2@db/x', 'postgres://']) {
      expect(() => parseDestinationTarget(bad)).toThrow(DestinationTargetError);
      expect(() => parseDestinationTarget(bad)).toThrow(/expected sqlite:PATH or postgres:\/\//);
      expect(() => parseDestinationTarget(bad)).not.toThrow(/hunter2/);
    }
    expect(() => parseDestinationTarget('postgres://u:p@h/db?schema=a;drop')).toThrow(
      /schema 'a;drop' is not allowed/,
    );
    // A parameter the driver does not read was taken silently (and made a second mirror of
    // the same database); a schema given twice used the first.
    expect(() => parseDestinationTarget('postgres://u:hunter2@h/db?foo=bar')).toThrow(
      /destination parameter 'foo' is not one ebsync passes on: expected schema or sslmode, /,
    );
    expect(() => parseDestinationTarget('postgres://u:p@h/db?schema=a&schema=b')).toThrow(
      /schema is given more than once/,
    );
    // The driver took a misspelt sslmode as verify-full without a word.
    expect(() => parseDestinationTarget('postgres://u:hunter2@h/db?sslmode=requir')).toThrow(
      /^destination sslmode 'requir' is not allowed: expected disable, allow, prefer, require, verify-ca, verify-full, no-verify$/,
    );
    expect(() => parseDestinationTarget('postgres://u:p@h/db?sslmode=verify-ca')).toThrow(
      /destination sslmode verify-ca needs sslrootcert=FILE/,
    );
    expect(parseDestinationTarget('postgres://u:p@h/db?sslmode=verify-full&schema=s')).toEqual({
      kind: 'postgres',
      url: 'postgres://u:p@h/db?sslmode=verify-full',
      schema: 's',
    });
  });

  it('gives one destination one identity, however its URL is written', () => {
    const one = [
      'postgres://ann:first@db.internal:5433/bi?schema=acme',
      'postgres://bob:other@db.internal:5433/bi?sslmode=require&schema=acme',
      'postgresql://db.internal:5433/bi?schema=acme&connect_timeout=5',
    ].map(destinationIdentity);
    expect(new Set(one)).toEqual(new Set(['postgres://db.internal:5433/bi?schema=acme']));
    expect(destinationIdentity('postgres://u:p@db.internal/bi')).toBe(
      'postgres://db.internal:5432/bi',
    );
    // Another schema, database or port is another destination.
    expect(destinationIdentity('postgres://u:p@db.internal:5433/bi')).not.toBe(one[0]);
    expect(destinationIdentity('sqlite:rel/m.db')).toBe(`sqlite:${resolve('rel/m.db')}`);
    expect(destinationIdentity('hubspot')).toBe('hubspot');
  });

  it('names a Postgres destination by host, port, database and schema only', async () => {
    const url = await createTestDatabase('named');
    const destination = openDestination(databaseOpeners, `${url}?schema=acme`);
    try {
      const parsed = new URL(url);
      expect(destination.describe()).toMatchObject({
        kind: 'postgres',
        id: `postgres://${parsed.hostname}:${parsed.port}${parsed.pathname}?schema=acme`,
      });
      expect(JSON.stringify(destination.describe())).not.toContain(parsed.password);
    } finally {
      await destination.close();
    }
  });
});

describe('Postgres destination, values through the batch parameter', () => {
  it('stores a JSON null as SQL NULL, and text with quotes, backslashes and tabs as it was', async () => {
    const url = await createTestDatabase('values');
    const destination = openDestination(databaseOpeners, url);
    const name = 'Ana "Nan" \\ O\'Neil\t\u00e9\u{1F4F8}';
    try {
      await destination.upsert('leads', [
        leadRecord('7', { custom_fields: null, first_name: name, last_name: null }),
      ]);
      const rows = await queryDatabase<Record<string, unknown>>(
        url,
        `SELECT custom_fields IS NULL AS no_fields, last_name IS NULL AS no_last_name, first_name,
                jsonb_typeof(record) AS record_type, record->'attributes'->>'first_name' AS raw_name
         FROM leads WHERE id = '7'`,
      );
      expect(rows).toEqual([
        {
          no_fields: true,
          no_last_name: true,
          first_name: name,
          record_type: 'object',
          raw_name: name,
        },
      ]);
    } finally {
      await destination.close();
    }
  });
});
