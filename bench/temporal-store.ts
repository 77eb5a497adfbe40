import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DEV_SERVER_ARGS, FAIRNESS_ARGS } from '../worker/dev-server.js';
import { drainWaker } from '../worker/drain-wake.js';
import { findTemporalCli } from '../worker/temporal-cli.js';
import { fmt, median, ratio, summarize, type BenchContext, type Benchmark } from './lib.js';

/** Signal-with-starts per round and store, each of a new connection, so each starts a workflow. */
const HAND_OFFS = 1_000;
const IN_FLIGHT = 32;
const ROUNDS = 3;

const STORES = [
  {
    name: 'SQLite file, rollback journal (the CLI default)',
    file: true,
    extraArgs: FAIRNESS_ARGS,
  },
  { name: 'SQLite file, WAL (as ebsync starts it)', file: true, extraArgs: DEV_SERVER_ARGS },
  { name: 'in memory (nothing survives a restart)', file: false, extraArgs: FAIRNESS_ARGS },
] as const;

/**
 * The rate at which the dev server takes signal-with-starts (a drain's wake-up that starts its
 * workflow, worker/drain-wake.ts) by how it stores its data: every durable step of ebsync
 * waits on these commits. Rounds alternate between the servers, so a noisy spell hits all.
 */
export const temporalStoreBenchmark: Benchmark = {
  name: 'temporal',
  title: "The local Temporal dev server's store: signal-with-starts a second",
  async run(ctx: BenchContext) {
    const work = mkdtempSync(join(tmpdir(), 'ebsync-bench-temporal-'));
    const executable = await findTemporalCli({ onProgress: (line) => ctx.log(line) });
    const servers: TestWorkflowEnvironment[] = [];
    try {
      for (const [k, store] of STORES.entries()) {
        ctx.log(`starting a dev server: ${store.name}`);
        servers.push(
          await TestWorkflowEnvironment.createLocal({
            server: {
              executable,
              ...(store.file ? { dbFilename: join(work, `temporal-${k}.db`) } : {}),
              log: { format: 'pretty', level: 'error' },
              extraArgs: [...store.extraArgs],
            },
          }),
        );
      }
      const rates: number[][] = STORES.map(() => []);
      const latencies: number[][] = STORES.map(() => []);
      for (let round = 0; round < ROUNDS; round += 1) {
        for (const [k, server] of servers.entries()) {
          const wake = drainWaker(server.client, 'bench-temporal-no-worker');
          let next = 0;
          const started = performance.now();
          const sender = async (): Promise<void> => {
            for (let i = next++; i < HAND_OFFS; i = next++) {
              const at = performance.now();
              await wake(`bench-${round}-${i}`, 'sqlite:bench.db');
              latencies[k]?.push(performance.now() - at);
            }
          };
          await Promise.all(Array.from({ length: IN_FLIGHT }, sender));
          const rate = HAND_OFFS / ((performance.now() - started) / 1000);
          rates[k]?.push(rate);
          ctx.log(`round ${round + 1}, ${STORES[k]?.name}: ${fmt(rate, 0)}/s`);
        }
      }
      const medians = rates.map((r) => median(r));
      const [journal = NaN, wal = NaN, memory = NaN] = medians;
      return {
        method:
          `${ROUNDS} rounds; in each, ${HAND_OFFS} signal-with-starts (worker/drain-wake.ts: the ` +
          `wake-up of a connection's drain, each of a new connection so each starts a workflow) ` +
          `with ${IN_FLIGHT} in flight go to each of three \`temporal server start-dev\` ` +
          `processes on this machine, one per store. No worker polls, so the figure is the ` +
          `server's alone.`,
        tables: [
          {
            head: ['store', 'signal-with-starts/s, each round', 'median /s', 'p50 ms', 'p99 ms'],
            rows: STORES.map((store, k) => {
              const latency = summarize(latencies[k] ?? []);
              return [
                store.name,
                (rates[k] ?? []).map((r) => fmt(r, 0)).join(', '),
                fmt(medians[k] ?? NaN, 0),
                fmt(latency.p50, 1),
                fmt(latency.p99, 1),
              ];
            }),
          },
        ],
        notes: [
          `WAL over the rollback journal: ${ratio(wal, journal)} the signal-with-starts a second. ` +
            `Synchronous stays FULL in both, so an answered commit survives a crash of the machine.`,
          `In memory over WAL: ${ratio(memory, wal)}; the tests use an in-memory server, ` +
            '`npm start` and `ebsync temporal` a file.',
        ],
      };
    } finally {
      for (const server of servers) await server.teardown().catch(() => undefined);
      rmSync(work, { recursive: true, force: true });
    }
  },
};
