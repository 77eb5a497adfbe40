/**
 * `npm run bench [-- name...]`: runs the benchmarks (all, or those named) and writes
 * bench/RESULTS.md with the command, the date and the machine. Numbers are only compared
 * within one run, as ratios: these machines are shared and noisy.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { relative } from 'node:path';
import { parseArgs } from 'node:util';
import { clientBenchmark } from './client.js';
import {
  fmt,
  killAll,
  renderTable,
  ROOT,
  stopIdle,
  type BenchContext,
  type Benchmark,
} from './lib.js';
import { listBenchmark, startupBenchmark } from './sandbox.js';

const BENCHMARKS: Benchmark[] = [startupBenchmark, listBenchmark, clientBenchmark];

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    out: { type: 'string', default: `${ROOT}bench/RESULTS.md` },
    list: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});

if (values.help || values.list) {
  process.stdout.write(
    `${values.help ? 'Usage: npm run bench [-- [--out FILE] [name...]]\n\n' : ''}${BENCHMARKS.map(
      (b) => `  ${b.name.padEnd(8)} ${b.title}`,
    ).join('\n')}\n`,
  );
  process.exit(0);
}

const unknown = positionals.filter((name) => !BENCHMARKS.some((b) => b.name === name));
if (unknown.length > 0) {
  process.stderr.write(
    `bench: unknown benchmark ${unknown.join(', ')}; allowed: ${BENCHMARKS.map((b) => b.name).join(', ')}\n`,
  );
  process.exit(2);
}
const selected =
  positionals.length === 0 ? BENCHMARKS : BENCHMARKS.filter((b) => positionals.includes(b.name));

process.once('exit', killAll);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    killAll();
    process.exit(130);
  });
}

const args = process.argv.slice(2);
const command =
  process.env.npm_lifecycle_event === 'bench'
    ? `npm run bench${args.length ? ` -- ${args.join(' ')}` : ''}`
    : `tsx bench/run.ts${args.length ? ` ${args.join(' ')}` : ''}`;

function git(...gitArgs: string[]): string | undefined {
  try {
    return execFileSync('git', gitArgs, { cwd: ROOT, encoding: 'utf8', stdio: 'pipe' }).trim();
  } catch {
    return undefined;
  }
}

const cpus = os.cpus();
const load = os.loadavg();
const commit = git('rev-parse', '--short', 'HEAD');
const dirty = (git('status', '--porcelain', '--untracked-files=no') ?? '') !== '';
const machine = [
  ['CPU', `${cpus[0]?.model.trim() ?? 'unknown'} × ${cpus.length} (os.cpus())`],
  [
    'Memory',
    `${fmt(os.totalmem() / 1024 ** 3, 1)} GiB total, ${fmt(os.freemem() / 1024 ** 3, 1)} GiB free at start`,
  ],
  ['Load average at start', load.map((l) => fmt(l, 2)).join(', ') + ' (1, 5, 15 min)'],
  ['Node', process.version],
  ['OS', `${os.type()} ${os.release()} ${os.arch()}`],
  ['Commit', commit ? `${commit}${dirty ? ' (with uncommitted changes)' : ''}` : 'unknown'],
];

const log = (message: string) => process.stderr.write(`${message}\n`);

/** The machine's CPU time counters (Linux /proc/stat, all cores), or undefined elsewhere. */
function cpuTicks(): number[] | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
    return line.trim().split(/\s+/).slice(1).map(Number);
  } catch {
    return undefined;
  }
}

/** Share of the interval in `steal` (the 8th counter): a noisy neighbour, made visible. */
function stealShare(before?: number[], after?: number[]): number | undefined {
  if (!before || !after || after.length < 8) return undefined;
  const delta = after.map((v, k) => v - (before[k] ?? 0));
  // guest and guest_nice (9th, 10th) are already counted in user and nice.
  const total = delta.slice(0, 8).reduce((a, b) => a + b, 0);
  return total > 0 ? (delta[7] ?? 0) / total : undefined;
}

const date = new Date();
const runStarted = performance.now();
log(
  `bench: ${selected.map((b) => b.name).join(', ')} (${cpus.length} cores, load ${fmt(load[0] ?? 0, 2)})`,
);

const sections: string[] = [];
let failed = 0;
for (const bench of selected) {
  const started = performance.now();
  const loadAtStart = os.loadavg()[0] ?? 0;
  const cpuAtStart = cpuTicks();
  const ctx: BenchContext = {
    log: (message) => log(`[${bench.name}] ${message}`),
  };
  log(`[${bench.name}] ${bench.title}`);
  let body: string;
  try {
    const section = await bench.run(ctx);
    body = [
      section.method,
      ...section.tables.map(renderTable),
      section.notes.map((n) => `- ${n}`).join('\n'),
    ]
      .filter((part) => part !== '')
      .join('\n\n');
  } catch (error) {
    failed += 1;
    body = `**failed: ${(error as Error).message}**`;
    log(`[${bench.name}] FAILED: ${(error as Error).stack ?? String(error)}`);
  }
  const seconds = (performance.now() - started) / 1000;
  log(`[${bench.name}] done in ${fmt(seconds, 1)} s`);
  const steal = stealShare(cpuAtStart, cpuTicks());
  const stolen =
    steal === undefined
      ? ''
      : `; CPU steal ${fmt(steal * 100, 1)} % (time the hypervisor gave these cores to other machines)`;
  sections.push(
    `## ${bench.title} (\`${bench.name}\`)\n\n_${fmt(seconds, 0)} s; 1-minute load average ${fmt(loadAtStart, 2)} at its start${stolen}._\n\n${body}`,
  );
}

await stopIdle();
const total = (performance.now() - runStarted) / 1000;
machine.splice(3, 0, [
  'Load average at end',
  `${os
    .loadavg()
    .map((l) => fmt(l, 2))
    .join(', ')} (1, 5, 15 min)`,
]);
const doc = [
  '# Benchmark results',
  `Generated by \`${command}\` on ${date.toISOString()} in ${fmt(total, 0)} s. Do not edit by hand: run the command again. Benchmarks run: ${selected.map((b) => `\`${b.name}\``).join(', ')}.`,
  'These machines are shared and noisy: compare figures as ratios within this one run, not across runs or machines.',
  renderTable({ head: ['Machine', ''], rows: machine }),
  ...sections,
].join('\n\n');
writeFileSync(values.out, `${doc}\n`);
log(
  `bench: wrote ${relative(process.cwd(), values.out)} in ${fmt(total, 0)} s${failed ? `; ${failed} failed` : ''}`,
);
process.exitCode = failed > 0 ? 1 : 0;
