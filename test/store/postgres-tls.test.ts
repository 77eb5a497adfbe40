import { chownSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { sandboxCertificate } from '../../sandbox/tls.js';
import { createPostgresPool, withLibpqSslMode } from '../../store/postgres-pool.js';
import { startPostgresServer, type PostgresServer } from '../../worker/postgres-server.js';
import { runCli } from '../helpers/cli.js';
import { startCliStack, type CliStack } from '../helpers/cli-stack.js';

/**
 * A Postgres URL's `sslmode` means what libpq (psql) makes of it, and the driver prints nothing
 * about it. node-postgres 8 took `require` as `verify-full` (a provider's self-signed server
 * was refused) and printed a 9-line "SECURITY WARNING" into `ebsync sync` and the worker's
 * log. Here against a real Postgres serving TLS with a self-signed certificate for 127.0.0.1,
 * whose certificate is its own authority.
 */
const warnings: string[] = [];
const onWarning = (warning: Error): void => {
  warnings.push(warning.message);
};
process.on('warning', onWarning);

let server: PostgresServer;
let caFile: string;
/** The TLS server's URL with these parameters. */
const tlsUrl = (params: string): string => `${server.url}?${params}`;

beforeAll(async () => {
  server = await startPostgresServer({
    dir: mkdtempSync(join(tmpdir(), 'ebsync-pg-tls-')),
    ephemeral: true,
    database: 'mirror',
  });
  const certificate = await sandboxCertificate(join(server.dir, 'cert'));
  caFile = certificate.caFile;
  // The server's default ssl_cert_file and ssl_key_file, in its data directory, owned by the
  // user it runs as (postgres, when the tests run as root).
  const cluster = join(server.dir, 'cluster');
  const owner = statSync(cluster);
  for (const [name, text] of [
    ['server.crt', certificate.cert],
    ['server.key', certificate.key],
  ] as const) {
    writeFileSync(join(cluster, name), text, { mode: 0o600 });
    chownSync(join(cluster, name), owner.uid, owner.gid);
  }
  await query(server.url, 'ALTER SYSTEM SET ssl = on');
  await query(server.url, 'SELECT pg_reload_conf()');
  const deadline = Date.now() + 15_000;
  while ((await query(server.url, 'SHOW ssl'))[0]?.ssl !== 'on') {
    if (Date.now() > deadline) throw new Error('the test Postgres did not turn TLS on');
    await new Promise((r) => setTimeout(r, 200));
  }
}, 120_000);

afterAll(async () => {
  process.off('warning', onWarning);
  await server?.stop();
});

/** One statement on a pool of ebsync's own (createPostgresPool), its rows. */
async function query(url: string, sql: string): Promise<Record<string, unknown>[]> {
  const pool = createPostgresPool(url, { max: 1, applicationName: 'ebsync-tls-test' });
  try {
    return (await pool.query(sql)).rows as Record<string, unknown>[];
  } finally {
    await pool.end();
  }
}

/** Whether the connection of `url` is encrypted, as the server sees it. */
async function encrypted(url: string): Promise<unknown> {
  const [row] = await query(url, 'SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()');
  return row?.ssl;
}

describe('sslmode as node-postgres is given it', () => {
  it.each([
    ['sslmode=require', 'sslmode=require&uselibpqcompat=true'],
    ['sslmode=verify-full', 'sslmode=verify-full&uselibpqcompat=true'],
    ['sslmode=prefer', 'sslmode=require&uselibpqcompat=true'],
    ['sslmode=allow', 'sslmode=require&uselibpqcompat=true'],
    ['sslmode=disable', 'sslmode=disable&uselibpqcompat=true'],
    ['sslmode=no-verify', 'sslmode=no-verify'],
    ['application_name=x', 'application_name=x'],
    ['sslmode=require&uselibpqcompat=false', 'sslmode=require&uselibpqcompat=false'],
  ])('?%s → ?%s', (given, passed) => {
    expect(withLibpqSslMode(`postgres://u:p%40w@db.example:5432/d?${given}`)).toBe(
      `postgres://u:p%40w@db.example:5432/d?${passed}`,
    );
  });
});

describe('sslmode against a real Postgres', () => {
  it('require: encrypted, the certificate not checked (as psql), and no warning', async () => {
    expect(await encrypted(tlsUrl('sslmode=require'))).toBe(true);
    expect(await encrypted(tlsUrl('sslmode=prefer'))).toBe(true);
    expect(warnings.filter((w) => w.includes('SECURITY WARNING'))).toEqual([]);
  });

  it('verify-full checks the certificate and the host: against sslrootcert, or refused', async () => {
    await expect(encrypted(tlsUrl('sslmode=verify-full'))).rejects.toThrow(/self-signed/);
    expect(await encrypted(tlsUrl(`sslmode=verify-full&sslrootcert=${caFile}`))).toBe(true);
    expect(await encrypted(tlsUrl(`sslmode=verify-ca&sslrootcert=${caFile}`))).toBe(true);
  });

  it('disable is in the clear; require to a server without TLS is refused, not sent in the clear', async () => {
    expect(await encrypted(tlsUrl('sslmode=disable'))).toBe(false);
    await expect(query(`${inject('postgresUrl')}?sslmode=require`, 'SELECT 1')).rejects.toThrow(
      /does not support SSL/,
    );
  });
});

describe('ebsync sync into a Postgres URL with ?sslmode=require', () => {
  let stack: CliStack;
  beforeAll(async () => {
    stack = await startCliStack({
      name: 'pg-tls',
      sandbox: { seed: { leads: 20, events: 0 } },
      connect: 'tls',
    });
  }, 180_000);
  afterAll(async () => {
    await stack?.close();
  });

  it('mirrors over TLS and prints no SECURITY WARNING, in the command or the worker', async () => {
    const sync = await runCli(
      ['sync', 'leads', '--to', tlsUrl('sslmode=require&schema=tls')],
      stack.env,
      120_000,
    );
    expect(sync.code, sync.stderr).toBe(0);
    expect(sync.stdout).toMatch(/: done\n/);
    expect(sync.stdout + sync.stderr).not.toContain('SECURITY WARNING');
    expect(stack.worker.stdout + stack.worker.stderr).not.toContain('SECURITY WARNING');
    const [row] = await query(
      tlsUrl('sslmode=require'),
      'SELECT count(*)::int AS n FROM tls.leads',
    );
    expect(row?.n).toBe(20);
  }, 150_000);
});
