import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, cliEnv } from '../helpers/cli.js';

const run = promisify(execFile);
const tmp = mkdtempSync(join(tmpdir(), 'ebsync-rows-floor-'));

afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** `node bench/sqlite-rows-floor.ts …` as the mirror benchmark runs it. */
async function rowsFloor(
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  return run(process.execPath, ['--import', 'tsx', 'bench/sqlite-rows-floor.ts', ...args], {
    cwd: REPO_ROOT,
    env: cliEnv(),
    timeout: 60_000,
  }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => error,
  );
}

/** A file shaped as a mirror: a STRICT table with an index, 16 KiB pages, WAL, some rows. */
let sources = 0;
function sourceFile(): string {
  sources += 1;
  const file = join(tmp, `source-${sources}.db`);
  const db = new Database(file);
  db.pragma('page_size = 16384');
  db.pragma('journal_mode = WAL');
  db.exec(
    `CREATE TABLE "leads" ("id" TEXT PRIMARY KEY NOT NULL, "record" TEXT NOT NULL, "email" TEXT) STRICT;
     CREATE INDEX "leads_email_idx" ON "leads" ("email");
     CREATE TABLE "empty" ("id" TEXT PRIMARY KEY NOT NULL) STRICT;`,
  );
  const insert = db.prepare('INSERT INTO leads (id, record, email) VALUES (?, ?, ?)');
  db.transaction(() => {
    for (let i = 1; i <= 2_345; i++) {
      insert.run(String(i), JSON.stringify({ id: i, n: 'x'.repeat(i % 50) }), `l${i}@example.com`);
    }
  })();
  db.close();
  return file;
}

describe('bench/sqlite-rows-floor.ts, the mirror benchmark’s bare SQLite writes', () => {
  it('writes every row of every table into a new file of the same shape, and times it', async () => {
    const from = sourceFile();
    const to = join(tmp, 'floor.db');
    const { code, stdout, stderr } = await rowsFloor(['--from', from, '--to', to]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const line = JSON.parse(stdout) as {
      rows: Record<string, number>;
      bytes: number;
      writeMs: number;
      cpuMs: number;
    };
    expect(line.rows).toEqual({ leads: 2_345, empty: 0 });
    expect(line.writeMs).toBeGreaterThan(0);
    expect(line.cpuMs).toBeGreaterThan(0);
    const db = new Database(to, { readonly: true });
    try {
      expect(db.pragma('page_size', { simple: true })).toBe(16_384);
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
      const source = new Database(from, { readonly: true });
      const all = 'SELECT id, record, email FROM leads ORDER BY rowid';
      expect(db.prepare(all).all()).toEqual(source.prepare(all).all());
      const indexes = "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL";
      expect(db.prepare(indexes).all()).toEqual([{ name: 'leads_email_idx' }]);
      source.close();
    } finally {
      db.close();
    }
  });

  it('refuses a target that exists, or whose write-ahead log does, in one line (exit 2)', async () => {
    const from = sourceFile();
    const to = join(tmp, 'taken.db');
    writeFileSync(`${to}-wal`, '');
    const { code, stdout, stderr } = await rowsFloor(['--from', from, '--to', to]);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toBe(`sqlite-rows-floor: --to ${to}: ${to}-wal exists; give a new file\n`);
    const missing = await rowsFloor(['--from', join(tmp, 'none.db'), '--to', join(tmp, 'n.db')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^sqlite-rows-floor: --from .*none\.db: no such file\n$/);
  });
});
