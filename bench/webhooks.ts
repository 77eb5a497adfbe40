import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { tsToMs } from '@temporalio/common/lib/time.js';
import proto from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Webhook } from 'standardwebhooks';
import { saveConnection } from '../cli/connections.js';
import { loadConfig } from '../config/index.js';
import { startSandbox, type Sandbox } from '../sandbox/server.js';
import { generateKeyLine } from '../worker/data-converter.js';
import { connectClient } from '../worker/temporal-client.js';
import { webhookRegistrations } from '../worker/webhook-receiver.js';
import { cli } from './console.js';
import {
  fmt,
  pidByCommandLine,
  ROOT,
  startBenchTemporal,
  summarize,
  track,
  treeCpuSeconds,
  type Benchmark,
} from './lib.js';

const FLOOD = 3_000;
const LANES = 32;
const FLOOD_RECORDS = 200;
/** The target's rate and length, run last; the lower rates before it say where the machine's limit lies. */
const RATE = 50;
const SECONDS = 60;
const LADDER = [
  { rate: 10, seconds: 30 },
  { rate: 25, seconds: 30 },
  { rate: RATE, seconds: SECONDS },
] as const;
const LATENCY_TARGET_MS = 1_000;
/** Every this many leads of the latency run, the record workflow's history is read back. */
const SAMPLE_EVERY = 30;
const { EventType } = proto.temporal.api.enums.v1;
const SECRET = `whsec_${Buffer.from('bench-webhooks-secret-0123456789').toString('base64')}`;

/** A fastify that answers 200 to any POST: the ceiling a receiver on this machine can reach. */
const BARE_SERVER = `
import Fastify from 'fastify';
const app = Fastify({ logger: false });
app.post('/webhooks/:connection', async () => ({ ok: true }));
await app.listen({ host: '127.0.0.1', port: 0 });
console.log('listening ' + app.server.address().port);
`;

function spawnBare(): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', BARE_SERVER], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  track(child);
  return new Promise((resolve, reject) => {
    child.stdout?.setEncoding('utf8').once('data', (line: string) => {
      const port = Number(/listening (\d+)/.exec(line)?.[1]);
      if (port > 0) resolve({ child, port });
      else reject(new Error(`bare fastify said '${line}'`));
    });
  });
}

interface Signed {
  body: string;
  headers: Record<string, string>;
}

function signed(deliveryId: string, leadId: number): Signed {
  const body = JSON.stringify({
    id: deliveryId,
    type: 'lead.updated',
    data: { record_type: 'lead', id: leadId, action: 'updated' },
  });
  const now = new Date();
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'webhook-id': deliveryId,
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': new Webhook(SECRET).sign(deliveryId, now, body),
    },
  };
}

async function send(url: string, request: Signed): Promise<number> {
  const res = await fetch(url, { method: 'POST', body: request.body, headers: request.headers });
  await res.arrayBuffer();
  return res.status;
}

interface TaskTimes {
  /** From the workflow task being scheduled (the notice in history) to a worker taking it. */
  queued: number;
  /** From a worker taking it to its completion: the read and write run inside it. */
  inWorker: number;
}

/** The first workflow task of a record workflow, from its history; undefined if not done. */
async function firstTask(env: TestWorkflowEnvironment, workflowId: string) {
  const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
  const at = (type: proto.temporal.api.enums.v1.EventType): number | undefined => {
    const event = history.events?.find((e) => e.eventType === type);
    return event ? tsToMs(event.eventTime) : undefined;
  };
  const scheduled = at(EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED);
  const started = at(EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED);
  const completed = at(EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
  if (scheduled === undefined || started === undefined || completed === undefined) return;
  return { queued: started - scheduled, inWorker: completed - started } satisfies TaskTimes;
}

/** The worker creates the table when it first opens the destination: until then, nothing to see. */
function hasLeads(db: Database.Database): boolean {
  return (
    db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'leads'").get() !==
    undefined
  );
}

interface Step {
  rate: number;
  seconds: number;
  firstLead: number;
  total: number;
  offered: number;
  latencies: number[];
  /** Statuses of answers other than 200 (0: no answer). */
  refused: number[];
  /** Deliveries answered but not seen in the destination within 30 s of the last send. */
  missing: number;
  summary: ReturnType<typeof summarize>;
  /** Cores each process used while the step sent (CPU seconds over wall seconds). */
  cores: Record<string, number>;
}

/** Pids to meter: each with its descendants; this process itself by process.cpuUsage. */
type Metered = Record<string, number | undefined>;

const SELF = 'this process: the sender, the sandbox and the destination poll';
const BARE = 'bare fastify';

function cpuNow(processes: Metered): Record<string, number> {
  const usage = process.cpuUsage();
  return {
    ...Object.fromEntries(
      Object.entries(processes).map(([name, pid]) => [name, treeCpuSeconds(pid) ?? NaN]),
    ),
    [SELF]: (usage.user + usage.system) / 1e6,
  };
}

/**
 * `rate` deliveries a second for `seconds`, each after a staff edit of its own lead; the time
 * is from sending the delivery until a poll of the destination sees the new value.
 */
async function latencyRun(run: {
  rate: number;
  seconds: number;
  firstLead: number;
  sandbox: Sandbox;
  destinationFile: string;
  receiverUrl: string;
  metered: Metered;
}): Promise<Step> {
  const total = run.rate * run.seconds;
  const sentAt = new Map<number, number>();
  const latencies: number[] = [];
  const refused: number[] = [];
  let db: Database.Database | undefined;
  let polling = true;
  const poller = (async () => {
    while (polling || sentAt.size > 0) {
      // This process also serves the sandbox the worker reads: the poll stays small.
      await new Promise((r) => setTimeout(r, 25));
      if (!db) {
        if (!existsSync(run.destinationFile)) continue;
        db = new Database(run.destinationFile, { readonly: true });
      }
      if (sentAt.size === 0 || !hasLeads(db)) continue;
      const ids = [...sentAt.keys()].slice(0, 200);
      const rows = db
        .prepare(`SELECT id, first_name FROM leads WHERE id IN (${ids.map(() => '?').join(',')})`)
        .all(...ids.map(String)) as { id: string; first_name: string | null }[];
      const now = performance.now();
      for (const row of rows) {
        const id = Number(row.id);
        const at = sentAt.get(id);
        if (at !== undefined && row.first_name === `Bench ${id}`) {
          latencies.push(now - at);
          sentAt.delete(id);
        }
      }
    }
  })();
  const cpuAtStart = cpuNow(run.metered);
  const startAt = performance.now();
  const posts: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const wait = startAt + (i * 1000) / run.rate - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const id = run.firstLead + i;
    run.sandbox.admin.patchRecord('lead', id, { first_name: `Bench ${id}` });
    sentAt.set(id, performance.now());
    posts.push(
      send(`${run.receiverUrl}/webhooks/bench`, signed(`lat_${id}`, id)).then(
        (status) => {
          if (status !== 200) refused.push(status);
        },
        () => {
          refused.push(0);
        },
      ),
    );
  }
  const sendSeconds = (performance.now() - startAt) / 1000;
  const offered = total / sendSeconds;
  const cpuAtEnd = cpuNow(run.metered);
  const cores = Object.fromEntries(
    Object.entries(cpuAtEnd).map(([name, seconds]) => [
      name,
      (seconds - (cpuAtStart[name] ?? NaN)) / sendSeconds,
    ]),
  );
  await Promise.all(posts);
  const deadline = performance.now() + 30_000;
  while (sentAt.size > 0 && performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
  }
  const missing = sentAt.size;
  sentAt.clear();
  polling = false;
  await poller;
  db?.close();
  return {
    rate: run.rate,
    seconds: run.seconds,
    firstLead: run.firstLead,
    total,
    offered,
    latencies,
    refused,
    missing,
    summary: summarize(latencies),
    cores,
  };
}

interface Flood {
  /** Deliveries answered a second. */
  rate: number;
  /** CPU milliseconds per delivery, by process, while the flood was sent. */
  cpuMs: Record<string, number>;
}

/** throughput(), with the CPU each metered process (and this one) spent meanwhile. */
async function meteredFlood(url: string, requests: Signed[], metered: Metered): Promise<Flood> {
  const before = cpuNow(metered);
  const rate = await throughput(url, requests);
  const after = cpuNow(metered);
  const cpuMs = Object.fromEntries(
    Object.entries(after).map(([name, seconds]) => [
      name,
      ((seconds - (before[name] ?? NaN)) * 1000) / requests.length,
    ]),
  );
  return { rate, cpuMs };
}

/** Deliveries per second with LANES requests in flight, all answered 200 or it throws. */
async function throughput(url: string, requests: Signed[]): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: LANES }, async () => {
      for (let i = next++; i < requests.length; i = next++) {
        const status = await send(url, requests[i]!);
        if (status !== 200) throw new Error(`${url} answered ${status}`);
      }
    }),
  );
  return requests.length / ((performance.now() - started) / 1000);
}

export const webhooksBenchmark: Benchmark = {
  name: 'webhooks',
  title: 'Webhook receiver: throughput vs bare fastify, delivery → destination row latency',
  async run(ctx) {
    const work = mkdtempSync(join(tmpdir(), 'ebsync-bench-webhooks-'));
    const sandbox = await startSandbox({
      certDir: join(work, 'cert'),
      seed: {
        leads: FLOOD_RECORDS + LADDER.reduce((n, step) => n + step.rate * step.seconds, 0) + 100,
        events: 2,
      },
    });
    let server: TestWorkflowEnvironment | undefined;
    const children: ChildProcess[] = [];
    try {
      ctx.log('starting a Temporal dev server');
      server = await startBenchTemporal(ctx, work);
      const destinationFile = join(work, 'mirror.db');
      const env = {
        TEMPORAL_ADDRESS: server.address,
        TEMPORAL_TASK_QUEUE: 'bench-webhooks',
        EBS_BASE_URL: sandbox.baseUrl,
        EBS_CA_FILE: sandbox.caFile ?? '',
        EBSYNC_DATA_DIR: join(work, 'data'),
        EBSYNC_ENCRYPTION_KEYS: generateKeyLine('bench'),
        EBSYNC_WEBHOOK_PORT: '0',
        // No pacing: the task queue's per-connection rate is in activities of 4 requests
        // (worker/rate-limits.ts), so EBS_RATE_LIMIT=100 lets only 25 one-read refreshes a second.
        EBS_RATE_LIMIT: '0',
      };
      const config = loadConfig({ ...process.env, ...env });
      const registrations = webhookRegistrations(config);
      await registrations.put('bench', {
        secret: SECRET,
        destination: `sqlite:${destinationFile}`,
        url: 'http://127.0.0.1/webhooks/bench',
        endpointId: null,
        registeredAt: new Date().toISOString(),
      });
      registrations.close();
      ctx.log('starting the receiver, and a worker to connect (stopped for the first flood)');
      const connecting = (await cli(['worker'], env, /worker started/)).child;
      children.push(connecting);
      const receiver = await cli(['webhooks', 'serve'], env, /webhook receiver listening/);
      children.push(receiver.child);
      const receiverUrl = /(http:\/\/[^/"]+)\/webhooks/.exec(receiver.line)?.[1];
      if (!receiverUrl) throw new Error(`no address in '${receiver.line}'`);
      const { client, close } = await connectClient(config);
      try {
        await saveConnection(
          client,
          config,
          {
            connectionId: 'bench',
            kind: 'integration_key',
            baseUrl: sandbox.baseUrl,
            permissions: [],
          },
          { kind: 'apiKey', apiKey: sandbox.apiKey },
        );
      } finally {
        await close();
      }
      const stopped = new Promise((r) => connecting.once('exit', r));
      connecting.kill('SIGTERM');
      await stopped;

      ctx.log(
        `throughput: ${FLOOD} deliveries, ${LANES} in flight, bare fastify then the receiver`,
      );
      const bare = await spawnBare();
      children.push(bare.child);
      const bareUrl = `http://127.0.0.1:${bare.port}/webhooks/bench`;
      const flood = (prefix: string): Signed[] =>
        Array.from({ length: FLOOD }, (_, i) => signed(`${prefix}_${i}`, (i % FLOOD_RECORDS) + 1));
      await throughput(bareUrl, flood('warm_bare').slice(0, 300));
      await throughput(`${receiverUrl}/webhooks/bench`, flood('warm_recv').slice(0, 300));
      const temporalPid = pidByCommandLine(join(work, 'temporal.db'));
      const behindReceiver: Metered = {
        'Temporal dev server': temporalPid,
        'ebsync webhooks serve': receiver.child.pid,
      };
      const bareFlood = await meteredFlood(bareUrl, flood('bare'), {
        [BARE]: bare.child.pid,
      });
      const receiverFlood = await meteredFlood(
        `${receiverUrl}/webhooks/bench`,
        flood('flood'),
        behindReceiver,
      );
      const bareRate = bareFlood.rate;
      const receiverRate = receiverFlood.rate;
      bare.child.kill('SIGTERM');
      ctx.log('starting a worker; the same flood again while it applies the first');
      const worker = (await cli(['worker'], env, /worker started/)).child;
      children.push(worker);
      const metered: Metered = {
        'Temporal dev server': temporalPid,
        'ebsync worker': worker.pid,
        'ebsync webhooks serve': receiver.child.pid,
      };
      const busyFlood = await meteredFlood(
        `${receiverUrl}/webhooks/bench`,
        flood('flood2'),
        metered,
      );
      const busyRate = busyFlood.rate;
      const floods = [bareFlood, receiverFlood, busyFlood];
      const floodTotal = (f: Flood) => Object.values(f.cpuMs).reduce((a, b) => a + b, 0);
      ctx.log('letting the worker finish both floods');
      await new Promise((r) => setTimeout(r, 20_000));

      let nextLead = FLOOD_RECORDS + 1;
      const steps: Step[] = [];
      for (const step of LADDER) {
        ctx.log(
          `latency: ${step.rate} deliveries/s for ${step.seconds} s, each a staff edit of its own lead`,
        );
        steps.push(
          await latencyRun({
            ...step,
            firstLead: nextLead,
            sandbox,
            destinationFile,
            receiverUrl,
            metered,
          }),
        );
        nextLead += step.rate * step.seconds;
      }
      const last = steps[steps.length - 1]!;
      const sampled: TaskTimes[] = [];
      for (let i = 0; i < last.total; i += SAMPLE_EVERY) {
        const times = await firstTask(server, `record:bench:leads:${last.firstLead + i}`);
        if (times) sampled.push(times);
      }
      const queued = summarize(sampled.map((t) => t.queued));
      const inWorker = summarize(sampled.map((t) => t.inWorker));

      const s = last.summary;
      const ratio = receiverRate / bareRate;
      const { latencies, refused, missing, offered } = last;
      const total = last.total;
      return {
        method:
          `One process sends Standard Webhooks deliveries over HTTP with ${LANES} in flight: ` +
          `${FLOOD} to a bare fastify that answers 200 (its own process), then ${FLOOD} to ` +
          `\`ebsync webhooks serve\` (each verified and handed to Temporal by signal-with-start ` +
          `before its 200; ${FLOOD_RECORDS} leads, so records coalesce) while no worker runs, so the ` +
          `figure is the receiver's and Temporal's; then one \`ebsync worker\` starts and ${FLOOD} more ` +
          `go to the receiver while the worker applies the first ones on the same two cores. ` +
          `Then deliveries at ${LADDER.map((step) => `${step.rate}/s for ${step.seconds} s`).join(', then ')}, ` +
          `each after a staff edit of its own lead in the in-process ` +
          `sandbox; the worker (EBS_RATE_LIMIT=0: no pacing) ` +
          `re-reads the lead and writes SQLite; the time is from sending the delivery until a ` +
          `poll (every 25 ms, the 200 oldest outstanding leads) of the destination sees the new ` +
          `value. Temporal is a local dev server on the same machine, started as \`npm start\` ` +
          `starts it (a SQLite file in WAL mode, task-queue fairness on). Cores by process: ` +
          `each process's CPU seconds (with its child processes, from /proc) over the seconds a ` +
          `step spent sending, and per delivery over each flood.`,
        tables: [
          {
            head: ['throughput', 'deliveries/s'],
            rows: [
              ['bare fastify 200-responder', fmt(bareRate, 0)],
              ['ebsync webhooks serve, no worker running', fmt(receiverRate, 0)],
              ['ratio', fmt(ratio, 2)],
              ['ebsync webhooks serve while the worker applies deliveries', fmt(busyRate, 0)],
              ['ratio', fmt(busyRate / bareRate, 2)],
            ],
          },
          {
            head: [
              'CPU ms per delivery while the floods were sent, by process',
              'bare fastify',
              'receiver, no worker',
              'receiver beside the worker',
            ],
            rows: [
              ...[BARE, 'Temporal dev server', 'ebsync webhooks serve', 'ebsync worker', SELF].map(
                (name) => [
                  name,
                  ...floods.map((f) => (name in f.cpuMs ? fmt(f.cpuMs[name] ?? NaN, 2) : '–')),
                ],
              ),
              ['all of them', ...floods.map((f) => fmt(floodTotal(f), 2))],
            ],
          },
          {
            head: ['offered rate', 'applied', 'not applied within 30 s', 'p50 ms', 'p99 ms'],
            rows: steps.map((step) => [
              `${step.rate}/s for ${step.seconds} s`,
              `${step.latencies.length} of ${step.total}`,
              String(step.missing),
              fmt(step.summary.p50, 0),
              fmt(step.summary.p99, 0),
            ]),
          },
          {
            head: [
              'cores in use while deliveries were sent, by process',
              ...steps.map((step) => `${step.rate}/s`),
            ],
            rows: [
              ...Object.keys(steps[0]?.cores ?? {}).map((name) => [
                name,
                ...steps.map((step) => fmt(step.cores[name] ?? NaN, 2)),
              ]),
              [
                'all of them',
                ...steps.map((step) =>
                  fmt(
                    Object.values(step.cores).reduce((a, b) => a + b, 0),
                    2,
                  ),
                ),
              ],
            ],
          },
          {
            head: [`delivery → destination row at ${RATE}/s`, 'ms'],
            rows: [
              ['offered rate (deliveries/s)', fmt(offered, 1)],
              ['applied', `${latencies.length} of ${total}`],
              ['not 200 / not applied within 30 s', `${refused.length} / ${missing}`],
              [
                'answers other than 200, by status (0: no answer)',
                [...new Set(refused)]
                  .map((status) => `${status}×${refused.filter((r) => r === status).length}`)
                  .join(', ') || 'none',
              ],
              ['p50', fmt(s.p50, 0)],
              ['p95', fmt(s.p95, 0)],
              ['p99', fmt(s.p99, 0)],
              ['max', fmt(s.max, 0)],
            ],
          },
          {
            head: [
              `first workflow task of every ${SAMPLE_EVERY}th lead (${sampled.length} of ${Math.ceil(total / SAMPLE_EVERY)} done), ms`,
              'p50',
              'p99',
            ],
            rows: [
              ['scheduled → taken by the worker', fmt(queued.p50, 0), fmt(queued.p99, 0)],
              [
                'taken → completed (read and write inside)',
                fmt(inWorker.p50, 0),
                fmt(inWorker.p99, 0),
              ],
            ],
          },
        ],
        notes: [
          `Target: receiver throughput ≥ 0.5× bare fastify: ${ratio >= 0.5 ? '**met**' : '**NOT met**'} with no worker running (${fmt(ratio, 2)}×); ${fmt(busyRate / bareRate, 2)}× while a worker on the same cores applies deliveries.`,
          `CPU per delivery in all, with no worker running: ${fmt(floodTotal(receiverFlood), 2)} ms through the receiver and Temporal, ${fmt(floodTotal(bareFlood), 2)} ms through bare fastify (each with the sender's share), ${fmt(floodTotal(receiverFlood) / floodTotal(bareFlood), 1)}× as much. ${cpus().length} cores carry at most ${fmt((cpus().length * 1000) / floodTotal(receiverFlood), 0)} deliveries a second through the receiver at that cost; half of bare fastify's rate is ${fmt(bareRate / 2, 0)}.`,
          `Target: p99 delivery → destination row ≤ ${LATENCY_TARGET_MS} ms at ${RATE}/s for ${SECONDS} s: ${
            s.p99 <= LATENCY_TARGET_MS && missing === 0 && refused.length === 0
              ? '**met**'
              : '**NOT met**'
          } (p99 ${fmt(s.p99, 0)} ms, ${missing} not applied, ${refused.length} not answered 200).`,
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
