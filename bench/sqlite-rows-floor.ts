/**
 * A floor of the mirror benchmark: what SQLite alone takes to write the rows a run left in its
 * file, with no request, no parsing and no ebsync module. It makes a new file TO with FROM's
 * page size and its CREATE statements (tables and indexes), in WAL mode with synchronous
 * NORMAL (as both sides write), reads every row of FROM into memory before the clock starts,
 * then inserts them with one prepared INSERT per table, in transactions of 1,000 rows (the
 * SQLite destination's largest batch; the plain loop commits 100 at a time, which costs more).
 *
 *   node bench/sqlite-rows-floor.ts --from FILE --to FILE
 *
 * Prints one JSON line: `rows` by table, `bytes` (TO's size after a checkpoint), `writeMs`
 * (wall time of the inserts and commits) and `cpuMs` (this process's user + system time over
 * them). Exit 2 on bad input, 1 on a failure.
 */
import { existsSync, statSync } from 'node:fs';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';

const BATCH = 1000;

interface FloorResult {
  rows: Record<string, number>;
  bytes: number;
  writeMs: number;
  cpuMs: number;
}

function floor(from: string, to: string): FloorResult {
  const source = new Database(from, { readonly: true, fileMustExist: true });
  const pageSize = Number(source.pragma('page_size', { simple: true }));
  const schema = source
    .prepare<[], { type: string; name: string; sql: string }>(
      `SELECT type, name, sql FROM sqlite_master
       WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY type = 'index', rowid`,
    )
    .all();
  const tables = schema.filter((s) => s.type === 'table').map((s) => s.name);
  const data = new Map<string, { columns: string[]; rows: unknown[][] }>();
  for (const table of tables) {
    const select = source.prepare(`SELECT * FROM "${table}"`).raw(true);
    data.set(table, {
      columns: select.columns().map((c) => c.name),
      rows: select.all() as unknown[][],
    });
  }
  source.close();

  const target = new Database(to);
  target.pragma(`page_size = ${pageSize}`);
  target.pragma('journal_mode = WAL');
  target.pragma('synchronous = NORMAL');
  for (const s of schema) target.exec(s.sql);

  const cpu = process.cpuUsage();
  const started = performance.now();
  const rows: Record<string, number> = {};
  for (const [table, { columns, rows: values }] of data) {
    const insert = target.prepare(
      `INSERT INTO "${table}" (${columns.map((c) => `"${c}"`).join(', ')})
       VALUES (${columns.map(() => '?').join(', ')})`,
    );
    const batch = target.transaction((list: unknown[][]) => {
      for (const row of list) insert.run(row);
    });
    for (let i = 0; i < values.length; i += BATCH) batch.immediate(values.slice(i, i + BATCH));
    rows[table] = values.length;
  }
  const writeMs = performance.now() - started;
  const used = process.cpuUsage(cpu);
  target.pragma('wal_checkpoint(TRUNCATE)');
  target.close();
  return { rows, bytes: statSync(to).size, writeMs, cpuMs: (used.user + used.system) / 1000 };
}

function main(): void {
  let values: { from?: string | undefined; to?: string | undefined };
  try {
    values = parseArgs({
      options: { from: { type: 'string' }, to: { type: 'string' } },
    }).values;
  } catch (error) {
    process.stderr.write(
      `sqlite-rows-floor: ${(error as Error).message}; allowed: --from FILE --to FILE\n`,
    );
    process.exit(2);
  }
  if (!values.from || !values.to) {
    process.stderr.write('sqlite-rows-floor: --from FILE and --to FILE are both needed\n');
    process.exit(2);
  }
  if (!existsSync(values.from)) {
    process.stderr.write(`sqlite-rows-floor: --from ${values.from}: no such file\n`);
    process.exit(2);
  }
  // A log left beside the path by another file would be replayed into the new one.
  const taken = [values.to, `${values.to}-wal`, `${values.to}-shm`].find((f) => existsSync(f));
  if (taken) {
    process.stderr.write(
      `sqlite-rows-floor: --to ${values.to}: ${taken} exists; give a new file\n`,
    );
    process.exit(2);
  }
  try {
    process.stdout.write(`${JSON.stringify(floor(values.from, values.to))}\n`);
  } catch (error) {
    process.stderr.write(`sqlite-rows-floor: ${(error as Error).message}\n`);
    process.exit(1);
  }
}

main();
