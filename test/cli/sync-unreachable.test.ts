import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../sandbox/server.js';
import { CliProcess, runCli } from '../helpers/cli.js';

/**
 * `ebsync sync` as a user runs it against a service whose reach no cut can get under for
 * some leads: it must not say "done" and exit 0 (issue 29's table): it exits 3, its summary
 * names how many records it could not reach and where, and `ebsync status` shows a problem.
 */
let dir: string;
let sb: Sandbox;
let worker: CliProcess;
let env: Record<string, string>;

// A reach of 2 leaves leads that share every value the filters can cut by beyond reach.
const REACH = 2;
const LEADS = 120;
const CONNECTION = 'unreachable';

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ebsync-sync-unreachable-'));
  sb = await startSandbox({
    certDir: join(dir, 'cert'),
    reachLimit: REACH,
    seed: { leads: LEADS, events: 0 },
  });
  env = {
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: `sync-unreachable-${Date.now()}`,
    EBS_BASE_URL: sb.baseUrl,
    EBS_API_KEY: sb.apiKey,
    EBS_CA_FILE: sb.caFile ?? '',
    EBSYNC_DATA_DIR: join(dir, 'data'),
  };
  worker = new CliProcess(['worker'], env);
  await worker.waitForLine(/worker started/, 90_000);
  // A name of its own: the dev server is shared, and other files' 'default' lives on
  // their task queues.
  const connect = await runCli(['connect', '--api-key', '--name', CONNECTION], env);
  expect(connect.code, connect.stderr).toBe(0);
}, 180_000);

afterAll(async () => {
  await worker?.stop('SIGTERM', 30_000);
  await sb?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('ebsync sync when the service keeps some leads out of reach', () => {
  it('exits 3, says how many leads it could not reach and where, and ebsync status shows the problem', async () => {
    const file = join(dir, 'mirror.db');
    const sync = await runCli(
      ['sync', 'leads', '--full', '--connection', CONNECTION, '--to', `sqlite:${file}`],
      env,
      180_000,
    );
    const db = new Database(file, { readonly: true });
    const mirrored = (db.prepare('SELECT count(*) AS n FROM leads').get() as { n: number }).n;
    db.close();
    expect(mirrored).toBeLessThan(LEADS);
    expect(sync.code, sync.stdout + sync.stderr).toBe(3);
    expect(sync.stdout).toMatch(/: incomplete/);
    expect(sync.stdout).not.toMatch(/: done/);
    // The leads it says it could not reach are exactly those missing, each where the plan
    // left it (which query, which filters were tried).
    const gaps = [...sync.stdout.matchAll(/^ +leads: (\d+) unreachable in .+ \(tried .+\)$/gm)];
    expect(gaps.length).toBeGreaterThan(0);
    expect(gaps.reduce((sum, m) => sum + Number(m[1]), 0)).toBe(LEADS - mirrored);

    const status = await runCli(['status', '--json'], env);
    const problems = (JSON.parse(status.stdout) as { problems: { kind: string }[] }).problems;
    expect(problems.map((p) => p.kind)).toContain('last_pass_incomplete');
  }, 240_000);
});
