/**
 * The two sides of the mirror benchmark, each in a process of its own so its memory can be
 * read from /proc (bench/mirror.ts spawns them):
 *
 * - `worker`: a Temporal worker running the mirror's activities and workflows, as
 *   worker/worker.ts builds one (the project's data converter, one ledger and one destination
 *   per process), with a service client on the sandbox's API key instead of a connection
 *   workflow. Prints `ready`, runs until SIGTERM, then prints its request counts as JSON.
 * - `naive`: the loop a person would write without Temporal: one page at a time, each written
 *   through the mirror's own write path (writeRecords: ledger + destination) before the next
 *   is asked for. Prints its counts and seconds as JSON.
 *
 * Settings come as JSON in BENCH_MIRROR (see MirrorProcessSettings).
 */
import { readFileSync } from 'node:fs';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { apiKeyAuth } from '../api/auth.js';
import { createClient, type Client } from '../api/client.js';
import { createMirrorActivities } from '../activities/mirror/pass.js';
import {
  readEventsAndBookings,
  readLeadsAndBookings,
  readList,
} from '../activities/mirror/source-pass.js';
import {
  emptyWriteCounts,
  writeRecords,
  type WriteCounts,
} from '../activities/mirror/write-records.js';
import type { CanonicalRecord } from '../activities/mirror/canonical.js';
import { loadConfig } from '../config/index.js';
import type { Destination } from '../destinations/destination.js';
import { openDestination } from '../destinations/open-destination.js';
import { ALL_TABLES } from '../destinations/tables.js';
import type { Ledger } from '../store/ledger.js';
import { openLedger } from '../store/open-ledger.js';
import { dataConverter } from '../worker/data-converter.js';
import { keepHeapsSmall } from '../worker/heap-mode.js';

export interface MirrorProcessSettings {
  baseUrl: string;
  apiKey: string;
  caFile?: string;
  /** EBSYNC_DATA_DIR of this side: the payload key (shared with the runner) lives there. */
  dataDir: string;
  /** sqlite:PATH of the ledger. */
  ledger: string;
  /** sqlite:PATH of the mirror (the naive side; the worker gets it from the workflow). */
  destination: string;
  per: number;
  reachLimit: number;
  /** The worker side. */
  temporalAddress?: string;
  taskQueue?: string;
  bundlePath?: string;
}

/** Requests by client operation (`leads.list`, `leads.get`, …). */
export type RequestCounts = Record<string, number>;

export interface NaiveResult {
  seconds: number;
  counts: WriteCounts;
  requests: RequestCounts;
}

export interface WorkerReport {
  requests: RequestCounts;
}

function serviceClient(settings: MirrorProcessSettings, requests: RequestCounts): Client {
  return createClient({
    baseUrl: settings.baseUrl,
    auth: apiKeyAuth(settings.apiKey),
    ...(settings.caFile ? { ca: readFileSync(settings.caFile) } : { allowInsecureLoopback: true }),
    onResponse: ({ operation }) => {
      requests[operation] = (requests[operation] ?? 0) + 1;
    },
  });
}

async function runNaive(settings: MirrorProcessSettings): Promise<NaiveResult> {
  const requests: RequestCounts = {};
  const client = serviceClient(settings, requests);
  const ledger = await openLedger(settings.ledger);
  const destination = openDestination(settings.destination);
  try {
    const started = performance.now();
    await destination.ensureSchema(ALL_TABLES);
    const key = {
      connectionId: 'bench',
      destination: destination.describe().id,
      pass: 'naive',
    };
    const { generation } = await ledger.beginPass(key, { restart: true });
    const target = { connectionId: 'bench', ledger, destination };
    const counts: WriteCounts = emptyWriteCounts();
    const onRecords = async (records: CanonicalRecord[]): Promise<void> => {
      const c = await writeRecords(target, generation, records);
      counts.written += c.written;
      counts.unchanged += c.unchanged;
    };
    // One page in flight and each written before the next: no overlap anywhere.
    const options = {
      per: settings.per,
      reachLimit: settings.reachLimit,
      concurrency: 1,
      onRecords,
    };
    await readLeadsAndBookings(client, options);
    await readEventsAndBookings(client, options);
    await readList(client, 'appointments', options);
    await ledger.completePass(key, generation);
    return { seconds: (performance.now() - started) / 1000, counts, requests };
  } finally {
    await destination.close();
    await ledger.close();
  }
}

async function runWorker(settings: MirrorProcessSettings): Promise<WorkerReport> {
  const { temporalAddress, taskQueue, bundlePath } = settings;
  if (!temporalAddress || !taskQueue || !bundlePath) {
    throw new Error('the worker side needs temporalAddress, taskQueue and bundlePath');
  }
  // As worker/worker.ts's createWorker does.
  keepHeapsSmall();
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const config = loadConfig({ ...process.env, EBSYNC_DATA_DIR: settings.dataDir });
  const requests: RequestCounts = {};
  const client = serviceClient(settings, requests);
  let ledger: Promise<Ledger> | undefined;
  const destinations = new Map<string, Destination>();
  const activities = createMirrorActivities({
    clientFor: () => Promise.resolve(client),
    ledger: () => (ledger ??= openLedger(settings.ledger)),
    destination: (target) => {
      let opened = destinations.get(target);
      if (!opened) destinations.set(target, (opened = openDestination(target)));
      return Promise.resolve(opened);
    },
    reachLimit: settings.reachLimit,
    per: settings.per,
  });
  const connection = await NativeConnection.connect({ address: temporalAddress });
  const worker = await Worker.create({
    connection,
    taskQueue,
    activities,
    dataConverter: dataConverter(config),
    workflowBundle: { codePath: bundlePath },
    maxConcurrentActivityTaskExecutions: config.worker.maxConcurrentActivities,
  });
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => worker.shutdown());
  }
  process.stdout.write('ready\n');
  try {
    await worker.run();
  } finally {
    for (const d of destinations.values()) await d.close();
    if (ledger) await (await ledger).close();
    await connection.close();
  }
  return { requests };
}

const side = process.argv[2];
const settings = JSON.parse(process.env.BENCH_MIRROR ?? '{}') as MirrorProcessSettings;
if (side === 'naive') {
  process.stdout.write(`${JSON.stringify(await runNaive(settings))}\n`);
} else if (side === 'worker') {
  process.stdout.write(`${JSON.stringify(await runWorker(settings))}\n`);
} else {
  process.stderr.write(`bench/mirror-process.ts: expected 'naive' or 'worker', got '${side}'\n`);
  process.exitCode = 2;
}
