import { spawn, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
} from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { startPostgresServer, type PostgresServer } from '../worker/postgres-server.js';
import { summarizeProfile, type ProfileSummary } from './cpu-profile.js';
import {
  fmt,
  median,
  memoryMiB,
  pidByCommandLine,
  ROOT,
  seededSandbox,
  startBenchTemporal,
  track,
  treeCpuSeconds,
  treeMainThreadCpuSeconds,
  type BenchContext,
  type Benchmark,
  type SeededSandbox,
  type Table,
} from './lib.js';

/**
 * The mirror as a user runs it against the loop a developer writes by hand: at each size, a
 * sandbox over HTTP whose reach holds every lead (so both sides read the same rows), one
 * `ebsync worker` already polling a Temporal dev server, and rounds in which
 * `ebsync sync leads --full --to TARGET` and `node bench/plain-loop.ts --to TARGET` each fill
 * a fresh SQLite file or Postgres database, timed from spawning the command to its exit.
 * CPU is counted per process from /proc: the command, the worker, the sandbox, Temporal and
 * Postgres. A last run with the worker under `--cpu-prof` says where its time goes.
 */

const SIZES = [10_000, 100_000] as const;
/**
 * A sandbox of one lead: what a run costs whatever its size (the command's start-up, its
 * Temporal client, the workflow and its activities), for both sides.
 */
const FIXED_SIZE = 1;
/** Timed rounds per size (each runs both sides into both targets), after one warm-up round. */
const ROUNDS: Record<number, number> = { [FIXED_SIZE]: 3, 10_000: 3, 100_000: 3 };
const TARGETS = ['sqlite', 'postgres'] as const;
type Target = (typeof TARGETS)[number];
const SIDES = ['plain', 'ebsync'] as const;
type SideName = (typeof SIDES)[number];

const TARGET_RATIO: Record<number, number> = { 10_000: 1.0, 100_000: 0.7 };
const PEAK_RSS_MB = 300;

interface Run {
  size: number;
  target: Target;
  side: SideName;
  seconds: number;
  rows: number;
  /** CPU seconds by process during the run. */
  cpu: { command: number; worker: number; sandbox: number; temporal: number; postgres: number };
  /** Of the worker's CPU, its main threads' (the JavaScript of its activities): not in `cpu`. */
  workerMainThread: number;
  exit: number;
  output: string;
  /** The SQLite file the run wrote (runs into SQLite). */
  file?: string;
}

/** One write of a side's rows by SQLite alone (bench/sqlite-rows-floor.ts). */
interface FloorRun {
  rows: number;
  bytes: number;
  seconds: number;
  cpu: number;
}

interface SizeResult {
  size: number;
  runs: Run[];
  workerPeakRssMiB: number;
  sandbox: string;
  /** SQLite alone writing the rows each side's last SQLite run left, FLOOR_ROUNDS times. */
  floors?: Record<SideName, FloorRun[]>;
}

/** Writes of each side's rows by SQLite alone, alternating sides (bench/sqlite-rows-floor.ts). */
const FLOOR_ROUNDS = 3;

/** CPU seconds of this process's finished children (cutime + cstime): each command's own. */
function childrenCpu(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) / 100;
}

function runCommand(
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ seconds: number; exit: number; output: string; stdout: string; cpu: number }> {
  const before = childrenCpu();
  const started = performance.now();
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  track(child);
  let output = '';
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => {
    output += c;
    stdout += c;
  });
  child.stderr.setEncoding('utf8').on('data', (c: string) => (output += c));
  // Timed to its exit; resolved once its output is all read ('close' comes after both).
  let seconds = 0;
  child.once('exit', () => (seconds = (performance.now() - started) / 1000));
  return new Promise((resolve) => {
    child.once('close', (code) => {
      resolve({
        seconds,
        exit: code ?? 1,
        output: output.slice(-3000),
        stdout: stdout.slice(-3000),
        cpu: childrenCpu() - before,
      });
    });
  });
}

/** Resolves when a line holding `text` shows on the child's stdout or stderr. */
function waitForLine(child: ChildProcess, text: string, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(
      () => reject(new Error(`no "${text}" within ${timeoutMs} ms: ${seen.slice(-500)}`)),
      timeoutMs,
    );
    const look = (chunk: Buffer) => {
      seen = (seen + chunk.toString('utf8')).slice(-4000);
      if (seen.includes(text)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', look);
    child.stderr?.on('data', look);
    child.once('exit', (code) => reject(new Error(`exited ${code}: ${seen.slice(-500)}`)));
  });
}

/** Peak resident memory (VmHWM) of the largest process of a tree: `ebsync worker`'s child. */
function treePeakMiB(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  let peak = memoryMiB(pid).peak ?? 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (parent === pid) peak = Math.max(peak, memoryMiB(Number(entry)).peak ?? 0);
    } catch {
      // Gone meanwhile.
    }
  }
  return peak;
}

async function countRows(to: string, table: string): Promise<number> {
  if (to.startsWith('sqlite:')) {
    const db = new Database(to.slice('sqlite:'.length), { readonly: true });
    try {
      return (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: to });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`);
    return Number(rows[0]?.n ?? 0);
  } finally {
    await client.end();
  }
}

async function createDatabase(server: PostgresServer, name: string): Promise<string> {
  const client = new pg.Client({ connectionString: server.url });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(server.url);
  url.pathname = `/${name}`;
  return url.toString();
}

interface Stack {
  temporalAddress: string;
  temporalPid: number | undefined;
  postgres: PostgresServer;
  postgresPid: number | undefined;
  work: string;
}

async function runSize(ctx: BenchContext, stack: Stack, size: number): Promise<SizeResult> {
  const label = size.toLocaleString('en-US');
  const reach = Math.max(size, 10_000);
  ctx.log(`${label} leads: starting the sandbox (HTTP, reach ${reach})`);
  const sandbox: SeededSandbox = await seededSandbox({
    leads: size,
    http: true,
    flags: ['--reach-limit', String(reach)],
    timeoutMs: 600_000,
  });
  const dir = join(stack.work, `size-${size}`);
  mkdirSync(dir, { recursive: true });
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    TEMPORAL_ADDRESS: stack.temporalAddress,
    TEMPORAL_TASK_QUEUE: `bench-mirror-${size}`,
    EBSYNC_DATA_DIR: join(dir, 'data'),
    EBS_BASE_URL: sandbox.baseUrl,
    EBS_API_KEY: sandbox.apiKey,
    EBS_ALLOW_HTTP: 'true',
    EBS_RATE_LIMIT: '0',
    EBS_REACH_LIMIT: String(reach),
    EBSYNC_LOG_LEVEL: 'info',
    NO_COLOR: '1',
  };
  const startWorker = async (extra: NodeJS.ProcessEnv = {}) => {
    const child = spawn(process.execPath, ['cli/ebsync.js', 'worker'], {
      cwd: ROOT,
      env: { ...env, ...extra },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    track(child);
    await waitForLine(child, 'worker started', 120_000);
    return child;
  };
  const stopWorker = (child: ChildProcess) =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
  let worker: ChildProcess | undefined;
  const connection = `bench-${size}`;
  const runs: Run[] = [];
  let serial = 0;
  const once = async (target: Target, side: SideName): Promise<Run> => {
    serial += 1;
    const to =
      target === 'sqlite'
        ? `sqlite:${join(dir, `${side}-${serial}.db`)}`
        : await createDatabase(stack.postgres, `${side}_${size}_${serial}`);
    // The backend that created the database exits with its connection: once its postmaster
    // has reaped it, its CPU is in the reading before the run, not in the run's.
    if (target === 'postgres') await new Promise((r) => setTimeout(r, 200));
    const probes = {
      worker: () => treeCpuSeconds(worker?.pid) ?? 0,
      workerMainThread: () => treeMainThreadCpuSeconds(worker?.pid) ?? 0,
      sandbox: () => treeCpuSeconds(sandbox.child.pid) ?? 0,
      temporal: () => treeCpuSeconds(stack.temporalPid) ?? 0,
      postgres: () => treeCpuSeconds(stack.postgresPid) ?? 0,
    };
    const before = Object.fromEntries(Object.entries(probes).map(([k, f]) => [k, f()]));
    const args =
      side === 'ebsync'
        ? ['cli/ebsync.js', 'sync', 'leads', '--full', '--connection', connection, '--to', to]
        : ['bench/plain-loop.ts', '--base', sandbox.baseUrl, '--key', sandbox.apiKey, '--to', to];
    args.push(...(side === 'plain' ? ['--reach-limit', String(reach)] : []));
    const done = await runCommand(args, env);
    // Read before the row count below, whose Postgres backend is no part of the run.
    const after = Object.fromEntries(Object.entries(probes).map(([k, f]) => [k, f()]));
    const delta = (k: keyof typeof probes) => (after[k] ?? 0) - (before[k] ?? 0);
    const rows = await countRows(to, side === 'ebsync' ? 'leads' : 'plain_leads').catch(() => -1);
    return {
      ...(target === 'sqlite' ? { file: to.slice('sqlite:'.length) } : {}),
      size,
      target,
      side,
      seconds: done.seconds,
      rows,
      exit: done.exit,
      output: done.output,
      workerMainThread: delta('workerMainThread'),
      cpu: {
        command: done.cpu,
        worker: delta('worker'),
        sandbox: delta('sandbox'),
        temporal: delta('temporal'),
        postgres: target === 'postgres' ? delta('postgres') : 0,
      },
    };
  };

  try {
    worker = await startWorker();
    // A connection of its own per size: the dev server is shared, and a connection's workflow
    // stays on the task queue of the worker that started it.
    const connect = await runCommand(
      ['cli/ebsync.js', 'connect', '--api-key', '--name', connection],
      env,
    );
    if (connect.exit !== 0) throw new Error(`ebsync connect failed: ${connect.output}`);
    const rounds = ROUNDS[size] ?? 1;
    for (let round = 0; round <= rounds; round += 1) {
      for (const target of TARGETS) {
        // Interleaved, each side first in turn, so neither always meets a warmer machine.
        const order =
          (round + (target === 'postgres' ? 1 : 0)) % 2 === 0 ? SIDES : [...SIDES].reverse();
        for (const side of order) {
          const run = await once(target, side);
          ctx.log(
            `${label} ${target} ${side}${round === 0 ? ' (warm-up)' : ''}: ${fmt(run.seconds, 2)} s, ${run.rows} rows, exit ${run.exit}`,
          );
          if (run.exit !== 0) ctx.log(run.output);
          if (round > 0) runs.push(run);
        }
      }
    }
    const workerPeakRssMiB = treePeakMiB(worker.pid);
    await stopWorker(worker);
    const floors = size === FIXED_SIZE ? undefined : await writeFloors(ctx, runs, dir);
    if (size === SIZES[0]) {
      // Where the worker's time goes: one more pass into SQLite under the profiler.
      const profiles = join(stack.work, 'profiles');
      mkdirSync(profiles, { recursive: true });
      chmodSync(profiles, 0o777);
      worker = await startWorker({ NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${profiles}` });
      await once('sqlite', 'ebsync');
      await stopWorker(worker);
    }
    return { size, runs, workerPeakRssMiB, sandbox: sandbox.via, ...(floors ? { floors } : {}) };
  } finally {
    if (worker) await stopWorker(worker);
    await sandbox.stop();
  }
}

/**
 * What SQLite alone takes to write the rows each side's last SQLite run wrote, with nothing
 * but the writer running: what those rows cost written as ebsync writes them (row by row,
 * indexes in place, WAL, 1,000 rows a commit), whoever fetches them.
 */
async function writeFloors(
  ctx: BenchContext,
  runs: readonly Run[],
  dir: string,
): Promise<Record<SideName, FloorRun[]>> {
  const last = (side: SideName) =>
    runs.filter((r) => r.target === 'sqlite' && r.side === side && r.file).at(-1)?.file;
  const floors: Record<SideName, FloorRun[]> = { plain: [], ebsync: [] };
  for (let round = 0; round < FLOOR_ROUNDS; round += 1) {
    for (const side of SIDES) {
      const from = last(side);
      if (!from) continue;
      const to = join(dir, `floor-${side}-${round}.db`);
      const done = await runCommand(
        ['bench/sqlite-rows-floor.ts', '--from', from, '--to', to],
        process.env,
      );
      if (done.exit !== 0) throw new Error(`sqlite-rows-floor failed: ${done.output}`);
      const line = done.stdout.split('\n').findLast((l) => l.startsWith('{')) ?? '';
      const result = JSON.parse(line) as {
        rows: Record<string, number>;
        bytes: number;
        writeMs: number;
        cpuMs: number;
      };
      const rows = Object.values(result.rows).reduce((a, b) => a + b, 0);
      floors[side].push({
        rows,
        bytes: result.bytes,
        seconds: result.writeMs / 1000,
        cpu: result.cpuMs / 1000,
      });
      ctx.log(`rows of ${side} written by SQLite alone: ${rows} in ${fmt(result.writeMs, 0)} ms`);
      for (const file of [to, `${to}-wal`, `${to}-shm`]) rmSync(file, { force: true });
    }
  }
  return floors;
}

function latestProfile(dir: string): ProfileSummary | undefined {
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  } catch {
    return undefined;
  }
  // The worker's child (the process that runs activities) writes the largest profile.
  const largest = files
    .map((f) => join(dir, f))
    .sort((a, b) => statSync(b).size - statSync(a).size)[0];
  return largest ? summarizeProfile(largest) : undefined;
}

const met = (ok: boolean) => (ok ? '**met**' : '**NOT met**');

export const mirrorBenchmark: Benchmark = {
  name: 'mirror',
  title: 'Mirror: `ebsync sync leads --full` against a hand-written loop, into SQLite and Postgres',
  async run(ctx) {
    // The command as `npm ci` leaves it: compiled, its workflows bundled (cli/build.js).
    ctx.log('building dist/ (npm run build)');
    const build = await runCommand(['cli/build.js'], process.env);
    if (build.exit !== 0) throw new Error(`npm run build failed: ${build.output}`);
    const work = mkdtempSync(join(tmpdir(), 'ebsync-bench-mirror-'));
    // Postgres runs as another user when this runs as root: it must reach its folder.
    chmodSync(work, 0o755);
    ctx.log('starting a Temporal dev server and Postgres');
    const temporal = await startBenchTemporal(ctx, work);
    const postgres = await startPostgresServer({
      dir: join(work, 'pg'),
      ephemeral: true,
      database: 'postgres',
    });
    const stack: Stack = {
      temporalAddress: temporal.address,
      temporalPid: pidByCommandLine(join(work, 'temporal.db')),
      postgres,
      postgresPid: pidByCommandLine(join(work, 'pg')),
      work,
    };
    try {
      const fixed = await runSize(ctx, stack, FIXED_SIZE);
      const results: SizeResult[] = [];
      for (const size of SIZES) results.push(await runSize(ctx, stack, size));
      return report(results, fixed, latestProfile(join(work, 'profiles')));
    } finally {
      await postgres.stop();
      await temporal.teardown();
      rmSync(work, { recursive: true, force: true });
    }
  },
};

function report(results: SizeResult[], fixed: SizeResult, profile: ProfileSummary | undefined) {
  const cell = (r: SizeResult, target: Target, side: SideName) =>
    r.runs.filter((x) => x.target === target && x.side === side);
  const med = (runs: Run[], f: (r: Run) => number) => median(runs.map(f));
  /** The target's ratio at a size, and the wall time it allows: that ratio of the loop's. */
  const allowance = (r: SizeResult, target: Target) => {
    const ratio = TARGET_RATIO[r.size] ?? 1;
    return { ratio, allowed: ratio * med(cell(r, target, 'plain'), (x) => x.seconds) };
  };
  const rows = results.flatMap((r) =>
    TARGETS.flatMap((target) =>
      SIDES.map((side) => {
        const runs = cell(r, target, side);
        const per1k = (f: (x: Run) => number) => fmt((med(runs, f) * 1000) / r.size, 3);
        return [
          r.size.toLocaleString('en-US'),
          target,
          side,
          fmt(
            med(runs, (x) => x.seconds),
            2,
          ),
          fmt(r.size / med(runs, (x) => x.seconds), 0),
          [...new Set(runs.map((x) => x.rows))].join('/'),
          per1k((x) => x.cpu.command),
          per1k((x) => x.cpu.worker),
          per1k((x) => x.workerMainThread),
          per1k((x) => x.cpu.sandbox),
          per1k((x) => x.cpu.temporal),
          per1k((x) => x.cpu.postgres),
        ];
      }),
    ),
  );
  const ratios = results.flatMap((r) =>
    TARGETS.map((target) => {
      const e = med(cell(r, target, 'ebsync'), (x) => x.seconds);
      const p = med(cell(r, target, 'plain'), (x) => x.seconds);
      return { size: r.size, target, ratio: e / p };
    }),
  );
  // What a run costs whatever its size, against the plain loop's whole run at the first size.
  const fixedWall = (target: Target, side: SideName) =>
    med(cell(fixed, target, side), (x) => x.seconds);
  const fixedRows = TARGETS.flatMap((target) =>
    SIDES.map((side) => {
      const runs = cell(fixed, target, side);
      return [
        target,
        side,
        fmt(fixedWall(target, side), 2),
        fmt(
          med(runs, (x) => x.cpu.command),
          2,
        ),
        fmt(
          med(runs, (x) => x.cpu.worker),
          2,
        ),
        fmt(
          med(runs, (x) => x.cpu.temporal),
          2,
        ),
        [...new Set(runs.map((x) => x.rows))].join('/'),
      ];
    }),
  );
  const first = results[0];
  const fixedNotes = first
    ? TARGETS.map((target) => {
        const whole = med(cell(first, target, 'plain'), (x) => x.seconds);
        const floor = fixedWall(target, 'ebsync');
        return `Fixed cost into ${target}: one ebsync run of ${FIXED_SIZE} lead takes ${fmt(floor, 2)} s, ${fmt(floor / whole, 2)}× the plain loop's whole run of ${first.size.toLocaleString('en-US')} leads (${fmt(whole, 2)} s)${floor >= whole * (TARGET_RATIO[first.size] ?? 1) ? `: a ratio of ${fmt(TARGET_RATIO[first.size] ?? 1, 1)}× at ${first.size.toLocaleString('en-US')} is out of reach for any per-lead speed-up while a pass is a workflow started by the command` : ''}.`;
      })
    : [];
  // The run's CPU over every process, spread over all cores, bounds its wall time from below:
  // where that bound is past the target, no overlap of work can meet it, only less CPU.
  const cores = availableParallelism();
  const cpuFloorNotes = results.flatMap((r) =>
    TARGETS.map((target) => {
      const runs = cell(r, target, 'ebsync');
      const cpu = med(runs, (x) => Object.values(x.cpu).reduce((a, b) => a + b, 0));
      const { ratio, allowed } = allowance(r, target);
      const floor = cpu / cores;
      const size = r.size.toLocaleString('en-US');
      return floor > allowed
        ? `CPU floor, ${size} leads into ${target}: ebsync's run took ${fmt(cpu, 2)} CPU seconds over all processes (command, worker, sandbox, Temporal${target === 'postgres' ? ', Postgres' : ''}), at least ${fmt(floor, 2)} s of wall time on ${cores} cores kept fully busy, past the ${fmt(allowed, 2)} s that ${fmt(ratio, 1)}× allows: the target needs the run's CPU cut ${fmt(floor / allowed, 1)}-fold, which no added concurrency gives.`
        : `CPU floor, ${size} leads into ${target}: ebsync's run took ${fmt(cpu, 2)} CPU seconds over all processes, ${fmt(floor, 2)} s on ${cores} cores kept fully busy, within the ${fmt(allowed, 2)} s that ${fmt(ratio, 1)}× allows: more overlap could reach it.`;
    }),
  );
  // The sandbox answers on one thread of one process: its CPU for the pages a side asks for
  // bounds that side's wall time from below, however many cores the rest may use.
  const serviceNotes = results.flatMap((r) =>
    TARGETS.map((target) => {
      const { ratio, allowed } = allowance(r, target);
      const ebsync = med(cell(r, target, 'ebsync'), (x) => x.cpu.sandbox);
      const plain = med(cell(r, target, 'plain'), (x) => x.cpu.sandbox);
      const size = r.size.toLocaleString('en-US');
      return `The service's own time, ${size} leads into ${target}: the sandbox (one process, one thread) spent ${fmt(ebsync, 2)} s answering ebsync's requests (pages of leads with their bookings), ${fmt((ebsync / allowed) * 100, 0)} % of the ${fmt(allowed, 2)} s that ${fmt(ratio, 1)}× allows, and ${fmt(plain, 2)} s answering the plain loop's.`;
    }),
  );
  // The worker runs a pass's JavaScript on one thread: its CPU there, against the run's wall
  // time, says how much of the run waits on that one thread whatever the other core does.
  const mainThreadNotes = results.flatMap((r) =>
    TARGETS.map((target) => {
      const runs = cell(r, target, 'ebsync');
      const main = med(runs, (x) => x.workerMainThread);
      const wall = med(runs, (x) => x.seconds);
      const size = r.size.toLocaleString('en-US');
      return `One thread, ${size} leads into ${target}: the worker's main thread (activities, parsing, hashing, the writes) was busy ${fmt(main, 2)} s of ebsync's ${fmt(wall, 2)} s (${fmt((main / wall) * 100, 0)} %), the rest of the worker (V8's collector and compiler threads, Temporal's core, libuv) ${fmt(
        med(runs, (x) => x.cpu.worker - x.workerMainThread),
        2,
      )} s; the plain loop's whole run took ${fmt(
        med(cell(r, target, 'plain'), (x) => x.seconds),
        2,
      )} s.`;
    }),
  );
  // SQLite alone writing each side's rows: with a run's fixed cost, about the least wall time
  // ebsync takes into SQLite as it starts and writes now, owing nothing to its pages' reading.
  const floorsOf = (r: SizeResult, side: SideName) => r.floors?.[side] ?? [];
  const floorRows = results.flatMap((r) =>
    SIDES.flatMap((side) => {
      const runs = floorsOf(r, side);
      if (runs.length === 0) return [];
      return [
        [
          r.size.toLocaleString('en-US'),
          side,
          [...new Set(runs.map((x) => x.rows))].join('/'),
          fmt(median(runs.map((x) => x.bytes)) / 1_048_576, 1),
          fmt(median(runs.map((x) => x.seconds)), 2),
          fmt(median(runs.map((x) => x.cpu)), 2),
        ],
      ];
    }),
  );
  const floorNotes = results.flatMap((r) => {
    const ebsync = floorsOf(r, 'ebsync');
    const plain = floorsOf(r, 'plain');
    if (ebsync.length === 0 || plain.length === 0) return [];
    const e = median(ebsync.map((x) => x.seconds));
    const p = median(plain.map((x) => x.seconds));
    const fixedCost = fixedWall('sqlite', 'ebsync');
    const { ratio, allowed } = allowance(r, 'sqlite');
    const size = r.size.toLocaleString('en-US');
    const bound = e + fixedCost;
    return [
      `Writes alone, ${size} leads into sqlite: SQLite by itself took ${fmt(e, 2)} s to insert the ${ebsync[0]?.rows ?? 0} rows ebsync's run wrote (leads and their bookings: typed columns, each record's JSON, indexes), ${fmt(e / p, 1)}× the ${fmt(p, 2)} s it took for the plain loop's ${plain[0]?.rows ?? 0} rows (id, email, attributes). With the ${fmt(fixedCost, 2)} s an ebsync run of ${FIXED_SIZE} lead takes (the command's start-up and checks, the workflow and its activities), that is about ${fmt(bound, 2)} s before the pages of the other leads are read, ${fmt((bound / allowed) * 100, 0)} % of the ${fmt(allowed, 2)} s that ${fmt(ratio, 1)}× allows${bound > allowed ? ': out of reach while ebsync starts a run and writes these rows as it does now, however fast it reads' : ''}.`,
    ];
  });
  const sameRows = [...results, fixed].every((r) =>
    r.runs.every((x) => x.rows === r.size && x.exit === 0),
  );
  const notes = [
    ...ratios.map(
      ({ size, target, ratio }) =>
        `ebsync's wall time / the plain loop's, ${size.toLocaleString('en-US')} leads into ${target} ≤ ${fmt(TARGET_RATIO[size] ?? 1, 1)}×: ${met(ratio <= (TARGET_RATIO[size] ?? 1))}, ${fmt(ratio, 2)}×.`,
    ),
    ...results.map(
      (r) =>
        `Worker peak RSS ≤ ${PEAK_RSS_MB} MB at ${r.size.toLocaleString('en-US')} leads (both targets, one worker): ${met(r.workerPeakRssMiB * 1.048576 <= PEAK_RSS_MB)}, ${fmt(r.workerPeakRssMiB, 0)} MiB (${fmt(r.workerPeakRssMiB * 1.048576, 0)} MB).`,
    ),
    `Every run exited 0 and left exactly the sandbox's leads in its table: ${sameRows ? 'yes' : '**NO**'}.`,
    ...fixedNotes,
    ...cpuFloorNotes,
    ...floorNotes,
    ...serviceNotes,
    ...mainThreadNotes,
    `ebsync does more per lead than the loop: it also writes each lead's bookings (sideloaded with the lead) into \`lead_bookings\`, keeps a ledger of hashes to tell changed from unchanged, writes typed columns, and asks the booking list for its count once to know it has every booking.`,
  ];
  const tables: Table[] = [
    {
      caption: 'Medians of the timed rounds; CPU seconds per 1,000 leads by process:',
      head: [
        'leads',
        'into',
        'side',
        'wall (s)',
        'leads/s',
        'rows',
        'CPU command',
        'CPU worker',
        'of it main thread',
        'CPU sandbox',
        'CPU Temporal',
        'CPU Postgres',
      ],
      rows,
    },
  ];
  tables.push({
    caption: `A sandbox of ${FIXED_SIZE} lead: what a run costs whatever its size (the command's start-up; for ebsync also its Temporal client, the workflow and its activities). Medians of ${ROUNDS[FIXED_SIZE]} rounds; CPU seconds per run:`,
    head: ['into', 'side', 'wall (s)', 'CPU command', 'CPU worker', 'CPU Temporal', 'rows'],
    rows: fixedRows,
  });
  if (floorRows.length > 0) {
    tables.push({
      caption: `SQLite alone writing the rows each side's last run into SQLite left (\`node bench/sqlite-rows-floor.ts\`: the same tables, indexes and page size in a new file, WAL and synchronous NORMAL, the rows in memory before the clock starts, one prepared INSERT, 1,000 rows a transaction, no request, no parsing, no ebsync module); medians of ${FLOOR_ROUNDS}, sides alternating:`,
      head: ['leads', "side's rows", 'rows', 'file (MiB)', 'wall (s)', 'CPU (s)'],
      rows: floorRows,
    });
  }
  if (profile) {
    tables.push(
      {
        caption: `Where the worker's CPU went in one pass of ${SIZES[0].toLocaleString('en-US')} leads into SQLite (--cpu-prof, self time, ${fmt(profile.busyMs, 0)} ms busy), by file or package:`,
        head: ['file or package', 'ms', 'share'],
        rows: profile.byFile.map(([k, ms]) => [
          `\`${k}\``,
          fmt(ms, 0),
          `${fmt((ms / profile.busyMs) * 100, 0)} %`,
        ]),
      },
      {
        caption: 'By function:',
        head: ['function', 'ms', 'share'],
        rows: profile.byFunction.map(([k, ms]) => [
          `\`${k}\``,
          fmt(ms, 0),
          `${fmt((ms / profile.busyMs) * 100, 0)} %`,
        ]),
      },
    );
  }
  return {
    method: [
      `Sizes ${SIZES.map((s) => s.toLocaleString('en-US')).join(' and ')}: one sandbox each (\`${results[0]?.sandbox.replace(String(SIZES[0]), 'N') ?? ''}\`, HTTP, its reach limit raised to the size so paging reaches every lead for both sides), a Temporal dev server and an embedded Postgres shared by all runs, and one \`ebsync worker\` per size, already polling (\`EBS_RATE_LIMIT=0\`, \`EBS_REACH_LIMIT\` = the sandbox's). A run is one command into a fresh SQLite file or Postgres database, timed from spawn to exit: \`ebsync sync leads --full --to …\` (the compiled CLI) or \`node bench/plain-loop.ts --to …\` (its own fetch and SQL, one page at a time, no ebsync module). One warm-up round, then ${SIZES.map((s) => `${ROUNDS[s]} at ${s.toLocaleString('en-US')}`).join(' and ')}, each side first in turn. The same with a sandbox of ${FIXED_SIZE} lead (${ROUNDS[FIXED_SIZE]} rounds) gives what a run costs whatever its size. At each size, \`node bench/sqlite-rows-floor.ts\` then writes the rows each side's last SQLite run left into a new file with SQLite alone (${FLOOR_ROUNDS} times each, sides alternating): what those rows cost to write, whoever fetches them.`,
      `CPU is user + system time from /proc: the command's own (a finished child of the runner), and the worker's, sandbox's, Temporal's and Postgres's process trees over the run; "of it main thread" is the part of the worker's on its processes' main threads (/proc/PID/task/PID), where its JavaScript runs. Peak RSS is VmHWM of the worker's largest process.`,
    ].join('\n\n'),
    tables,
    notes,
  };
}
