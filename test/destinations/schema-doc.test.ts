import { readFileSync } from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { openDestination } from '../../destinations/open-destination.js';
import { databaseOpeners } from '../../store/database-openers.js';
import { ALL_TABLES, SYSTEM_COLUMNS } from '../../destinations/tables.js';
import { createTestDatabase, queryDatabase } from '../helpers/postgres.js';

const doc = readFileSync(new URL('../../docs/mirror.md', import.meta.url), 'utf8');

/** The `| \`name\` | type | …` rows of the first table after a heading. */
function documentedColumns(heading: string): [string, string][] {
  const start = doc.indexOf(heading);
  expect(start, `docs/mirror.md has no heading ${heading}`).toBeGreaterThanOrEqual(0);
  const rows: [string, string][] = [];
  for (const line of doc
    .slice(start + heading.length)
    .split('\n')
    .slice(1)) {
    if (line.startsWith('#')) break;
    const m = /^\|\s*`([a-z0-9_]+)`\s*\|\s*([a-z]+)\s*\|/.exec(line);
    if (m) rows.push([m[1]!, m[2]!]);
    else if (rows.length && !line.startsWith('|')) break;
  }
  return rows;
}

const dir = mkdtempSync(join(tmpdir(), 'ebsync-doc-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('docs/mirror.md', () => {
  it('documents every column of every table, with its type, in order', () => {
    expect(documentedColumns('## Tables')).toEqual(SYSTEM_COLUMNS.map((c) => [c.name, c.type]));
    for (const table of ALL_TABLES) {
      expect(documentedColumns(`### \`${table.table}\``), table.table).toEqual(
        table.columns.map((c) => [c.name, c.type]),
      );
    }
  });

  const queries = [...doc.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1]!);

  it('shows example queries that run on SQLite and on Postgres', async () => {
    expect(queries.length).toBeGreaterThan(0);
    const file = join(dir, 'mirror.db');
    const sqlite = openDestination(databaseOpeners, `sqlite:${file}`);
    const url = await createTestDatabase('doc');
    const postgres = openDestination(databaseOpeners, url);
    try {
      await sqlite.ensureSchema(ALL_TABLES);
      await postgres.ensureSchema(ALL_TABLES);
      const db = new Database(file, { readonly: true });
      try {
        for (const sql of queries) expect(() => db.prepare(sql).all()).not.toThrow();
      } finally {
        db.close();
      }
      for (const sql of queries) await queryDatabase(url, sql);
    } finally {
      await sqlite.close();
      await postgres.close();
    }
  });
});
