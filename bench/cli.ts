import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { isFresh } from '../cli/build-state.js';
import { cliEnv, freePort } from '../test/helpers/cli.js';
import { fmt, ROOT, summarize, track, type Benchmark, type Table } from './lib.js';

const WARMUP = 2;
const ROUNDS = 10;
const VERSION_TARGET_S = 0.3;
const STATUS_TARGET_S = 1;
/** The main job on demo data: the dev server's start, 2,000 leads mirrored, two schedules. */
const DEV_READY_MS = 600_000;

interface Timed {
  label: string;
  file: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  /** Exit codes that count as a run (status exits 1 when it reports a problem). */
  ok: readonly number[];
  seconds: number[];
}

/** Wall time of one run, from spawn to exit; throws on an exit code the row does not allow. */
function timeOnce(row: Timed): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(row.file, row.args, { cwd: ROOT, env: row.env, stdio: 'ignore' });
    child.once('error', reject);
    child.once('exit', (code) => {
      const seconds = (performance.now() - started) / 1000;
      if (code !== null && row.ok.includes(code)) resolve(seconds);
      else reject(new Error(`${row.label} exited ${code}`));
    });
  });
}

/**
 * The Node a user's shell finds: the first `node` on PATH outside node_modules/.bin (which npm
 * scripts put first). Undefined when it is the Node running this benchmark.
 */
function machineNode(): { path: string; version: string } | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir === '' || dir.includes('node_modules')) continue;
    const path = join(dir, 'node');
    try {
      accessSync(path, constants.X_OK);
    } catch {
      continue;
    }
    if (realpathSync(path) === realpathSync(process.execPath)) return undefined;
    const version = execFileSync(path, ['--version'], { encoding: 'utf8' }).trim();
    return { path, version };
  }
  return undefined;
}

/**
 * `ebsync dev` on demo data in a directory of its own (its dev server, worker, receiver,
 * status page and a finished mirror pass): what `ebsync status` reports on after a first
 * `npm start`. Resolves once it printed its scheduled syncs, the last lines of its start.
 */
async function startMainJob(dir: string): Promise<{ child: ChildProcess; env: NodeJS.ProcessEnv }> {
  const settings = {
    EBSYNC_DATA_DIR: join(dir, 'data'),
    TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}`,
    EBSYNC_WEBHOOK_PORT: String(await freePort()),
    EBSYNC_STATUS_PORT: String(await freePort()),
    EBSYNC_LOG_LEVEL: 'warn',
  };
  const env = cliEnv(settings);
  // Its own process group: the end of the benchmark stops it as Ctrl-C would, dev server too.
  const child = spawn(process.execPath, ['cli/ebsync.js', 'dev'], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  track(child);
  await new Promise<void>((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(
      () => reject(new Error(`ebsync dev: not ready within ${DEV_READY_MS / 1000} s`)),
      DEV_READY_MS,
    );
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      if (/^Scheduled syncs/m.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`ebsync dev exited ${code} before it was ready: ${err.slice(-500)}`));
    });
  });
  return { child, env };
}

async function stopMainJob(child: ChildProcess): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  process.kill(-child.pid, 'SIGINT');
  const stopped = await Promise.race([
    exited.then(() => true),
    new Promise((resolve) => setTimeout(() => resolve(false), 30_000)),
  ]);
  if (!stopped) process.kill(-child.pid, 'SIGKILL');
}

/** `ebsync --version`, `--help`, `sync --help` and `status`: how long each takes to answer. */
export const cliBenchmark: Benchmark = {
  name: 'cli',
  title: 'ebsync command start-up: --version, --help, sync --help, status',
  async run(ctx) {
    // What `npm ci` leaves: the compiled tree, current (cli/build.js; the command runs the
    // TypeScript through tsx when it is not, which this benchmark does not measure).
    if (!isFresh()) {
      ctx.log('dist/ is not current: building it (npm run build)');
      execFileSync(process.execPath, ['cli/build.js'], { cwd: ROOT, stdio: 'ignore' });
    }
    const dir = mkdtempSync(join(tmpdir(), 'ebsync-bench-cli-'));
    ctx.log('starting ebsync dev on demo data (dev server, worker, a mirror pass)');
    const job = await startMainJob(dir);
    try {
      const node = process.execPath;
      const quiet = cliEnv();
      const rows: Timed[] = [['--version'], ['--help'], ['sync', '--help']].map((args) => ({
        label: `node cli/ebsync.js ${args.join(' ')}`,
        file: node,
        args: ['cli/ebsync.js', ...args],
        env: quiet,
        ok: [0],
        seconds: [],
      }));
      rows.push({
        label: 'node cli/ebsync.js status',
        file: node,
        args: ['cli/ebsync.js', 'status'],
        env: job.env,
        ok: [0, 1],
        seconds: [],
      });
      const older = machineNode();
      const olderLabels: string[] = [];
      if (older) {
        for (const args of [['--version'], ['status']]) {
          olderLabels.push(
            `${older.path} cli/ebsync.js ${args.join(' ')} (${older.version}, hands over to Node ${process.version})`,
          );
          rows.push({
            label: olderLabels.at(-1) ?? '',
            file: older.path,
            args: ['cli/ebsync.js', ...args],
            env: args[0] === 'status' ? job.env : quiet,
            ok: args[0] === 'status' ? [0, 1] : [0],
            seconds: [],
          });
        }
      }
      rows.push({
        label: 'npx ebsync --version',
        file: 'npx',
        args: ['ebsync', '--version'],
        env: quiet,
        ok: [0],
        seconds: [],
      });

      for (let i = 0; i < WARMUP; i++) for (const row of rows) await timeOnce(row);
      // Rounds interleave the commands, so a busy moment of the machine falls on all of them.
      for (let round = 1; round <= ROUNDS; round++) {
        for (const row of rows) row.seconds.push(await timeOnce(row));
        ctx.log(`round ${round}/${ROUNDS}`);
      }

      const table: Table = {
        head: ['command', 'runs', 'median (s)', 'min (s)', 'p95 (s)', 'max (s)'],
        rows: rows.map((row) => {
          const s = summarize(row.seconds);
          return [row.label, s.n, fmt(s.p50, 3), fmt(s.min, 3), fmt(s.p95, 3), fmt(s.max, 3)];
        }),
      };
      const median = (label: string) =>
        summarize(rows.find((r) => r.label === label)?.seconds ?? [Number.NaN]).p50;
      const version = median('node cli/ebsync.js --version');
      const status = median('node cli/ebsync.js status');
      const verdict = (met: boolean) => (met ? 'met' : 'NOT met');
      return {
        method:
          `Wall time from spawn to exit of each command, run from the repository with the compiled tree current ` +
          `(what \`npm ci\` leaves) and Node's compile cache warm: ${WARMUP} warm-up rounds, then ${ROUNDS} rounds ` +
          `that run every command once in turn. \`status\` reports on \`ebsync dev\` after its first start on demo ` +
          `data (its own dev server, data directory and ports): one connection, one finished mirror pass, two ` +
          `schedules, the webhook receiver. \`node\` is the Node running the benchmark` +
          `${older ? `; the rows naming ${older.path} start on the machine's own Node, which hands over to the project's` : ''}.`,
        tables: [table],
        notes: [
          `Target \`ebsync --version\` ≤ ${VERSION_TARGET_S} s: **${verdict(version <= VERSION_TARGET_S)}** (median ${fmt(version, 3)} s).`,
          `Target \`ebsync status\` ≤ ${STATUS_TARGET_S} s on a warm machine: **${verdict(status <= STATUS_TARGET_S)}** (median ${fmt(status, 3)} s).`,
          ...(older
            ? [
                `Started on the machine's ${older.version}, which hands over to Node ${process.version}: \`--version\` median ${fmt(median(olderLabels[0] ?? ''), 3)} s, \`status\` ${fmt(median(olderLabels[1] ?? ''), 3)} s.`,
              ]
            : []),
          '`npx ebsync` adds npm’s own start (it runs on the machine’s Node) to the command’s.',
        ],
      };
    } finally {
      await stopMainJob(job.child);
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
