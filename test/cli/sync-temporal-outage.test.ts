import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../sandbox/server.js';
import { findTemporalCli } from '../../worker/temporal-cli.js';
import { CliProcess, freePort, runCli } from '../helpers/cli.js';

/**
 * Temporal goes away while `ebsync sync` watches a pass, and comes back: the pass is kept in
 * Temporal's file and goes on, and the command waits for it, saying so, instead of taking the
 * failed call for the end of the pass (it used to exit 3 with the summary of a pass still
 * running). A dev server of this file's own, on a fixed port and a file, stopped and started.
 */
let dir: string;
let sb: Sandbox;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ebsync-sync-outage-'));
  // Paced so that the pass outlasts the wait for its first progress line (slow on a loaded
  // machine) and the outage: 1,500 leads at 15 a page, 8 requests a second, about 13 s.
  sb = await startSandbox({
    certDir: join(dir, 'cert'),
    seed: { leads: 1500, events: 5 },
    rateLimit: 8,
  });
});

afterAll(async () => {
  await sb?.close();
  rmSync(dir, { recursive: true, force: true });
});

const waitFor = async (
  what: string,
  ok: () => boolean,
  ms: number,
  shown: () => string,
): Promise<void> => {
  const until = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > until) throw new Error(`no ${what} within ${ms} ms:\n${shown()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
};

it('keeps watching a pass through a Temporal restart, and ends with its real summary', async () => {
  const port = await freePort();
  const executable = await findTemporalCli();
  const startServer = (): Promise<TestWorkflowEnvironment> =>
    TestWorkflowEnvironment.createLocal({
      server: {
        executable,
        port,
        ip: '127.0.0.1',
        dbFilename: join(dir, 'temporal.db'),
        log: { format: 'pretty', level: 'error' },
      },
    });
  const env = {
    TEMPORAL_ADDRESS: `127.0.0.1:${port}`,
    TEMPORAL_TASK_QUEUE: 'sync-outage',
    EBS_BASE_URL: sb.baseUrl,
    EBS_API_KEY: sb.apiKey,
    EBS_CA_FILE: sb.caFile ?? '',
    EBS_RATE_LIMIT: '8',
    EBS_PAGE_SIZE: '15',
    EBSYNC_DATA_DIR: join(dir, 'data'),
  };
  let server: TestWorkflowEnvironment | undefined = await startServer();
  const worker = new CliProcess(['worker'], env);
  let sync: CliProcess | undefined;
  try {
    await worker.waitForLine(/worker started/, 90_000);
    const connected = await runCli(['connect', '--api-key'], env);
    expect(connected.code, connected.stderr).toBe(0);
    const mirror = join(dir, 'mirror.db');
    sync = new CliProcess(['sync', 'leads', '--full', '--to', `sqlite:${mirror}`], env);
    const watching = sync;
    const shown = () => `sync stderr:\n${watching.stderr}\nsync stdout:\n${watching.stdout}`;
    await waitFor('progress line', () => /reading|writing/.test(watching.stderr), 60_000, shown);

    await server.teardown();
    server = undefined;
    await waitFor(
      'line saying Temporal is away',
      () => /Temporal has not answered for 15 s/.test(watching.stderr),
      40_000,
      shown,
    );
    expect(watching.running).toBe(true);
    server = await startServer();

    const ended = await watching.exited;
    expect(ended.stderr).toContain(
      'Temporal has not answered for 15 s: the pass is kept there and goes on once it is back; this command goes on watching until then, and Ctrl-C stops watching it\n',
    );
    expect(ended.stderr).toContain('Temporal answers again; watching the pass\n');
    expect(ended.code, ended.stderr).toBe(0);
    expect(ended.stdout).toMatch(/written\s+\d+ changed or new/);
    const db = new Database(mirror, { readonly: true });
    try {
      expect(db.prepare('SELECT count(*) AS n FROM leads').get()).toEqual({ n: 1500 });
    } finally {
      db.close();
    }
  } finally {
    sync?.killAll();
    await worker.stop('SIGTERM', 30_000).catch(() => undefined);
    await server?.teardown();
  }
}, 300_000);
