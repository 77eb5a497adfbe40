import {
  fmt,
  getter,
  keepForLater,
  median,
  ratio,
  seededSandbox,
  spawnSandbox,
  stealMeter,
  summarize,
  type Benchmark,
  type SandboxProcess,
  type SeededSandboxOptions,
} from './lib.js';

const LEADS = 100_000;
const READY_TARGET_S = 10;
const P99_TARGET_MS = 20;
const WARMUP = 20;
// p99 of 200 samples is their 2nd-largest: one scheduler hiccup on a shared machine moved it
// by 10 ms from run to run. 600 put six samples above it.
const N = 600;
const ROUNDS = 3;
const ROUND_GAP_MS = 5_000;

/** (a) `ebsync sandbox` ready time, empty and with 100,000 generated leads. */
export const startupBenchmark: Benchmark = {
  name: 'startup',
  title: 'Sandbox ready time with 100,000 generated leads',
  async run(ctx) {
    const empty = ['cli/ebsync.js', 'sandbox', '--http', '--port', '0'];
    const seeded = [...empty, '--leads', String(LEADS), '--seed', '1'];

    /** Up to `runs` fresh starts, fewer past `budgetMs`; `keep` hands the last one to `list`. */
    const measure = async (
      label: string,
      args: string[],
      runs: number,
      budgetMs: number,
      keep?: SeededSandboxOptions,
    ) => {
      const results: SandboxProcess[] = [];
      const started = performance.now();
      for (let i = 0; i < runs; i++) {
        const sb = await spawnSandbox(args, 120_000);
        results.push(sb);
        ctx.log(`${label} run ${i + 1}/${runs}: ready in ${fmt(sb.readyMs / 1000, 2)} s`);
        const last = i === runs - 1 || performance.now() - started > budgetMs;
        if (last && keep) keepForLater(keep, { ...sb, via: `ebsync ${args.slice(1).join(' ')}` });
        else await sb.stop();
        if (last) break;
      }
      return results;
    };

    const emptyRuns = await measure('empty', empty, 3, 20_000);
    const seededRuns = await measure('100k', seeded, 3, 30_000, { leads: LEADS, http: true });

    const row = (command: string, runs: SandboxProcess[]) => {
      const s = summarize(runs.map((r) => r.readyMs / 1000));
      const peak = median(runs.map((r) => r.peakRssMiB ?? Number.NaN));
      return [command, s.n, fmt(s.p50, 2), fmt(s.min, 2), fmt(s.max, 2), fmt(peak, 0)];
    };
    const rows = [
      row(`node ${empty.join(' ')}`, emptyRuns),
      row(`node ${seeded.join(' ')}`, seededRuns),
    ];
    const ready = median(seededRuns.map((r) => r.readyMs / 1000));
    const base = median(emptyRuns.map((r) => r.readyMs / 1000));
    const notes = [
      `Target ready < ${READY_TARGET_S} s: **${ready < READY_TARGET_S ? 'met' : 'NOT met'}** (median ${fmt(ready, 2)} s).`,
      `100k / empty ready time: ${ratio(ready, base)}; seeding adds ${fmt(ready - base, 2)} s, about ${fmt(((ready - base) * 1e6) / LEADS, 0)} µs per lead.`,
    ];
    return {
      method:
        'Wall time from spawning the command to the line "Event Business Service sandbox ready" on its stdout (node start-up, TypeScript loading through tsx, seeding and listening all count), then SIGTERM. Peak RSS is VmHWM of the process at ready.',
      tables: [
        {
          head: ['command', 'runs', 'median ready (s)', 'min (s)', 'max (s)', 'peak RSS (MiB)'],
          rows,
        },
      ],
      notes,
    };
  },
};

/** (b) GET /leads latency near the start and near the reach limit, 100,000 leads. */
export const listBenchmark: Benchmark = {
  name: 'list',
  title: 'Sandbox list-page latency, 100,000 leads',
  async run(ctx) {
    ctx.log(`starting a sandbox with ${LEADS.toLocaleString('en-US')} leads`);
    const sb = await seededSandbox({ leads: LEADS, http: true });
    ctx.log(`ready in ${fmt(sb.readyMs / 1000, 1)} s via ${sb.via}`);
    const http = getter(sb.baseUrl, sb.apiKey);
    try {
      const path = (page: number, per: number) => `/api/v1/leads?page=${page}&per=${per}`;
      // The fixture is what it should be: full pages at the reach limit, nothing past it.
      const last = await http.get(path(100, 100));
      const body = JSON.parse(last.text) as { data: unknown[]; meta: { total_count: number } };
      if (last.status !== 200 || body.data.length !== 100 || body.meta.total_count !== LEADS) {
        throw new Error(
          `page 100 answered ${last.status} with ${body.data.length} leads of ${body.meta.total_count}`,
        );
      }
      const past = JSON.parse((await http.get(path(101, 100))).text) as { data: unknown[] };
      if (past.data.length !== 0) throw new Error('page 101 is past the reach limit but not empty');

      const kinds = [
        { label: 'per=100, pages 1..5 (shallow)', page: (i: number) => 1 + (i % 5), per: 100 },
        { label: 'per=100, pages 96..100 (deep)', page: (i: number) => 96 + (i % 5), per: 100 },
        { label: 'per=1, page 1 (what leads.count() asks)', page: () => 1, per: 1 },
      ];
      const bytes = kinds.map(() => 0);
      // Each round is its own sample of the machine: a burst of CPU steal on this shared VM
      // lands in one round and moves its p99 by 10 ms or more, so the target is judged on the
      // median round, with every round shown. Rounds are spaced so one burst rarely spans two.
      const rounds: { times: number[][]; steal: number | undefined }[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        if (r > 0) await new Promise((resolve) => setTimeout(resolve, ROUND_GAP_MS));
        const warmup = r === 0 ? WARMUP : 0;
        const times = kinds.map(() => [] as number[]);
        const steal = stealMeter();
        // Interleaved, so drift on a shared machine hits every kind alike.
        for (let i = 0; i < warmup + N; i++) {
          if (i === warmup) ctx.log(`round ${r + 1}/${ROUNDS}: timing ${N} requests of each kind`);
          for (const [k, kind] of kinds.entries()) {
            const answer = await http.time(path(kind.page(i), kind.per));
            if (answer.status !== 200) {
              throw new Error(`${path(kind.page(i), kind.per)}: ${answer.status}`);
            }
            if (i >= warmup) {
              times[k]?.push(answer.ms);
              bytes[k] = answer.bytes;
            }
          }
        }
        rounds.push({ times, steal: steal.read() });
      }
      type Stats = ReturnType<typeof summarize>;
      const pooled = kinds.map((_, k) =>
        summarize(rounds.flatMap((round) => round.times[k] ?? [])),
      );
      const perRound = rounds.map((round) => {
        const [shallow, deep, one] = round.times.map((t) => summarize(t)) as [Stats, Stats, Stats];
        return { shallow, deep, one, worst: Math.max(shallow.p99, deep.p99), steal: round.steal };
      });
      const judged = median(perRound.map((round) => round.worst));
      const met = perRound.filter((round) => round.worst < P99_TARGET_MS).length;
      const [shallow, deep, one] = pooled as [Stats, Stats, Stats];
      const stealText = (steal: number | undefined) =>
        steal === undefined ? 'n/a' : `${fmt(steal * 100, 1)} %`;
      return {
        method: `${sb.via}, ready in ${fmt(sb.readyMs / 1000, 1)} s. Sequential GET /api/v1/leads over one keep-alive HTTP connection (Node http.Agent, maxSockets 1), time to the last byte of the body; ${WARMUP} warm-up requests of each kind, then ${ROUNDS} rounds ${ROUND_GAP_MS / 1000} s apart, each of ${N} requests of each kind, interleaved. Default reach limit 10,000 and max per 100.`,
        tables: [
          {
            caption: `All ${ROUNDS} rounds together:`,
            head: [
              'request',
              'n',
              'p50 (ms)',
              'p95 (ms)',
              'p99 (ms)',
              'max (ms)',
              'req/s',
              'body (KiB)',
            ],
            rows: kinds.map((kind, k) => {
              const s = pooled[k] as Stats;
              return [
                kind.label,
                s.n,
                fmt(s.p50, 2),
                fmt(s.p95, 2),
                fmt(s.p99, 2),
                fmt(s.max, 2),
                fmt(1000 / s.mean, 0),
                fmt((bytes[k] ?? 0) / 1024, 1),
              ];
            }),
          },
          {
            caption: 'Each round (p99 in ms), with the CPU steal during it:',
            head: ['round', 'CPU steal', 'shallow p50', 'shallow p99', 'deep p99', 'per=1 p99'],
            rows: perRound.map((round, r) => [
              r + 1,
              stealText(round.steal),
              fmt(round.shallow.p50, 2),
              fmt(round.shallow.p99, 2),
              fmt(round.deep.p99, 2),
              fmt(round.one.p99, 2),
            ]),
          },
        ],
        notes: [
          `Target p99 < ${P99_TARGET_MS} ms at per=100: **${judged < P99_TARGET_MS ? 'met' : 'NOT met'}** (median round: ${fmt(judged, 2)} ms, the worse of shallow and deep); met in ${met} of ${ROUNDS} rounds. All rounds together: shallow ${fmt(shallow.p99, 2)} ms, deep ${fmt(deep.p99, 2)} ms.`,
          `Deep / shallow: p50 ${ratio(deep.p50, shallow.p50)}, p95 ${ratio(deep.p95, shallow.p95)}, p99 ${ratio(deep.p99, shallow.p99)}.`,
          `per=1 / per=100 shallow p50: ${ratio(one.p50, shallow.p50)}: the part of a page that does not depend on its size (auth, routing, the count over all leads).`,
          `The machine's own tail: the 1.8 KiB per=1 answer's p99 is ${fmt(one.p99, 2)} ms (p50 ${fmt(one.p50, 2)} ms). Rounds differ mostly in that tail, and it follows the CPU steal.`,
          `Sandbox process RSS at ready: ${fmt(sb.rssMiB ?? Number.NaN, 0)} MiB (peak ${fmt(sb.peakRssMiB ?? Number.NaN, 0)} MiB).`,
        ],
      };
    } finally {
      http.close();
      await sb.stop();
    }
  },
};
