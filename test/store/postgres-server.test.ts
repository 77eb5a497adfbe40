import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import {
  localPostgresDir,
  PostgresServerError,
  startPostgresServer,
} from '../../worker/postgres-server.js';
import { REPO_ROOT } from '../helpers/cli.js';
import { queryDatabase } from '../helpers/postgres.js';

const root = mkdtempSync(join(tmpdir(), 'ebsync-pgserver-'));
// mkdtemp makes it private; as root, the server runs as `postgres` and must enter it.
chmodSync(root, 0o755);
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('a local Postgres started by ebsync', () => {
  it('keeps its data and password across a restart, and attaches to itself while running', async () => {
    const dir = localPostgresDir(join(root, 'data'));
    const first = await startPostgresServer({ dir });
    let second: Awaited<ReturnType<typeof startPostgresServer>> | undefined;
    try {
      expect(first.started).toBe(true);
      expect(new URL(first.url).hostname).toBe('127.0.0.1');
      expect(statSync(join(dir, 'password')).mode & 0o077).toBe(0);
      await queryDatabase(first.url, 'CREATE TABLE kept (n integer)');
      await queryDatabase(first.url, 'INSERT INTO kept VALUES (42)');

      // A second process on the same directory uses the running server.
      const attached = await startPostgresServer({ dir });
      expect(attached).toMatchObject({ started: false, url: first.url });
      await attached.stop();
      expect(await queryDatabase(first.url, 'SELECT n FROM kept')).toEqual([{ n: 42 }]);

      await first.stop();
      await expect(queryDatabase(first.url, 'SELECT 1')).rejects.toThrow();

      second = await startPostgresServer({ dir });
      expect(second.started).toBe(true);
      expect(new URL(second.url).password).toBe(new URL(first.url).password);
      expect(await queryDatabase(second.url, 'SELECT n FROM kept')).toEqual([{ n: 42 }]);
    } finally {
      await first.stop();
      await second?.stop();
    }
  });

  it('removes an ephemeral server with its files on stop', async () => {
    const dir = join(root, 'ephemeral');
    const server = await startPostgresServer({ dir, ephemeral: true, database: 'scratch' });
    expect(new URL(server.url).pathname).toBe('/scratch');
    expect(await queryDatabase(server.url, 'SELECT current_database() AS db')).toEqual([
      { db: 'scratch' },
    ]);
    await server.stop();
    expect(existsSync(dir)).toBe(false);
  });

  it.runIf(process.getuid?.() === 0)(
    'says in one line when the postgres user cannot reach the directory',
    async () => {
      // Root's private directory: the server, running as `postgres`, cannot enter it.
      const closed = join(root, 'closed');
      mkdirSync(closed, { mode: 0o700 });
      const attempt = startPostgresServer({ dir: join(closed, 'postgres'), ephemeral: true });
      await expect(attempt).rejects.toThrow(PostgresServerError);
      await expect(attempt).rejects.toThrow(
        /^Postgres runs as the 'postgres' user .* cannot write [^\n]*$/,
      );
    },
  );

  it.runIf(process.getuid?.() === 0)(
    'starts from a checkout in a directory others cannot enter (root in a mktemp -d)',
    async () => {
      // A clone in root's private directory: node_modules, and the binaries in it, are out of
      // the `postgres` user's reach. The checkout's files are copies, node_modules hard links
      // (the same files, reached only through the closed directory).
      const closed = mkdtempSync(join(tmpdir(), 'ebsync-closed-'));
      try {
        const checkout = join(closed, 'ebsync');
        mkdirSync(checkout);
        for (const entry of ['package.json', 'config', 'worker']) {
          cpSync(join(REPO_ROOT, entry), join(checkout, entry), { recursive: true });
        }
        execFileSync('cp', [
          '-al',
          join(REPO_ROOT, 'node_modules'),
          join(checkout, 'node_modules'),
        ]);
        const script = [
          "import { startPostgresServer } from './worker/postgres-server.ts';",
          "const server = await startPostgresServer({ dir: process.argv[1], ephemeral: true, database: 'postgres' });",
          "console.log('started');",
          'await server.stop();',
          "console.log('stopped');",
        ].join('\n');
        const data = join(root, 'from-closed-checkout');
        const run = await promisify(execFile)(
          process.execPath,
          ['--import', 'tsx', '--input-type=module', '-e', script, data],
          { cwd: checkout, timeout: 120_000 },
        ).catch((error: { code?: number; stdout?: string; stderr?: string }) => error);
        expect(run.stderr?.match(/^Error.*$/m)?.[0] ?? '').toBe('');
        expect(run.stdout?.trim().split('\n')).toEqual(['started', 'stopped']);
      } finally {
        rmSync(closed, { recursive: true, force: true });
      }
    },
    180_000,
  );
});
