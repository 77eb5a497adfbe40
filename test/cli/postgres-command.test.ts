import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { CliProcess, runCli } from '../helpers/cli.js';
import { closedPort } from '../helpers/ports.js';

const dir = mkdtempSync(join(tmpdir(), 'ebsync-postgres-command-'));
// Run as root, Postgres runs as the 'postgres' user, who must be able to enter the folder.
chmodSync(dir, 0o755);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('ebsync postgres', () => {
  it('runs a local Postgres a store or destination can use, shows no password, stops on Ctrl-C', async () => {
    const port = await closedPort();
    const env = { EBSYNC_DATA_DIR: join(dir, 'data') };
    const server = new CliProcess(
      ['postgres', '--port', String(port), '--database', 'mirror'],
      env,
    );
    try {
      await server.waitForLine(/^Postgres ready at /, 120_000);
      const folder = join(dir, 'data', 'postgres');
      // The data dir it made is owner-only; as root the server runs as `postgres`, whose group
      // may pass through it to its cluster, no more.
      const dataMode = (statSync(join(dir, 'data')).mode & 0o777).toString(8);
      expect(dataMode).toBe(process.getuid?.() === 0 ? '710' : '700');
      expect(server.stdout).toContain(`Postgres ready at postgres://***@127.0.0.1:${port}/mirror`);
      const password = readFileSync(join(folder, 'password'), 'utf8').trim();
      expect(server.stdout + server.stderr).not.toContain(password);
      // The line it prints, with the password read from its file as the shell would.
      const exported = /export EBSYNC_STORE_URL="([^"]+)"/.exec(server.stdout)?.[1] ?? '';
      expect(exported).toBe(
        `postgres://postgres:$(cat '${folder}/password')@127.0.0.1:${port}/mirror`,
      );
      const client = new pg.Client(exported.replace(/\$\(cat '[^']+'\)/, password));
      await client.connect();
      try {
        expect((await client.query('SELECT current_database() AS db')).rows).toEqual([
          { db: 'mirror' },
        ]);
      } finally {
        await client.end();
      }
      // A second start attaches to it, on its port; asked for another, it says so, exit 1.
      const attached = await runCli(
        ['postgres', '--port', String(port), '--database', 'mirror'],
        env,
      );
      expect(attached.code, attached.stderr).toBe(0);
      expect(attached.stdout).toContain(
        `Postgres already running at postgres://***@127.0.0.1:${port}/mirror`,
      );
      const other = await closedPort();
      const elsewhere = await runCli(['postgres', '--port', String(other)], env);
      expect(elsewhere.code).toBe(1);
      expect(elsewhere.stderr).toBe(
        `ebsync: the Postgres of ${folder} already runs on port ${port}, not --port ${other}: use that port, or stop it (Ctrl-C where it was started) to run it on another\n`,
      );
      const stopped = await server.interrupt(30_000);
      expect(stopped.code, stopped.stderr).toBe(0);
      const after = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password });
      await expect(after.connect()).rejects.toThrow(/ECONNREFUSED/);
    } finally {
      server.killAll();
    }
  }, 180_000);

  it('a --port in use is one line naming the flag, as sandbox and webhooks serve say it, before initdb', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as AddressInfo).port;
    try {
      const result = await runCli(['postgres', '--port', String(port)], {
        EBSYNC_DATA_DIR: join(dir, 'busy'),
      });
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        `ebsync: cannot listen on 127.0.0.1 port ${port}: the port is in use; choose another with --port\n`,
      );
      expect(existsSync(join(dir, 'busy', 'postgres', 'cluster'))).toBe(false);
    } finally {
      taken.close();
    }
  }, 120_000);

  it('says so in one line and exits 1 when its server dies under it', async () => {
    // Found by killing the server of a shared store under load (an OOM kill, a crash): the
    // command ended with exit 13 and Node's "unsettled top-level await" warning, nothing of
    // Postgres, while the workers lost their store.
    const port = await closedPort();
    const data = join(dir, 'dies');
    const server = new CliProcess(['postgres', '--port', String(port)], { EBSYNC_DATA_DIR: data });
    try {
      await server.waitForLine(/^Postgres ready at /, 120_000);
      const pidFile = join(data, 'postgres', 'cluster', 'postmaster.pid');
      const serverPid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
      expect(serverPid).toBeGreaterThan(0);
      process.kill(serverPid, 'SIGKILL');
      const ended = await server.endsWithin(30_000, 'its server died');
      expect(ended.code, ended.stderr).toBe(1);
      const lines = ended.stderr.trim().split('\n');
      expect(lines, ended.stderr).toHaveLength(1);
      expect(lines[0]).toMatch(
        /^ebsync: the local Postgres of .+ stopped on its own \(killed by SIGKILL\)/,
      );
    } finally {
      server.killAll();
    }
  }, 180_000);

  it('refuses a database name it cannot create: one line, exit 2', async () => {
    const result = await runCli(['postgres', '--database', 'Bad-Name'], {
      EBSYNC_DATA_DIR: join(dir, 'other'),
    });
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toContain("--database 'Bad-Name' is not allowed");
  });
});
