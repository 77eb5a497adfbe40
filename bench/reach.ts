import { apiKeyAuth, createClient } from '../api/index.js';
import { startSandbox, type Sandbox } from '../sandbox/server.js';
import { driveMirrorPass } from '../test/helpers/mirror-driver.js';
import { reachOracle } from '../test/helpers/reach-oracle.js';
import { fmt, type BenchContext, type Benchmark, type Table } from './lib.js';

/**
 * What a pass reaches of the leads when the service's reach is below what the data needs,
 * and at how many requests: the lead list cut by the plan, lead bookings by date windows,
 * the leads only bookings name read by id. Each case is a full pass of the mirror's own
 * activities in one process (test/helpers/mirror-driver.ts), against a sandbox over HTTP, into
 * a SQLite mirror.
 */

interface Case {
  label: string;
  leads: number;
  events: number;
  reach: number;
  skew: boolean;
  seed: string;
}

const CASES: Case[] = [
  // The table: the sandbox's reach below the setting, which stays at its default.
  { label: 'issue table', leads: 2_000, events: 300, reach: 100, skew: false, seed: '11' },
  { label: 'issue table', leads: 2_000, events: 300, reach: 400, skew: false, seed: '11' },
  { label: 'uniform', leads: 100_000, events: 0, reach: 10_000, skew: false, seed: '1' },
  { label: 'skewed', leads: 200_000, events: 0, reach: 10_000, skew: true, seed: '1' },
];
const CONFIGURED = 10_000;
const PER = 100;

interface Outcome {
  c: Case;
  seconds: number;
  reached: number;
  unreachable: number;
  listRequests: number;
  byId: number;
  floor: number;
  /** The read by id of the lead ids the lists skipped: ids read, leads found. */
  probe: { probes: number; found: number };
  gaps: string;
  /** Of the leads the pass lacks, those the enumeration reaches. */
  missedReachable: number;
  events?: { reached: number; total: number };
}

function liveEvents(sb: Sandbox): number {
  return (
    sb.ctx.db
      .prepare(`SELECT count(*) AS n FROM records WHERE type = 'event' AND deleted_at IS NULL`)
      .get() as { n: number }
  ).n;
}

async function runCase(ctx: BenchContext, c: Case): Promise<Outcome> {
  ctx.log(`${c.label}: ${c.leads.toLocaleString('en-US')} leads, reach ${c.reach}: seeding`);
  const sb = await startSandbox({
    http: true,
    reachLimit: c.reach,
    seed: { leads: c.leads, events: c.events, seed: c.seed, ...(c.skew ? { skew: true } : {}) },
  });
  try {
    const client = createClient({
      baseUrl: sb.baseUrl,
      auth: apiKeyAuth(sb.apiKey),
      allowInsecureLoopback: true,
    });
    const started = performance.now();
    const pass = await driveMirrorPass({
      client,
      subjects: c.events > 0 ? ['leads', 'events'] : ['leads'],
      reachLimit: CONFIGURED,
      per: PER,
    });
    const seconds = (performance.now() - started) / 1000;
    const leads = pass.partitions.leads;
    if (!leads) throw new Error(`${c.label}: the pass read no leads`);
    const mirrored = new Set(pass.written.get('leads')?.keys() ?? []);
    const reached = pass.seen.leads ?? 0;
    ctx.log(`${c.label}: read in ${fmt(seconds, 1)} s; asking the enumeration about the misses`);
    const ids = (
      sb.ctx.db
        .prepare(`SELECT id FROM records WHERE type = 'lead' AND deleted_at IS NULL`)
        .all() as { id: number }[]
    ).map((r) => String(r.id));
    const missed = new Set(ids.filter((id) => !mirrored.has(id)));
    const oracle = reachOracle(sb, c.reach, missed);
    const report = leads.report;
    return {
      c,
      seconds,
      reached,
      unreachable: Math.max(0, leads.expected - reached),
      listRequests: pass.requests['leads.list'] ?? 0,
      byId: pass.requests['leads.get'] ?? 0,
      floor: report.floor,
      probe: { probes: pass.probe?.probes ?? 0, found: pass.probe?.found ?? 0 },
      gaps: [...new Set(report.gaps.map((g) => g.reason))].join(', ') || 'none',
      missedReachable: oracle.reachable.size,
      ...(c.events > 0
        ? { events: { reached: pass.seen.events ?? 0, total: liveEvents(sb) } }
        : {}),
    };
  } finally {
    await sb.close();
  }
}

export const reachBenchmark: Benchmark = {
  name: 'reach',
  title: 'Reach: the leads a pass reaches below the service reach, and its requests',
  async run(ctx) {
    const outcomes: Outcome[] = [];
    for (const c of CASES) outcomes.push(await runCase(ctx, c));
    const n = (v: number) => v.toLocaleString('en-US');
    const table: Table = {
      head: [
        'data',
        'leads',
        'service reach',
        'leads reached',
        'unreachable (reported)',
        'of them the enumeration reaches',
        'lead requests',
        'of them ids the lists skipped (leads found)',
        'ideal',
        'floor of the cuts',
        'requests / floor',
        'requests / ideal',
        'gap reasons of the cuts (before the read by id)',
        'events reached',
        'seconds',
      ],
      rows: outcomes.map((o) => {
        const requests = o.listRequests + o.byId;
        const ideal = Math.ceil(o.c.leads / Math.min(PER, o.c.reach));
        return [
          `${o.c.label}${o.c.skew ? ' (--skew)' : ''}, seed ${o.c.seed}`,
          n(o.c.leads),
          n(o.c.reach),
          n(o.reached),
          n(o.unreachable),
          n(o.missedReachable),
          n(requests),
          `${n(o.probe.probes)} (${n(o.probe.found)})`,
          n(ideal),
          n(o.floor + o.byId),
          `${fmt(requests / (o.floor + o.byId), 2)}×`,
          `${fmt(requests / ideal, 2)}×`,
          o.gaps,
          o.events ? `${n(o.events.reached)} of ${n(o.events.total)}` : 'n/a',
          fmt(o.seconds, 1),
        ];
      }),
    };
    const skewed = outcomes.find((o) => o.c.skew);
    const uniform = outcomes.find((o) => o.c.label === 'uniform');
    const notes = [
      `The setting (EBS_REACH_LIMIT) stays at ${n(CONFIGURED)} in every case: below it, the plans learn the service's reach from its pages.`,
      "Lead requests are lead list pages and leads read by id. Ideal: every lead once at the largest page. Floor of the cuts: what a pass that knew every count beforehand and cut as this one did would make (the root's first page, each query read for good once, the same reads by id); the plan's probes and cuts made again under a learned reach are the difference.",
      'The enumeration (test/helpers/reach-oracle.ts) reaches a lead when the query with all its filter values, e-mail domain, name words, area code and city holds it among the first `reach`. The pass reads by id the lead ids between the lowest and highest its lists returned that it did not see (activities/mirror/probe-ids.ts), after the lead list and before the lead bookings: the filters cannot tell apart a lead whose only rare word no lead the pass read carries.',
    ];
    if (uniform) {
      notes.push(
        `Uniform data at 100,000: ${n(uniform.listRequests + uniform.byId)} lead requests (target: 1,019 or fewer).`,
      );
    }
    if (skewed) {
      const requests = skewed.listRequests + skewed.byId;
      notes.push(
        `Skewed data at 200,000: ${n(skewed.reached)} of ${n(skewed.c.leads)} leads reached, ${n(skewed.missedReachable)} of the missing ones reachable by the enumeration (target: none); ${n(requests)} lead requests (${n(skewed.probe.probes)} of them ids the lists skipped, ${n(skewed.probe.found)} leads found), ${fmt((requests / (skewed.floor + skewed.byId) - 1) * 100, 1)} % over the floor of its cuts (target: within 10 %) and ${fmt(requests / Math.ceil(skewed.c.leads / PER), 2)}× the ideal.`,
      );
    }
    return {
      method:
        "Each case seeds a sandbox in this process (HTTP on loopback, `--reach-limit` as given) and runs a full pass of the mirror's activities on it (its leads, and its events where it has some) into a SQLite mirror, with the setting left at 10,000. Leads reached are those the pass recorded, unreachable the service's count minus them; lead requests are the lead list and lead requests the pass sent; the enumeration is asked about each lead the pass lacks.",
      tables: [table],
      notes,
    };
  },
};
