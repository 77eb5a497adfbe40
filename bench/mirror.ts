import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Client, Connection } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { apiKeyAuth } from '../api/auth.js';
import { createClient } from '../api/client.js';
import { loadConfig } from '../config/index.js';
import { dataConverter } from '../worker/data-converter.js';
import { mirrorWorkflow } from '../workflows/mirror.js';
import type { MirrorSummary } from '../workflows/mirror-types.js';
import { WORKER_LAUNCH } from '../worker/heap-mode.js';
import {
  cpuSeconds,
  fmt,
  memoryMiB,
  ratio,
  ROOT,
  seededSandbox,
  startBenchTemporal,
  writeWorkflowBundle,
  track,
  type BenchContext,
  type Benchmark,
  type SeededSandbox,
} from './lib.js';
import type {
  MirrorProcessSettings,
  NaiveResult,
  RequestCounts,
  WorkerReport,
} from './mirror-process.js';

/** Sizes of the one run: the small one is the base of the growth ratios. */
const SMALL = 10_000;
const LARGE = 100_000;
const PER = 100;
const REACH = 10_000;
const TABLES = ['leads', 'lead_bookings', 'events', 'event_bookings', 'appointments'] as const;

const TARGET = {
  /** ebsync throughput / naive throughput, at the large size. */
  speed: 0.8,
  /** Lead requests over the ideal ceil(leads / per): at most 1 % more. */
  requestsOver: 0.01,
  peakRssMiB: 300,
  rssGrowth: 1.2,
  timeGrowth: 11,
};

interface Side {
  seconds: number;
  written: number;
  read: number;
  requests: RequestCounts;
  peakRssMiB: number;
  cpuSeconds: number;
  rows: Record<string, number>;
}

interface SizeRun {
  leads: number;
  /** total_count and per_page of the leads list, as the service answers. */
  totalLeads: number;
  perGranted: number;
  sandbox: SeededSandbox;
  naive: Side;
  ebsync: Side & { summary: MirrorSummary; readyRssMiB: number };
  /** See cutFloor; null where the mirrored leads do not allow it to be counted. */
  floor: CutFloor | null;
}

/** Peak memory and CPU time of a child, sampled while it lives (both vanish with it). */
function watch(child: ChildProcess): { read(): { peakRssMiB: number; cpuSeconds: number } } {
  let peak = 0;
  let cpu = 0;
  const sample = () => {
    peak = Math.max(peak, memoryMiB(child.pid).peak ?? 0);
    cpu = Math.max(cpu, cpuSeconds(child.pid) ?? 0);
  };
  const timer = setInterval(sample, 250);
  child.once('exit', () => clearInterval(timer));
  return {
    read() {
      sample();
      return { peakRssMiB: peak, cpuSeconds: cpu };
    },
  };
}

/** One side of the benchmark (bench/mirror-process.ts) in its own process. */
function spawnSide(side: 'naive' | 'worker', settings: MirrorProcessSettings) {
  // The worker side starts as cli/ebsync.js starts `ebsync worker`: a small young generation
  // and few malloc arenas (worker/heap-mode.ts).
  const worker = side === 'worker';
  const nodeFlags = worker ? WORKER_LAUNCH.nodeFlags : [];
  const tuning = worker ? WORKER_LAUNCH.env : {};
  const child = spawn(
    process.execPath,
    [...nodeFlags, '--import', 'tsx', 'bench/mirror-process.ts', side],
    {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        ...tuning,
        BENCH_MIRROR: JSON.stringify(settings),
        EBSYNC_LOG_LEVEL: 'warn',
      },
    },
  );
  track(child);
  const meter = watch(child);
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => (err = (err + chunk).slice(-4000)));
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  child.stdout.on('data', (chunk: string) => {
    out += chunk;
    if (/^ready$/m.test(out)) markReady();
  });
  const result = new Promise<string>((resolve, reject) => {
    child.once('exit', (code, signal) => {
      const last = out.trim().split('\n').pop() ?? '';
      if (code === 0 && last.startsWith('{')) resolve(last);
      else
        reject(new Error(`${side} exited (${code ?? signal}); stderr: ${err.trim().slice(-800)}`));
    });
  });
  // Whoever waits on `ready` learns of an early exit too.
  const readyOrExit = Promise.race([ready, result.then(() => undefined)]);
  return { child, meter, ready: readyOrExit, result };
}

/** The fewest lead requests for the leads as mirrored: see cutFloor. */
interface CutFloor {
  requests: number;
  /** Origins over the reach: the pass learns it from their first pages. */
  overReach: number;
}

/**
 * The fewest lead requests a pass cutting as ebsync's does (by origin, then by e-mail domain
 * within an origin over the reach) could make if it knew every count beforehand: the root's
 * first page, the only way to learn that the leads are over the reach, then each part's pages
 * and nothing else. Counted in the mirrored table, which holds the source's leads; null where
 * a lead has no origin or e-mail, or one domain of an origin is over the reach by itself.
 */
function cutFloor(file: string, per: number, reach: number): CutFloor | null {
  const db = new Database(file, { readonly: true });
  try {
    const pages = (n: number) => Math.ceil(n / per);
    const { total } = db
      .prepare(`SELECT count(*) AS total FROM leads WHERE deleted_at IS NULL`)
      .get() as { total: number };
    if (total <= reach) return { requests: pages(total), overReach: 0 };
    const origins = db
      .prepare(`SELECT origin, count(*) AS n FROM leads WHERE deleted_at IS NULL GROUP BY origin`)
      .all() as { origin: string | null; n: number }[];
    const domains = db.prepare(
      `SELECT lower(substr(email, instr(email, '@') + 1)) AS domain, count(*) AS n FROM leads
       WHERE deleted_at IS NULL AND origin = ? GROUP BY domain`,
    );
    let requests = 1;
    let overReach = 0;
    for (const { origin, n } of origins) {
      if (origin === null) return null;
      if (n <= reach) {
        requests += pages(n);
        continue;
      }
      overReach += 1;
      const parts = domains.all(origin) as { domain: string | null; n: number }[];
      if (parts.some((p) => !p.domain || p.n > reach)) return null;
      for (const part of parts) requests += pages(part.n);
    }
    return { requests, overReach };
  } finally {
    db.close();
  }
}

function rowCounts(file: string): Record<string, number> {
  const db = new Database(file, { readonly: true });
  try {
    return Object.fromEntries(
      TABLES.map((t) => [
        t,
        (db.prepare(`SELECT count(*) AS n FROM ${t}`).get() as { n: number }).n,
      ]),
    );
  } finally {
    db.close();
  }
}

const sum = (counts: RequestCounts) => Object.values(counts).reduce((a, b) => a + b, 0);
const leadRequests = (counts: RequestCounts) =>
  (counts['leads.list'] ?? 0) + (counts['leads.get'] ?? 0);

async function runSize(
  ctx: BenchContext,
  leads: number,
  work: string,
  temporal: { address: string; client: (dataDir: string) => Promise<Client>; bundlePath: string },
): Promise<SizeRun> {
  const label = leads.toLocaleString('en-US');
  ctx.log(`${label} leads: starting the sandbox (HTTPS)`);
  const sandbox = await seededSandbox({ leads, http: false });
  try {
    const base = {
      baseUrl: sandbox.baseUrl,
      apiKey: sandbox.apiKey,
      ...(sandbox.caFile ? { caFile: sandbox.caFile } : {}),
      per: PER,
      reachLimit: REACH,
    };
    const probe = createClient({
      baseUrl: sandbox.baseUrl,
      auth: apiKeyAuth(sandbox.apiKey),
      ...(sandbox.caFile ? { ca: readFileSync(sandbox.caFile) } : {}),
    });
    // Warms the sandbox (its first pages are slower) for both sides alike.
    let first = await probe.leads.list({ page: 1, per: PER });
    for (let page = 2; page <= 20; page += 1) await probe.leads.list({ page, per: PER });
    first = await probe.leads.list({ page: 1, per: PER });
    const totalLeads = first.meta.total_count ?? leads;
    const perGranted = first.meta.per_page ?? PER;

    // The naive loop.
    const naiveDir = join(work, `naive-${leads}`);
    mkdirSync(naiveDir, { recursive: true });
    ctx.log(`${label} leads: naive loop`);
    const naiveProc = spawnSide('naive', {
      ...base,
      dataDir: naiveDir,
      ledger: `sqlite:${join(naiveDir, 'store.db')}`,
      destination: `sqlite:${join(naiveDir, 'mirror.db')}`,
    });
    const naiveResult = JSON.parse(await naiveProc.result) as NaiveResult;
    const naive: Side = {
      seconds: naiveResult.seconds,
      written: naiveResult.counts.written,
      read: naiveResult.counts.written + naiveResult.counts.unchanged,
      requests: naiveResult.requests,
      ...naiveProc.meter.read(),
      rows: rowCounts(join(naiveDir, 'mirror.db')),
    };
    ctx.log(
      `${label} leads: naive ${fmt(naive.seconds, 1)} s, ${sum(naive.requests)} requests, peak RSS ${fmt(naive.peakRssMiB, 0)} MiB`,
    );

    // ebsync: a fresh worker process, then one mirror pass started as `ebsync sync all` would.
    const ebsyncDir = join(work, `ebsync-${leads}`);
    mkdirSync(ebsyncDir, { recursive: true });
    const client = await temporal.client(ebsyncDir);
    const taskQueue = `bench-mirror-${leads}`;
    const destination = `sqlite:${join(ebsyncDir, 'mirror.db')}`;
    const worker = spawnSide('worker', {
      ...base,
      dataDir: ebsyncDir,
      ledger: `sqlite:${join(ebsyncDir, 'store.db')}`,
      destination,
      temporalAddress: temporal.address,
      taskQueue,
      bundlePath: temporal.bundlePath,
    });
    let ebsync: SizeRun['ebsync'];
    try {
      await worker.ready;
      const readyRssMiB = memoryMiB(worker.child.pid).current ?? Number.NaN;
      ctx.log(`${label} leads: ebsync (worker pid ${worker.child.pid})`);
      const started = performance.now();
      const summary = await client.workflow.execute(mirrorWorkflow, {
        taskQueue,
        workflowId: `bench-mirror-${leads}-${Date.now()}`,
        args: [
          {
            connectionId: 'bench',
            destination,
            subjects: ['leads', 'events', 'appointments'],
            mode: 'full',
          },
        ],
      });
      const seconds = (performance.now() - started) / 1000;
      const meter = worker.meter.read();
      worker.child.kill('SIGTERM');
      const report = JSON.parse(await worker.result) as WorkerReport;
      ebsync = {
        seconds,
        written: summary.counts.written,
        read: summary.counts.written + summary.counts.unchanged,
        requests: report.requests,
        ...meter,
        rows: rowCounts(join(ebsyncDir, 'mirror.db')),
        summary,
        readyRssMiB,
      };
    } finally {
      if (worker.child.exitCode === null) worker.child.kill('SIGKILL');
      await client.connection.close();
    }
    ctx.log(
      `${label} leads: ebsync ${fmt(ebsync.seconds, 1)} s, ${sum(ebsync.requests)} requests, worker peak RSS ${fmt(ebsync.peakRssMiB, 0)} MiB`,
    );
    const floor = cutFloor(join(ebsyncDir, 'mirror.db'), perGranted, REACH);
    return { leads, totalLeads, perGranted, sandbox, naive, ebsync, floor };
  } finally {
    await sandbox.stop();
  }
}

const met = (ok: boolean) => (ok ? '**met**' : '**NOT met**');

function floorNote(run: SizeRun): string {
  const label = run.leads.toLocaleString('en-US');
  const { floor } = run;
  if (floor === null)
    return `No floor of lead requests at ${label}: some leads have no origin or e-mail, or one e-mail domain of an origin is over the reach.`;
  const ideal = Math.ceil(run.totalLeads / run.perGranted);
  const more = leadRequests(run.ebsync.requests) - floor.requests;
  if (run.totalLeads <= REACH)
    return `At ${label} the leads are within the reach, so the floor of lead requests is the ideal, ${ideal.toLocaleString('en-US')}; this run made ${more} more.`;
  return `The floor of lead requests at ${label}, for a pass that cuts as ebsync's does (by origin, then by e-mail domain within an origin over the reach) and knows every count beforehand, so that it reads no page twice but the root's first: ${floor.requests.toLocaleString('en-US')}, ${fmt((floor.requests / ideal - 1) * 100, 1)} % above the ideal. This run made ${more} more. ${floor.overReach} origins are over the reach, and only an origin's first page shows that; its leads are read again by the origin's parts. The other filters leave leads without a value (\`lead_type\`, \`source\`), which only repeating the query reaches.`;
}

export const mirrorBenchmark: Benchmark = {
  name: 'mirror',
  title: `Mirror: ${LARGE.toLocaleString('en-US')} leads into SQLite, ebsync against a naive loop`,
  async run(ctx) {
    const work = mkdtempSync(join(tmpdir(), 'ebsync-bench-mirror-'));
    let server: TestWorkflowEnvironment | undefined;
    try {
      ctx.log('starting a Temporal dev server and bundling the workflows');
      const [env, bundlePath] = await Promise.all([
        startBenchTemporal(ctx, work),
        writeWorkflowBundle(work),
      ]);
      server = env;
      const temporal = {
        address: env.address,
        bundlePath,
        async client(dataDir: string) {
          const config = loadConfig({ ...process.env, EBSYNC_DATA_DIR: dataDir });
          const connection = await Connection.connect({ address: env.address });
          return new Client({ connection, dataConverter: dataConverter(config) });
        },
      };

      const small = await runSize(ctx, SMALL, work, temporal);
      const large = await runSize(ctx, LARGE, work, temporal);
      return report(small, large);
    } finally {
      await server?.teardown();
      rmSync(work, { recursive: true, force: true });
    }
  },
};

function report(small: SizeRun, large: SizeRun) {
  const sideRow = (run: SizeRun, name: string, side: Side) => [
    `${run.leads.toLocaleString('en-US')}`,
    name,
    fmt(side.seconds, 1),
    fmt(run.totalLeads / side.seconds, 0),
    fmt(side.read / side.seconds, 0),
    sum(side.requests),
    leadRequests(side.requests),
    fmt(side.cpuSeconds, 1),
    fmt(side.peakRssMiB, 0),
  ];
  const rowsRow = (run: SizeRun, name: string, side: Side) => [
    `${run.leads.toLocaleString('en-US')}`,
    name,
    ...TABLES.map((t) => side.rows[t] ?? 0),
  ];
  const eachSide = <T>(row: (run: SizeRun, name: string, side: Side) => T): T[] =>
    [small, large].flatMap((run) => [row(run, 'naive', run.naive), row(run, 'ebsync', run.ebsync)]);
  const speed = (run: SizeRun) => run.naive.seconds / run.ebsync.seconds;
  const ideal = (run: SizeRun) => Math.ceil(run.totalLeads / run.perGranted);
  const over = (run: SizeRun) => leadRequests(run.ebsync.requests) / ideal(run) - 1;
  const perLead = (run: SizeRun) => leadRequests(run.ebsync.requests) / run.totalLeads;
  const rssGrowth = large.ebsync.peakRssMiB / small.ebsync.peakRssMiB;
  const timeGrowth = large.ebsync.seconds / small.ebsync.seconds;
  const sameRows = [small, large].every((run) =>
    TABLES.every((t) => run.naive.rows[t] === run.ebsync.rows[t]),
  );
  const gaps = [small, large].flatMap((run) =>
    run.ebsync.summary.gaps.map((g) => `${run.leads.toLocaleString('en-US')}: ${g}`),
  );
  const operations = [
    ...new Set(
      [small, large].flatMap((run) => [
        ...Object.keys(run.naive.requests),
        ...Object.keys(run.ebsync.requests),
      ]),
    ),
  ].sort();
  return {
    method: [
      `One sandbox per size (${large.sandbox.via.replace(String(LARGE), 'N')}, N = ${SMALL.toLocaleString('en-US')} and ${LARGE.toLocaleString('en-US')}; HTTPS, reach limit ${REACH.toLocaleString('en-US')}, max per ${PER}, its default events), warmed with 20 list pages, then read whole into a fresh SQLite mirror and SQLite ledger by each side in turn, leads, events and appointments (\`ebsync sync all\`, a full pass).`,
      `**naive**: one process, one page in flight, each page written before the next is asked for (activities/mirror/source-pass.ts drivers at concurrency 1, the same client, page fetch and write path: writeRecords with ledger + destination). **ebsync**: mirrorWorkflow on a Temporal dev server (\`temporal server start-dev\`, SQLite persistence in WAL mode, as \`npm start\` starts it) started by this runner, its worker in a process of its own, started as \`ebsync worker\` starts (${[...WORKER_LAUNCH.nodeFlags, ...Object.entries(WORKER_LAUNCH.env).map(([k, v]) => `${k}=${v}`)].map((x) => `\`${x}\``).join(', ')}; worker/heap-mode.ts) (the project's data converter and defaults: 4 partitions at once, each activity 4 pages in flight and up to 16 pages); its time runs from starting the workflow to its result, the worker already polling.`,
      `Peak RSS is VmHWM of the side's process; CPU is its user + system time (/proc). Leads/s counts the service's total_count of leads; records/s counts every record written or found unchanged (a lead booking comes with its lead and again in its own list).`,
    ].join('\n\n'),
    tables: [
      {
        caption: 'Each side, each size:',
        head: [
          'leads',
          'side',
          'time (s)',
          'leads/s',
          'records/s',
          'requests',
          'lead requests',
          'CPU (s)',
          'peak RSS (MiB)',
        ],
        rows: eachSide(sideRow),
      },
      {
        caption: 'Rows in the mirror afterwards (the two sides must agree):',
        head: ['leads', 'side', ...TABLES],
        rows: eachSide(rowsRow),
      },
      {
        caption: 'Requests by operation:',
        head: [
          'operation',
          ...[small, large].flatMap((r) => [
            `naive ${r.leads / 1000}k`,
            `ebsync ${r.leads / 1000}k`,
          ]),
        ],
        rows: operations.map((op) => [
          op,
          ...[small, large].flatMap((r) => [r.naive.requests[op] ?? 0, r.ebsync.requests[op] ?? 0]),
        ]),
      },
    ],
    notes: [
      `Throughput ebsync / naive ≥ ${TARGET.speed}× (aim > 1×) at ${LARGE.toLocaleString('en-US')} leads: ${met(speed(large) >= TARGET.speed)}, ${ratio(large.naive.seconds, large.ebsync.seconds)}${speed(large) > 1 ? ' (above 1×)' : ''}; at ${SMALL.toLocaleString('en-US')}: ${ratio(small.naive.seconds, small.ebsync.seconds)}.`,
      `Requests per lead ≤ 1/per + 1 % (lead requests, \`leads.list\` + \`leads.get\`, over total_count; per granted ${large.perGranted}, so ≤ ${fmt(1 / large.perGranted + 0.01, 4)}, as docs/mirror-sources.md reads it) at ${LARGE.toLocaleString('en-US')}: ${met(perLead(large) <= 1 / large.perGranted + 0.01)}, ${fmt(perLead(large), 5)} per lead. Read strictly, at most 1 % above the ideal ceil(total_count / per) = ${ideal(large)}: ${met(over(large) <= TARGET.requestsOver)}, ${fmt(over(large) * 100, 1)} % above. At ${SMALL.toLocaleString('en-US')}: ${fmt(perLead(small), 5)} per lead, ${fmt(over(small) * 100, 1)} % above the ideal.`,
      floorNote(large),
      floorNote(small),
      `Worker peak RSS ≤ ${TARGET.peakRssMiB} MB at ${LARGE.toLocaleString('en-US')}: ${met(large.ebsync.peakRssMiB * 1.048576 <= TARGET.peakRssMiB)}, ${fmt(large.ebsync.peakRssMiB, 0)} MiB (${fmt(large.ebsync.peakRssMiB * 1.048576, 0)} MB).`,
      `Worker peak RSS at ${LARGE / 1000}k / at ${SMALL / 1000}k ≤ ${TARGET.rssGrowth}: ${met(rssGrowth <= TARGET.rssGrowth)}, ${fmt(rssGrowth, 2)}.`,
      `Worker RSS when ready, before the pass: ${fmt(small.ebsync.readyRssMiB, 0)} MiB (${SMALL / 1000}k run), ${fmt(large.ebsync.readyRssMiB, 0)} MiB (${LARGE / 1000}k run); the pass adds ${fmt(small.ebsync.peakRssMiB - small.ebsync.readyRssMiB, 0)} and ${fmt(large.ebsync.peakRssMiB - large.ebsync.readyRssMiB, 0)} MiB to that at its peak. The naive process peaks at ${fmt(small.naive.peakRssMiB, 0)} and ${fmt(large.naive.peakRssMiB, 0)} MiB.`,
      `ebsync time at ${LARGE / 1000}k / at ${SMALL / 1000}k ≤ ${TARGET.timeGrowth}: ${met(timeGrowth <= TARGET.timeGrowth)}, ${fmt(timeGrowth, 2)} (naive: ${fmt(large.naive.seconds / small.naive.seconds, 2)}).`,
      `The two sides mirrored the same rows: ${sameRows ? 'yes' : '**NO**'}. ebsync's pass: ${large.ebsync.summary.counts.unreachable} leads reported unreachable at ${LARGE / 1000}k, ${small.ebsync.summary.counts.unreachable} at ${SMALL / 1000}k${gaps.length ? ` (${gaps.join('; ')})` : ''}.`,
      `CPU per 1,000 leads: naive ${fmt((large.naive.cpuSeconds * 1000) / large.totalLeads, 2)} s, ebsync worker ${fmt((large.ebsync.cpuSeconds * 1000) / large.totalLeads, 2)} s (the Temporal server and the sandbox not counted).`,
    ],
  };
}
