/**
 * The baseline of the mirror benchmark: the loop a developer writes by hand to get a
 * business's leads into a database, written without any ebsync module (its own HTTP, its
 * own SQL), so that it pays none of ebsync's per-record costs.
 *
 *   npx tsx bench/plain-loop.ts --base URL --key ik_… --to sqlite:FILE|postgres://…
 *                               [--per 100] [--ca FILE] [--table plain_leads] [--reach-limit 10000]
 *
 * It pages `GET {base}/leads?per=N&page=P` with the Api-Key header, one page at a time, and
 * upserts each lead's id, email and attributes (JSONB in Postgres, JSON text in SQLite) in one
 * transaction per page, until page = total_pages. It reads only what paging reaches: the
 * service returns nothing past the first 10,000 results of a query, so when total_count is
 * larger the loop stops there and its output says how many leads it could not reach.
 * Prints one JSON line: rows written, pages, total_count, the leads paging did not reach,
 * `complete`, and wall time from the process's start (`wallMs`) and of the loop (`loopMs`);
 * an incomplete read is also said on stderr. Exit 2 on bad input, 1 on a failure.
 */
import { readFileSync } from 'node:fs';
import tls from 'node:tls';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

export interface PlainLoopOptions {
  /** The API's base, e.g. `http://127.0.0.1:4010/api/v1` (a trailing slash is fine). */
  base: string;
  key: string;
  /** `sqlite:FILE` or `postgres://…`. */
  to: string;
  per?: number;
  /** PEM file of a certificate authority to trust (the sandbox's, over HTTPS). */
  ca?: string;
  table?: string;
  /** Results past this position are never returned, however paged (the spec says 10,000). */
  reachLimit?: number;
}

export interface PlainLoopResult {
  target: 'sqlite' | 'postgres';
  /** Leads upserted (each lead read once, so also the rows the table gained or updated). */
  rows: number;
  pages: number;
  totalCount: number;
  /** Leads past the reach limit: listed in total_count, never returned by paging. */
  unreachable: number;
  /** From the start of paging to the last commit. */
  loopMs: number;
}

interface Lead {
  id: string;
  attributes: Record<string, unknown> & { email?: string | null };
}

interface Page {
  data: Lead[];
  meta: { total_count: number; per_page?: number; total_pages?: number };
}

/** One transaction per page: `write` gets the page's leads and commits them together. */
interface Sink {
  write(leads: Lead[]): Promise<void>;
  close(): Promise<void>;
}

const TABLE_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

async function sqliteSink(file: string, table: string): Promise<Sink> {
  const { default: Database } = await import('better-sqlite3');
  const db = new Database(file);
  // The two lines most SQLite writers add, and the ones ebsync's SQLite destination uses.
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(
    `CREATE TABLE IF NOT EXISTS ${table} (id INTEGER PRIMARY KEY, email TEXT, attributes TEXT NOT NULL)`,
  );
  const upsert = db.prepare(
    `INSERT INTO ${table} (id, email, attributes) VALUES (?, ?, ?)
     ON CONFLICT (id) DO UPDATE SET email = excluded.email, attributes = excluded.attributes`,
  );
  const page = db.transaction((leads: Lead[]) => {
    for (const lead of leads) {
      upsert.run(Number(lead.id), lead.attributes.email ?? null, JSON.stringify(lead.attributes));
    }
  });
  return {
    write: (leads) => Promise.resolve(page(leads)),
    close: () => {
      db.close();
      return Promise.resolve();
    },
  };
}

async function postgresSink(url: string, table: string): Promise<Sink> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(
    `CREATE TABLE IF NOT EXISTS ${table} (id BIGINT PRIMARY KEY, email TEXT, attributes JSONB NOT NULL)`,
  );
  return {
    async write(leads) {
      if (leads.length === 0) return;
      // One multi-row statement per page: ($1, $2, $3::jsonb), ($4, $5, $6::jsonb), …
      const values = leads.map((_, i) => `($${i * 3 + 1}, $${i * 3 + 2}, $${i * 3 + 3}::jsonb)`);
      const params = leads.flatMap((lead) => [
        Number(lead.id),
        lead.attributes.email ?? null,
        JSON.stringify(lead.attributes),
      ]);
      await client.query('BEGIN');
      try {
        await client.query(
          `INSERT INTO ${table} (id, email, attributes) VALUES ${values.join(', ')}
           ON CONFLICT (id) DO UPDATE SET email = excluded.email, attributes = excluded.attributes`,
          params,
        );
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw error;
      }
    },
    close: () => client.end(),
  };
}

/** A failure the loop cannot get past: its message is the one line the command prints. */
export class PlainLoopError extends Error {
  override readonly name = 'PlainLoopError';
  readonly retryable = false;
}

/** The command line asked for something the loop does not do: exit 2. */
class UsageError extends PlainLoopError {}

async function getPage(url: string, key: string): Promise<Page> {
  const response = await fetch(url, { headers: { 'Api-Key': key, accept: 'application/json' } });
  const text = await response.text();
  if (!response.ok) {
    throw new PlainLoopError(
      `GET ${new URL(url).pathname}${new URL(url).search} answered ${response.status}: ${text.slice(0, 200)}`,
    );
  }
  const body = JSON.parse(text) as Partial<Page>;
  if (!Array.isArray(body.data) || typeof body.meta?.total_count !== 'number') {
    throw new PlainLoopError(`GET ${new URL(url).pathname}: no data list or meta.total_count`);
  }
  return body as Page;
}

export async function plainLoop(options: PlainLoopOptions): Promise<PlainLoopResult> {
  const per = options.per ?? 100;
  const table = options.table ?? 'plain_leads';
  const reachLimit = options.reachLimit ?? 10_000;
  if (!TABLE_NAME.test(table)) throw new UsageError(`--table '${table}' is not a table name`);
  if (options.ca) {
    // Global fetch takes no CA option: the process's default list gets the sandbox's CA too.
    if (typeof tls.setDefaultCACertificates !== 'function') {
      throw new UsageError(
        `--ca needs Node 22.19 or 24.5 and later (this is ${process.version}); or run the sandbox over http on loopback`,
      );
    }
    tls.setDefaultCACertificates([
      ...tls.getCACertificates('default'),
      readFileSync(options.ca, 'utf8'),
    ]);
  }
  const target = options.to.startsWith('sqlite:') ? 'sqlite' : 'postgres';
  const sink =
    target === 'sqlite'
      ? await sqliteSink(options.to.slice('sqlite:'.length), table)
      : await postgresSink(options.to, table);
  const base = options.base.replace(/\/+$/, '');
  const started = performance.now();
  let rows = 0;
  let pages = 0;
  let totalCount = 0;
  try {
    // Pages past the reach limit come back empty: the last one asked holds its last result.
    const reachablePages = Math.ceil(reachLimit / per);
    for (let page = 1; ; page++) {
      const body = await getPage(`${base}/leads?per=${per}&page=${page}`, options.key);
      pages += 1;
      totalCount = body.meta.total_count;
      await sink.write(body.data);
      rows += body.data.length;
      const totalPages = body.meta.total_pages ?? Math.ceil(totalCount / per);
      if (page >= totalPages || page >= reachablePages || body.data.length === 0) break;
    }
  } finally {
    await sink.close();
  }
  return {
    target,
    rows,
    pages,
    totalCount,
    unreachable: Math.max(0, totalCount - rows),
    loopMs: Math.round(performance.now() - started),
  };
}

async function main(): Promise<void> {
  const usage =
    'usage: npx tsx bench/plain-loop.ts --base URL --key ik_… --to sqlite:FILE|postgres://… ' +
    '[--per 100] [--ca FILE] [--table plain_leads] [--reach-limit 10000]';
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        base: { type: 'string' },
        key: { type: 'string' },
        to: { type: 'string' },
        per: { type: 'string', default: '100' },
        ca: { type: 'string' },
        table: { type: 'string', default: 'plain_leads' },
        'reach-limit': { type: 'string', default: '10000' },
      },
    }));
  } catch (error) {
    throw new UsageError(`${(error as Error).message}; ${usage}`);
  }
  const { base, key, to } = values;
  if (!base || !/^https?:\/\//.test(base)) throw new UsageError(`--base: an http(s) URL; ${usage}`);
  if (!key) throw new UsageError(`--key: the integration key (ik_…); ${usage}`);
  if (!to || !(/^sqlite:./.test(to) || /^postgres(ql)?:\/\//.test(to))) {
    throw new UsageError(`--to: sqlite:FILE or postgres://…; ${usage}`);
  }
  const whole = (flag: string, text: string, max: number): number => {
    const n = Number(text);
    if (!/^\d+$/.test(text) || n < 1 || n > max) {
      throw new UsageError(`--${flag} '${text}': a whole number from 1 to ${max}`);
    }
    return n;
  };
  const result = await plainLoop({
    base,
    key,
    to,
    per: whole('per', values.per, 1000),
    table: values.table,
    reachLimit: whole('reach-limit', values['reach-limit'], 100_000_000),
    ...(values.ca ? { ca: values.ca } : {}),
  });
  const note =
    result.unreachable > 0
      ? `total_count is ${result.totalCount}: paging reaches only the first ${result.rows}, so ${result.unreachable} leads were not read`
      : undefined;
  const line = {
    ...result,
    complete: note === undefined,
    // From the process's start (module loading included) to here: a command's wall time.
    wallMs: Math.round(performance.now()),
    ...(note ? { note } : {}),
  };
  process.stdout.write(`${JSON.stringify(line)}\n`);
  // Said on stderr too: a reader of the numbers alone must not take them for all the leads.
  if (note) process.stderr.write(`plain-loop: incomplete: ${note}\n`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    // fetch says only "fetch failed"; its cause says what (ECONNREFUSED, a certificate, …).
    const cause =
      error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : '';
    const message = error instanceof Error ? `${error.message}${cause}` : String(error);
    process.stderr.write(`plain-loop: ${message.split('\n')[0]}\n`);
    process.exitCode = error instanceof UsageError ? 2 : 1;
  });
}
