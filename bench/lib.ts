import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { pino } from 'pino';
import { DEV_SERVER_ARGS } from '../worker/dev-server.js';
import { findTemporalCli } from '../worker/temporal-cli.js';
import { bundleQuietly } from '../worker/worker.js';

/** Shared pieces of the benchmarks: statistics, tables, sandbox processes, one HTTP GET. */

export const ROOT = new URL('..', import.meta.url).pathname;

// ---------------------------------------------------------------------------------------------
// Results

export interface Table {
  caption?: string;
  head: string[];
  rows: (string | number)[][];
}

export interface Section {
  /** One paragraph under the heading: what was measured and how. */
  method: string;
  tables: Table[];
  /** Targets, ratios and observations, one bullet each. */
  notes: string[];
}

export interface BenchContext {
  log(message: string): void;
}

export interface Benchmark {
  name: string;
  title: string;
  run(ctx: BenchContext): Promise<Section>;
}

/**
 * A Temporal dev server as `npm start` runs it (worker/dev-server.ts: a SQLite file, WAL,
 * fairness), its file in `dir`: a benchmark measures the server users get.
 */
export async function startBenchTemporal(
  ctx: BenchContext,
  dir: string,
): Promise<TestWorkflowEnvironment> {
  return TestWorkflowEnvironment.createLocal({
    server: {
      executable: await findTemporalCli({ onProgress: (line) => ctx.log(line) }),
      dbFilename: join(dir, 'temporal.db'),
      log: { format: 'pretty', level: 'error' },
      extraArgs: DEV_SERVER_ARGS,
    },
  });
}

/** The workflows bundled as the worker bundles them, written into `dir`: the file's path. */
export async function writeWorkflowBundle(dir: string): Promise<string> {
  const { code } = await bundleQuietly(pino({ level: 'silent' }));
  const path = join(dir, 'workflow-bundle.js');
  writeFileSync(path, code);
  return path;
}

// ---------------------------------------------------------------------------------------------
// Statistics

export interface Summary {
  n: number;
  min: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
  mean: number;
}

/** Percentile of sorted values, linear between closest ranks (so the median of two is their mean). */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const position = (p / 100) * (sorted.length - 1);
  const lower = Math.floor(position);
  const low = sorted[lower] as number;
  const high = sorted[Math.min(sorted.length - 1, lower + 1)] as number;
  return low + (high - low) * (position - lower);
}

export function summarize(values: readonly number[]): Summary {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    n: sorted.length,
    min: sorted[0] ?? Number.NaN,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1] ?? Number.NaN,
    mean: sorted.reduce((a, b) => a + b, 0) / (sorted.length || 1),
  };
}

/** The machine's CPU time counters (Linux /proc/stat, all cores), or undefined elsewhere. */
function cpuTicks(): number[] | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
    return line.trim().split(/\s+/).slice(1).map(Number);
  } catch {
    return undefined;
  }
}

/**
 * Share of CPU time in `steal` (the 8th counter) since the meter was made: the time the
 * hypervisor gave these cores to other machines, a noisy neighbour made visible. Undefined
 * where /proc/stat is missing.
 */
export function stealMeter(): { read(): number | undefined } {
  const before = cpuTicks();
  return {
    read() {
      const after = cpuTicks();
      if (!before || !after || after.length < 8) return undefined;
      const delta = after.map((v, k) => v - (before[k] ?? 0));
      // guest and guest_nice (9th, 10th) are already counted in user and nice.
      const total = delta.slice(0, 8).reduce((a, b) => a + b, 0);
      return total > 0 ? (delta[7] ?? 0) / total : undefined;
    },
  };
}

export function median(values: readonly number[]): number {
  return summarize(values).p50;
}

/** Fixed decimals, with thousands separators for large numbers. */
export function fmt(value: number, decimals = 1): string {
  if (!Number.isFinite(value)) return 'n/a';
  return value.toLocaleString('en-US', {
    minimumFractionDigits: decimals,
    maximumFractionDigits: decimals,
  });
}

export function ratio(a: number, b: number): string {
  return `${fmt(a / b, 2)}×`;
}

export function renderTable(table: Table): string {
  const lines: string[] = [];
  if (table.caption) lines.push(table.caption, '');
  lines.push(`| ${table.head.join(' | ')} |`);
  // Columns of figures are right-aligned, the rest left.
  const figure = /^(-?[\d.,]+( %|×| s| ms)?|n\/a|)$/;
  const numeric = table.head.map((_, i) =>
    table.rows.every((row) => figure.test(String(row[i] ?? ''))),
  );
  lines.push(`| ${numeric.map((n) => (n ? '---:' : '---')).join(' | ')} |`);
  for (const row of table.rows) lines.push(`| ${row.map(String).join(' | ')} |`);
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------
// Sandbox processes

export interface SandboxProcess {
  child: ChildProcess;
  /** Milliseconds from spawn to the ready line on stdout. */
  readyMs: number;
  baseUrl: string;
  apiKey: string;
  caFile: string | undefined;
  /** Peak and current resident memory of the process at ready (Linux), in MiB. */
  peakRssMiB: number | undefined;
  rssMiB: number | undefined;
  stderr(): string;
  stop(): Promise<void>;
}

const READY = 'Event Business Service sandbox ready';
const running = new Set<ChildProcess>();

/** Has killAll() kill this child too if it is still running when the runner stops. */
export function track(child: ChildProcess): void {
  running.add(child);
  child.once('exit', () => running.delete(child));
}

/** Kills every sandbox and tracked process still running (on exit or interrupt of the runner). */
export function killAll(): void {
  for (const child of running) child.kill('SIGKILL');
  running.clear();
}

/** Peak (VmHWM) and current (VmRSS) resident memory of a live process (Linux), in MiB. */
export function memoryMiB(pid: number | undefined): { peak?: number; current?: number } {
  if (pid === undefined) return {};
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (name: string) => {
      const m = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status);
      return m ? Number(m[1]) / 1024 : undefined;
    };
    const peak = kib('VmHWM');
    const current = kib('VmRSS');
    return {
      ...(peak !== undefined ? { peak } : {}),
      ...(current !== undefined ? { current } : {}),
    };
  } catch {
    return {};
  }
}

/**
 * The fields of /proc/PID/stat from the state on (the command before it may hold spaces), or
 * undefined when the process is gone. utime, stime, cutime and cstime are the 14th to 17th
 * fields overall, in clock ticks (100 per second on Linux).
 */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** User + system CPU seconds a live process has used (Linux /proc/PID/stat), or undefined. */
export function cpuSeconds(pid: number | undefined): number | undefined {
  const fields = pid === undefined ? undefined : statFields(pid);
  return fields && (Number(fields[11]) + Number(fields[12])) / 100;
}

/** Each live process's pid with a file of its /proc entry (Linux), skipping any gone meanwhile. */
function procFiles(file: 'stat' | 'cmdline'): Map<number, string> {
  const read = new Map<number, string>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      read.set(Number(entry), readFileSync(`/proc/${entry}/${file}`, 'utf8'));
    } catch {
      // Gone between the listing and the read.
    }
  }
  return read;
}

/** The pid of a live process whose command line holds `part` (a file it was given). */
export function pidByCommandLine(part: string): number | undefined {
  for (const [pid, cmdline] of procFiles('cmdline')) if (cmdline.includes(part)) return pid;
  return undefined;
}

/** Parent pid of each live process. */
function parentPids(): Map<number, number> {
  return new Map(
    [...procFiles('stat')].map(([pid, stat]) => [
      pid,
      Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]),
    ]),
  );
}

/** A process and all its live descendants. */
function processTree(pid: number | undefined): Set<number> | undefined {
  const parents = parentPids();
  if (pid === undefined || !parents.has(pid)) return undefined;
  const tree = new Set([pid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const [child, parent] of parents) {
      if (tree.has(parent) && !tree.has(child)) {
        tree.add(child);
        grew = true;
      }
    }
  }
  return tree;
}

/**
 * CPU seconds of a process and all its live descendants: `ebsync worker` runs its work in a
 * child of the launcher, whose own /proc figure would miss it.
 */
export function treeCpuSeconds(pid: number | undefined): number | undefined {
  const tree = processTree(pid);
  if (!tree) return undefined;
  // With the children each member waited for: a Postgres backend that served one connection
  // and exited is in its postmaster's count, not lost from the tree (which made the plain
  // loop's Postgres CPU come out negative).
  let total = 0;
  for (const member of tree) total += (cpuSeconds(member) ?? 0) + (reapedCpuSeconds(member) ?? 0);
  return total;
}

/**
 * CPU seconds of the main threads of a process tree (/proc/PID/task/PID): in a Node process
 * the one thread that runs its JavaScript, where V8's helpers (garbage collection, compiling)
 * and libuv's pool run on threads of their own.
 */
export function treeMainThreadCpuSeconds(pid: number | undefined): number | undefined {
  const tree = processTree(pid);
  if (!tree) return undefined;
  let total = 0;
  for (const member of tree) {
    try {
      const stat = readFileSync(`/proc/${member}/task/${member}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      total += (Number(fields[11]) + Number(fields[12])) / 100;
    } catch {
      // Gone meanwhile.
    }
  }
  return total;
}

/** CPU seconds of the children a process waited for (cutime + cstime), theirs included. */
function reapedCpuSeconds(pid: number): number | undefined {
  const fields = statFields(pid);
  return fields && (Number(fields[13]) + Number(fields[14])) / 100;
}

/**
 * Spawns a sandbox and resolves when its ready block is on stdout. `args` go to node; the
 * clock starts just before spawn, so node start-up, module loading and seeding all count.
 */
export function spawnSandbox(args: string[], timeoutMs: number): Promise<SandboxProcess> {
  const started = performance.now();
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, EBSYNC_LOG_LEVEL: 'warn' },
  });
  running.add(child);
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-4000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }
    running.delete(child);
  };

  return new Promise<SandboxProcess>((resolve, reject) => {
    let out = '';
    let readyMs: number | undefined;
    let settled = false;
    const fail = (message: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void stop().then(() => reject(new Error(message)));
    };
    const timer = setTimeout(
      () => fail(`not ready within ${timeoutMs / 1000} s; stderr: ${stderr.trim().slice(-500)}`),
      timeoutMs,
    );
    child.once('exit', (code, signal) =>
      fail(`exited (${code ?? signal}) before ready; stderr: ${stderr.trim().slice(-500)}`),
    );
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      if (settled) return;
      if (readyMs === undefined && (out + chunk).includes(READY)) {
        readyMs = performance.now() - started;
      }
      out += chunk;
      const field = (label: string) => new RegExp(`^\\s*${label}\\s+(\\S+)`, 'm').exec(out)?.[1];
      const baseUrl = field('base URL');
      const apiKey = field('API key');
      const caFile = field('CA file');
      const complete =
        baseUrl !== undefined &&
        apiKey !== undefined &&
        (baseUrl.startsWith('http:') || caFile !== undefined);
      if (readyMs !== undefined && complete && /^Stop:/m.test(out)) {
        settled = true;
        clearTimeout(timer);
        const mem = memoryMiB(child.pid);
        resolve({
          child,
          readyMs,
          baseUrl,
          apiKey,
          caFile,
          peakRssMiB: mem.peak,
          rssMiB: mem.current,
          stderr: () => stderr,
          stop,
        });
      }
    });
  });
}

export interface SeededSandboxOptions {
  leads: number;
  http: boolean;
  seed?: number;
  timeoutMs?: number;
  /** More `ebsync sandbox` flags, e.g. `['--reach-limit', '100000']`. */
  flags?: string[];
}

/** A sandbox process holding `leads` generated leads (`ebsync sandbox --leads`). */
export type SeededSandbox = SandboxProcess & { via: string };

/** Seeded sandboxes one benchmark left running for a later one (startup's last 100k run). */
const idle = new Map<string, SeededSandbox>();
const poolKey = (o: SeededSandboxOptions) =>
  `${o.leads}/${o.http}/${o.seed ?? 1}/${(o.flags ?? []).join(' ')}`;

export function keepForLater(options: SeededSandboxOptions, sb: SeededSandbox): void {
  idle.set(poolKey(options), sb);
}

/** Stops the sandboxes kept for later that nobody took. */
export async function stopIdle(): Promise<void> {
  const left = [...idle.values()];
  idle.clear();
  await Promise.all(left.map((sb) => sb.stop()));
}

export async function seededSandbox(options: SeededSandboxOptions): Promise<SeededSandbox> {
  const kept = idle.get(poolKey(options));
  if (kept) {
    idle.delete(poolKey(options));
    return { ...kept, via: `${kept.via} (the startup benchmark's last run, reused)` };
  }
  const seed = String(options.seed ?? 1);
  const timeoutMs = options.timeoutMs ?? 150_000;
  const transport = options.http ? ['--http'] : ['--cert-dir', join(tmpdir(), 'ebsync-bench-cert')];
  const args = [
    'sandbox',
    '--port',
    '0',
    '--leads',
    String(options.leads),
    '--seed',
    seed,
    ...(options.flags ?? []),
  ];
  const sb = await spawnSandbox(['cli/ebsync.js', ...args, ...transport], timeoutMs);
  return { ...sb, via: `ebsync ${args.join(' ')} ${transport.join(' ')}` };
}

// ---------------------------------------------------------------------------------------------
// HTTP

export interface Timed {
  status: number;
  bytes: number;
  /** Milliseconds from the request to the last byte of the body. */
  ms: number;
}

export interface Getter {
  /** GET a path below the sandbox origin, keeping the body: status, text, size and time. */
  get(pathAndQuery: string): Promise<Timed & { text: string }>;
  /**
   * GET it for timing only: the body is counted and dropped. Keeping and joining 180 KiB per
   * request made the measuring process's own garbage collections land inside later timings
   * (p99 +2-3 ms in an A/B of two bare clients).
   */
  time(pathAndQuery: string): Promise<Timed>;
  close(): void;
}

/** One keep-alive connection (maxSockets 1), so every timed request reuses it. */
export function getter(baseUrl: string, apiKey: string, ca?: string): Getter {
  const url = new URL(baseUrl);
  const secure = url.protocol === 'https:';
  const agent = secure
    ? new HttpsAgent({ keepAlive: true, maxSockets: 1, ...(ca ? { ca } : {}) })
    : new HttpAgent({ keepAlive: true, maxSockets: 1 });
  const request = secure ? httpsRequest : httpRequest;
  const headers = { accept: 'application/json', 'api-key': apiKey };
  const exchange = (pathAndQuery: string, keep: boolean) =>
    new Promise<Timed & { body: Buffer[] }>((resolve, reject) => {
      const started = performance.now();
      const req = request(new URL(pathAndQuery, url.origin), { agent, headers }, (res) => {
        const body: Buffer[] = [];
        let bytes = 0;
        res.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          if (keep) body.push(chunk);
        });
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, bytes, ms: performance.now() - started, body });
        });
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end();
    });
  return {
    async get(pathAndQuery) {
      const { body, ...timed } = await exchange(pathAndQuery, true);
      return { ...timed, text: Buffer.concat(body).toString('utf8') };
    },
    async time(pathAndQuery) {
      const { status, bytes, ms } = await exchange(pathAndQuery, false);
      return { status, bytes, ms };
    },
    close: () => agent.destroy(),
  };
}
