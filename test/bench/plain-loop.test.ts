import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, cliEnv } from '../helpers/cli.js';
import { createTestDatabase, queryDatabase } from '../helpers/postgres.js';
import { startTestSandbox, type TestSandbox } from '../helpers/sandbox.js';

const run = promisify(execFile);
const LEADS = 1234;
const tmp = mkdtempSync(join(tmpdir(), 'ebsync-plain-loop-'));

/** `npx tsx bench/plain-loop.ts …` as the benchmark runs it: a command of its own. */
async function plainLoop(
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string; line: Record<string, unknown> }> {
  const result = await run(process.execPath, ['--import', 'tsx', 'bench/plain-loop.ts', ...args], {
    cwd: REPO_ROOT,
    env: cliEnv(),
    timeout: 120_000,
  }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => error,
  );
  const lines = result.stdout.trim().split('\n').filter(Boolean);
  return {
    ...result,
    line: lines.length === 1 ? (JSON.parse(lines[0] ?? '{}') as Record<string, unknown>) : {},
  };
}

let sandbox: TestSandbox;
/** What the service says it holds: the lead count the loop must end with. */
let leadCount: number;

beforeAll(async () => {
  sandbox = await startTestSandbox({ seed: { leads: LEADS, events: 5, seed: 'plain-loop' } });
  const page = await sandbox.request('GET', '/api/v1/leads', { query: { per: 1 } });
  leadCount = page.body.meta.total_count as number;
});

afterAll(async () => {
  await sandbox?.close();
  rmSync(tmp, { recursive: true, force: true });
});

describe(
  'bench/plain-loop.ts, the mirror benchmark’s hand-written baseline',
  { timeout: 180_000 },
  () => {
    const common = () => ['--base', sandbox.sb.baseUrl, '--key', sandbox.sb.apiKey];

    it('writes every lead of the sandbox into SQLite: id, email and the attributes as JSON', async () => {
      expect(leadCount).toBe(LEADS);
      const file = join(tmp, 'plain.db');
      const { code, line, stderr } = await plainLoop([...common(), '--to', `sqlite:${file}`]);
      expect(stderr).toBe('');
      expect(code).toBe(0);
      expect(line).toMatchObject({ target: 'sqlite', rows: leadCount, pages: 13, complete: true });
      expect(line.wallMs).toEqual(expect.any(Number));

      const db = new Database(file, { readonly: true });
      try {
        const count = db.prepare('SELECT count(*) AS n FROM plain_leads').get() as { n: number };
        expect(count.n).toBe(leadCount);
        const api = await sandbox.request('GET', '/api/v1/leads', { query: { per: 1, page: 7 } });
        const lead = api.body.data[0];
        const row = db
          .prepare('SELECT email, attributes FROM plain_leads WHERE id = ?')
          .get(Number(lead.id)) as { email: string | null; attributes: string };
        expect(row.email).toBe(lead.attributes.email);
        expect(JSON.parse(row.attributes)).toEqual(lead.attributes);
      } finally {
        db.close();
      }
    });

    it('writes every lead of the sandbox into Postgres, attributes as JSONB', async () => {
      const url = await createTestDatabase('plain_loop');
      const { code, line } = await plainLoop([...common(), '--to', url]);
      expect(code).toBe(0);
      expect(line).toMatchObject({ target: 'postgres', rows: leadCount, complete: true });
      const [count] = await queryDatabase<{ n: string; objects: string }>(
        url,
        "SELECT count(*) AS n, count(*) FILTER (WHERE jsonb_typeof(attributes) = 'object') AS objects FROM plain_leads",
      );
      expect(Number(count?.n)).toBe(leadCount);
      expect(Number(count?.objects)).toBe(leadCount);
      // A second run upserts the same leads: the table keeps one row each.
      await plainLoop([...common(), '--to', url]);
      const [again] = await queryDatabase<{ n: string }>(
        url,
        'SELECT count(*) AS n FROM plain_leads',
      );
      expect(Number(again?.n)).toBe(leadCount);
    });

    it('reads only what paging reaches, and says how many leads it could not', async () => {
      const limited = await startTestSandbox({ seed: { leads: 250, events: 1 }, reachLimit: 100 });
      try {
        const { code, line, stderr } = await plainLoop([
          '--base',
          limited.sb.baseUrl,
          '--key',
          limited.sb.apiKey,
          '--to',
          `sqlite:${join(tmp, 'reach.db')}`,
          '--reach-limit',
          '100',
        ]);
        expect(code).toBe(0);
        expect(line).toMatchObject({
          rows: 100,
          totalCount: 250,
          unreachable: 150,
          complete: false,
        });
        expect(line.note).toMatch(/paging reaches only the first 100, so 150 leads were not read/);
        expect(stderr).toMatch(/^plain-loop: incomplete: total_count is 250/);
      } finally {
        await limited.close();
      }
    });

    it('imports no ebsync module: only Node, pg and better-sqlite3', () => {
      const source = readFileSync(join(REPO_ROOT, 'bench/plain-loop.ts'), 'utf8');
      const specifiers = [
        ...source.matchAll(/\bimport\s*(?:[^'"]*?\sfrom\s*)?\(?\s*'([^']+)'/g),
      ].map((m) => m[1] ?? '');
      expect(specifiers).toEqual(expect.arrayContaining(['pg', 'better-sqlite3']));
      expect(
        specifiers.filter((s) => !/^node:/.test(s) && !['pg', 'better-sqlite3'].includes(s)),
      ).toEqual([]);
    });

    it('bad input is one line and exit 2; a refused key is one line and exit 1', async () => {
      const bad = await plainLoop([
        '--base',
        sandbox.sb.baseUrl,
        '--key',
        'ik_x',
        '--to',
        'mysql://x',
      ]);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/^plain-loop: --to: sqlite:FILE or postgres:\/\/…;.*\n$/);
      const refused = await plainLoop([
        '--base',
        sandbox.sb.baseUrl,
        '--key',
        'ik_not_the_key_0000',
        '--to',
        `sqlite:${join(tmp, 'refused.db')}`,
      ]);
      expect(refused.code).toBe(1);
      expect(refused.stderr.trim().split('\n')).toHaveLength(1);
      expect(refused.stderr).toMatch(/answered 401/);
    });
  },
);
