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

/** A dev server on `port` keeping its runs in `file` (under the test's folder). */
const serverOf =
  (port: number, executable: Awaited<ReturnType<typeof findTemporalCli>>) =>
  (file: string): Promise<TestWorkflowEnvironment> =>
    TestWorkflowEnvironment.createLocal({
      server: {
        executable,
        port,
        ip: '127.0.0.1',
        dbFilename: join(dir, file),
        log: { format: 'pretty', level: 'error' },
      },
    });

/** The command's settings against the dev server on `port`, each case a data dir of its own. */
const envOf = (port: number, name: string): Record<string, string> => ({
  TEMPORAL_ADDRESS: `127.0.0.1:${port}`,
  TEMPORAL_TASK_QUEUE: `sync-outage-${name}`,
  EBS_BASE_URL: sb.baseUrl,
  EBS_API_KEY: sb.apiKey,
  EBS_CA_FILE: sb.caFile ?? '',
  EBS_RATE_LIMIT: '8',
  EBS_PAGE_SIZE: '15',
  EBSYNC_DATA_DIR: join(dir, name),
});

interface WatchedPass {
  /** `ebsync sync leads --full` into `mirror`, seen reading. */
  watching: CliProcess;
  shown: () => string;
  mirror: string;
  stopServer: () => Promise<void>;
  /** Starts the dev server again, its runs kept in `file`. */
  startServer: (file: string) => Promise<void>;
}

/** A dev server, a worker and a connection of their own, and a pass watched by the command. */
async function withWatchedPass(
  name: string,
  body: (pass: WatchedPass) => Promise<void>,
): Promise<void> {
  const port = await freePort();
  const start = serverOf(port, await findTemporalCli());
  const env = envOf(port, name);
  let server: TestWorkflowEnvironment | undefined = await start(`${name}-temporal.db`);
  const worker = new CliProcess(['worker'], env);
  let sync: CliProcess | undefined;
  try {
    await worker.waitForLine(/worker started/, 90_000);
    const connected = await runCli(['connect', '--api-key'], env);
    expect(connected.code, connected.stderr).toBe(0);
    const mirror = join(dir, `${name}.db`);
    sync = new CliProcess(['sync', 'leads', '--full', '--to', `sqlite:${mirror}`], env);
    const watching = sync;
    const shown = () => `sync stderr:\n${watching.stderr}\nsync stdout:\n${watching.stdout}`;
    await waitFor('progress line', () => /reading|writing/.test(watching.stderr), 60_000, shown);
    await body({
      watching,
      shown,
      mirror,
      stopServer: async () => {
        await server?.teardown();
        server = undefined;
      },
      startServer: async (file) => {
        server = await start(file);
      },
    });
  } finally {
    sync?.killAll();
    await worker.stop('SIGTERM', 30_000).catch(() => undefined);
    await server?.teardown();
  }
}

it('keeps watching a pass through a Temporal restart, and ends with its real summary', async () => {
  await withWatchedPass('kept', async ({ watching, shown, mirror, stopServer, startServer }) => {
    await stopServer();
    await waitFor(
      'line saying Temporal is away',
      () => /Temporal has not answered for 15 s/.test(watching.stderr),
      40_000,
      shown,
    );
    expect(watching.running).toBe(true);
    await startServer('kept-temporal.db');

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
  });
}, 300_000);

// A dev server started again without its file (another --db-filename, or in memory) knows
// none of the old runs: the command waited for Temporal, then ended on Temporal's own words,
// "workflow not found for ID: mirror-…", naming nothing to run.
it('says the pass is gone, and what starts a new one, when Temporal comes back without it', async () => {
  await withWatchedPass('lost', async ({ watching, shown, mirror, stopServer, startServer }) => {
    const workflowId = /started the mirror \((mirror-[^)]+)\)/.exec(watching.stderr)?.[1];
    expect(workflowId, shown()).toBeDefined();
    await stopServer();
    await startServer('lost-again-temporal.db');
    const ended = await watching.exited;
    expect(ended.code, shown()).toBe(1);
    const last = ended.stderr.trimEnd().split('\n').at(-1);
    expect(last).toBe(
      `ebsync: the pass ${workflowId} is gone from Temporal, which no longer knows it (a server ` +
        `started again without its data, or the workflow deleted): it runs nowhere; what it ` +
        `wrote stays in the destination, and 'ebsync sync leads --full --to sqlite:${mirror}' ` +
        `starts a new pass`,
    );
    expect(ended.stderr).not.toMatch(/workflow not found/);
  });
}, 300_000);
