import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { saveConnection } from '../cli/connections.js';
import { collectStatus } from '../cli/status-model.js';
import { startOrAttach } from '../cli/sync.js';
import { loadConfig } from '../config/index.js';
import { startSandbox } from '../sandbox/server.js';
import { connectClient } from '../worker/temporal-client.js';
import { findTemporalCli } from '../worker/temporal-cli.js';
import { fmt, ROOT, summarize, track, type Benchmark } from './lib.js';

const CONNECTIONS = 50;
const MIRRORS = 5;
const LOADS = 40;
const TARGET_MS = 300;
const ADMIN_TOKEN = 'bench-console-admin-token-0123456789';

/** Starts `ebsync <args>` and resolves with the first stdout line matching `pattern`. */
export function cli(
  args: string[],
  env: Record<string, string>,
  pattern: RegExp,
): Promise<{ child: ChildProcess; line: string }> {
  const child = spawn(process.execPath, ['cli/ebsync.js', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  track(child);
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(
      () => reject(new Error(`ebsync ${args.join(' ')}: no ${pattern}`)),
      120_000,
    );
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      const line = out.split('\n').find((l) => pattern.test(l));
      if (line !== undefined) {
        clearTimeout(timer);
        resolve({ child, line });
      }
    });
    child.once('exit', (code) => reject(new Error(`ebsync ${args.join(' ')} exited ${code}`)));
  });
}

/**
 * The first fetch of a process sets up its HTTP client (tens of ms): done once against a
 * throwaway local server, so the first timed load is the page's time, not this process's.
 */
async function warmFetch(): Promise<void> {
  const server = createServer((_request, response) => response.end('ok'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  try {
    await (await fetch(`http://127.0.0.1:${port}/`)).text();
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

async function timedGet(url: string): Promise<number> {
  const started = performance.now();
  const res = await fetch(url);
  await res.text();
  if (!res.ok) throw new Error(`GET ${url}: ${res.status}`);
  return performance.now() - started;
}

export const consoleBenchmark: Benchmark = {
  name: 'console',
  title: `Status page: load with ${CONNECTIONS} connections`,
  async run(ctx) {
    const work = mkdtempSync(join(tmpdir(), 'ebsync-bench-console-'));
    let server: TestWorkflowEnvironment | undefined;
    const sandbox = await startSandbox({
      certDir: join(work, 'cert'),
      seed: { leads: 50, events: 5 },
    });
    const children: ChildProcess[] = [];
    try {
      ctx.log('starting a Temporal dev server');
      server = await TestWorkflowEnvironment.createLocal({
        server: {
          executable: await findTemporalCli(),
          dbFilename: join(work, 'temporal.db'),
          log: { format: 'pretty', level: 'error' },
        },
      });
      const env = {
        TEMPORAL_ADDRESS: server.address,
        TEMPORAL_TASK_QUEUE: 'bench-console',
        EBS_BASE_URL: sandbox.baseUrl,
        EBS_CA_FILE: sandbox.caFile ?? '',
        EBSYNC_DATA_DIR: join(work, 'data'),
        EBSYNC_STATUS_PORT: '0',
        EBSYNC_ADMIN_TOKEN: ADMIN_TOKEN,
      };
      ctx.log('starting a worker');
      children.push((await cli(['worker'], env, /worker started/)).child);
      const config = loadConfig({ ...process.env, ...env });
      const { client, close } = await connectClient(config);
      ctx.log(`connecting ${CONNECTIONS} businesses and mirroring ${MIRRORS}`);
      for (let i = 0; i < CONNECTIONS; i++) {
        await saveConnection(
          client,
          config,
          {
            connectionId: `bench-${String(i).padStart(2, '0')}`,
            kind: 'integration_key',
            baseUrl: sandbox.baseUrl,
            permissions: [],
          },
          { kind: 'apiKey', apiKey: sandbox.apiKey },
        );
      }
      for (let i = 0; i < MIRRORS; i++) {
        const { handle } = await startOrAttach(client, config, {
          subjects: ['leads', 'events', 'appointments'],
          destination: `sqlite:${join(work, `mirror-${i}.db`)}`,
          full: false,
          connectionId: `bench-${String(i).padStart(2, '0')}`,
        });
        await handle.result();
      }
      ctx.log('starting the status page');
      const page = await cli(['status', '--serve'], env, /^Status page: http/);
      children.push(page.child);
      const url = /(http:\/\/\S+)/.exec(page.line)?.[1];
      if (!url) throw new Error(`no address in '${page.line}'`);
      await warmFetch();
      const started = performance.now();
      const first = await timedGet(url);
      // The page shows its report once /fragment answers: the first one waits for the report.
      await timedGet(new URL('fragment', url).href);
      const firstReport = performance.now() - started;
      const loads: number[] = [];
      for (let i = 0; i < LOADS; i++) loads.push(await timedGet(url));
      // What the background refresh costs: one report gathered from Temporal, nothing cached.
      const reports: number[] = [];
      try {
        for (let i = 0; i < 5; i++) {
          const started = performance.now();
          await collectStatus(client, config);
          reports.push(performance.now() - started);
        }
      } finally {
        await close();
      }
      const s = summarize(loads);
      return {
        method:
          `\`ebsync status --serve\` (a real worker, ${CONNECTIONS} connection workflows on a fresh ` +
          `Temporal dev server, ${MIRRORS} of them with a completed mirror pass) timed from this ` +
          `process over HTTP (its HTTP client warmed on a throwaway server first): the first load right after the page's address is printed, the ` +
          `time until that page's report is there (its \`/fragment\` answered), then ${LOADS} ` +
          `loads of \`/\` in a row.`,
        tables: [
          {
            head: ['load of /', 'ms'],
            rows: [
              ['first, right after start', fmt(first, 0)],
              ['first report on the page, right after start', fmt(firstReport, 0)],
              ['p50', fmt(s.p50, 0)],
              ['p95', fmt(s.p95, 0)],
              ['max', fmt(s.max, 0)],
              [
                'one report gathered from Temporal, uncached (p50 of 5)',
                fmt(summarize(reports).p50, 0),
              ],
            ],
          },
        ],
        notes: [
          `Target: page load ≤ ${TARGET_MS} ms with ${CONNECTIONS} connections: ${
            s.p95 <= TARGET_MS ? '**met**' : '**NOT met**'
          } at p95 (${fmt(s.p95, 0)} ms); the first load right after start took ${fmt(first, 0)} ms ` +
            `(${first <= TARGET_MS ? 'within' : 'over'} the target), and its report was on the page after ${fmt(firstReport, 0)} ms.`,
          'Before its first report the page comes at once with "Reading the status from Temporal…" and fetches the report itself; the server starts gathering it at start.',
          'A load renders the last report, which the page server refreshes every 2 s in the background; closed passes are read once and kept.',
        ],
      };
    } finally {
      for (const child of children) child.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, 1_000));
      await server?.teardown();
      await sandbox.close();
      rmSync(work, { recursive: true, force: true });
    }
  },
};
