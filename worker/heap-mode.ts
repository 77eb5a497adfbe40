import { setFlagsFromString } from 'node:v8';

/**
 * How far V8 lets a heap grow past what its last full collection kept, in percent. A worker
 * reading a large mirror pass allocates fast (page bodies, canonical records), and V8's own
 * growth factor, which rises to 4 when collections are quick, held about 3.5 times the live
 * heap: the bench worker's RSS reached 565 MiB at 30,000 leads with about 55 MiB live.
 */
export const HEAP_GROWING_PERCENT = 30;

/**
 * The young generation's semi-space, in MiB, of the workflow thread's isolate, when
 * EBSYNC_WORKFLOW_THREAD gives workflows a thread (worker/workflow-placement.ts). V8 sizes it
 * from the machine's memory (32 MiB on a 24 GiB machine), and short-lived objects fill it
 * whole. In the mirror benchmark at 100,000 leads, 8 MiB took the worker's V8 pages at its
 * peak from 254 to 133 MiB and 4 MiB to 128 MiB, its throughput within the run-to-run noise.
 */
export const SEMI_SPACE_MIB = 4;

/**
 * The same for the main isolate, where activities run: larger, because a mirror pass
 * allocates there fast (page bodies, canonical records, rows) and at 4 MiB a scavenge ran
 * every few milliseconds, promoting page objects still in use to the old generation, whose
 * collections then ran on V8's helper threads. Against 4 MiB, 10,000-lead passes into SQLite:
 * 8 MiB cut the worker's CPU per pass 6 to 9 %, 16 MiB 13 to 18 %; but at 16 MiB the mirror
 * benchmark's worker peaked at 301 MB at 10,000 leads and 307 MB at 100,000, past the 300 MB
 * bar, and 8 MiB holds 12 to 17 MiB less than 16 (two SQLite and two Postgres passes each).
 */
export const MAIN_SEMI_SPACE_MIB = 8;

/**
 * glibc's malloc arenas for a worker process. glibc gives threads that allocate at once arenas
 * of their own, up to 8 per core, and a worker has about 16 threads (Temporal's core, libuv's
 * pool, V8's platform, and the workflow thread when EBSYNC_WORKFLOW_THREAD gives one): 47 MiB of arenas at the benchmark's peak, 18 MiB
 * with 2. One arena took the mirror benchmark's worker peak at 100,000 leads from 281 to
 * 269 MiB (10,000: 279 to 273) in back-to-back runs (one each, on a machine busy with other
 * work too), with its CPU per 1,000 leads within the
 * run-to-run noise: the threads that allocate most (V8's on the main thread, the workflow
 * thread's) rarely allocate at the same moment, so they seldom wait on the one arena's lock.
 */
export const MALLOC_ARENAS = 1;

/**
 * glibc's trim threshold, in bytes: free memory above it at the top of the heap goes back to
 * the system. Left unset, glibc raises it (to as much as 64 MiB) each time a large block is
 * freed, and a worker freeing page bodies kept tens of MiB it no longer used. Set, it stays
 * fixed: in the mirror benchmark the worker's peak fell from 277-291 MiB to 259-268 MiB.
 */
export const MALLOC_TRIM_THRESHOLD = 131_072;

/**
 * What a worker process starts with: V8 and glibc read these only at process start.
 * cli/ebsync.js (plain JavaScript, run before TypeScript can load) starts worker commands
 * with the same values; test/cli/shutdown.test.ts checks a started worker against these.
 */
export const WORKER_LAUNCH = {
  nodeFlags: [`--max-semi-space-size=${MAIN_SEMI_SPACE_MIB}`],
  env: {
    MALLOC_ARENA_MAX: String(MALLOC_ARENAS),
    MALLOC_TRIM_THRESHOLD_: String(MALLOC_TRIM_THRESHOLD),
  },
} as const;

/**
 * Has V8 keep its heaps near what is live. The growth flag is read at each garbage
 * collection, so setting it once serves every isolate of the process. The semi-space of an
 * isolate is fixed when it is made: set here, it reaches the workflow thread's; the main
 * isolate's is fixed at process start (WORKER_LAUNCH). `--optimize-for-size` kept heaps
 * small before, but it also has V8 compile for size, which about doubled the worker's CPU
 * time in the mirror benchmark.
 */
export function keepHeapsSmall(): void {
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  setFlagsFromString(`--max-semi-space-size=${SEMI_SPACE_MIB}`);
}
