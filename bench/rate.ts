import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSandbox } from '../sandbox/server.js';
import { pacedPages, PACING_HEADROOM } from '../activities/request-pacing.js';
import { runPacedMirror, type PacedRun } from '../test/fixtures/paced-mirror.js';
import {
  fmt,
  startBenchTemporal,
  writeWorkflowBundle,
  type BenchContext,
  type Benchmark,
  type Section,
} from './lib.js';

/** The service's limit for one credential, and ebsync's per-connection rate set to it. */
const R = 20;
const LEADS = 10_000;
const PER = 25;
const REACH = 10_000;

/**
 * `setting`: EBS_RATE_LIMIT, when not the service's limit. The service publishes no numeric
 * limit, so a setting above it is a user's likely guess: the last case shows what the pace
 * then learns (workflows/rate-limit.ts), with no target of its own.
 */
const CASES: readonly { mode: '429' | '403'; workers: number; setting?: number }[] = [
  { mode: '429', workers: 1 },
  { mode: '429', workers: 2 },
  { mode: '403', workers: 1 },
  { mode: '403', workers: 2 },
  { mode: '429', workers: 1, setting: 2 * R },
];

/**
 * One connection's full pass of its leads against a sandbox limiting its one credential to R
 * requests a second, on one and on two worker processes paced by the task queue's per-key
 * rate (EBS_RATE_LIMIT = R): requests a second and the share turned away, in both the 429 and
 * the 403 form of the limit.
 */
export const rateBenchmark: Benchmark = {
  name: 'rate',
  title: 'One rate limit per connection across workers',
  async run(ctx: BenchContext): Promise<Section> {
    const work = mkdtempSync(join(tmpdir(), 'ebsync-bench-rate-'));
    const [env, bundlePath, sb] = await Promise.all([
      startBenchTemporal(ctx, work),
      writeWorkflowBundle(work),
      startSandbox({ reachLimit: REACH, seed: { leads: LEADS } }),
    ]);
    const rows: (string | number)[][] = [];
    const verdicts: string[] = [];
    try {
      let i = 0;
      for (const c of CASES) {
        i += 1;
        const setting = c.setting ?? R;
        ctx.log(
          `${c.workers} worker(s), --rate-limit ${R} --rate-limit-mode ${c.mode}, EBS_RATE_LIMIT=${setting}`,
        );
        const run: PacedRun = await runPacedMirror({
          client: env.client,
          temporalAddress: env.address,
          bundlePath,
          taskQueue: `bench-rate-${i}`,
          sb,
          store: `sqlite:${join(work, `store-${i}.db`)}`,
          destination: `sqlite:${join(work, `mirror-${i}.db`)}`,
          serviceLimit: R,
          mode: c.mode,
          rate: setting,
          workers: c.workers,
          connectionId: `bench-${i}`,
          subjects: ['leads'],
          reachLimit: REACH,
          per: PER,
        });
        const asked = run.requests / run.seconds;
        const limitedShare = run.limited / run.requests;
        const sustained = run.sustainedPerSecond;
        rows.push([
          c.mode,
          c.workers,
          setting === R ? 'R' : `${fmt(setting / R, 0)} R`,
          run.requests,
          fmt(run.seconds, 1),
          fmt(asked, 1),
          fmt(run.servedPerSecond, 1),
          `${fmt(run.servedPerSecond / R, 2)} R`,
          `${fmt(sustained / R, 2)} R`,
          run.limited,
          `${fmt(limitedShare * 100, 2)} %`,
        ]);
        if (setting !== R) {
          verdicts.push(
            `${c.workers} worker(s), ${c.mode}, EBS_RATE_LIMIT ${fmt(setting / R, 0)} × the service's limit (no target): sustained ${fmt(sustained / R, 2)} R while reading, ${fmt(limitedShare * 100, 2)} % of requests turned away; over the whole pass ${fmt(run.servedPerSecond / R, 2)} R`,
          );
          continue;
        }
        const ok = sustained >= 0.9 * R && sustained <= 1.05 * R && limitedShare <= 0.01;
        verdicts.push(
          `${c.workers} worker(s), ${c.mode}: sustained ${fmt(sustained / R, 2)} R while reading (target 0.90 to 1.05), ${fmt(limitedShare * 100, 2)} % limited (target ≤ 1 %): ${ok ? 'met' : 'NOT met'}; over the whole pass, planning and closing included, ${fmt(run.servedPerSecond / R, 2)} R`,
        );
      }
    } finally {
      await sb.close();
      await env.teardown();
      rmSync(work, { recursive: true, force: true });
    }
    return {
      method:
        `A sandbox (\`--rate-limit ${R}\`, one-second windows per credential) seeded with ${LEADS.toLocaleString('en-US')} leads; ` +
        `a full pass of subject \`leads\` (page size ${PER}) of one connection, by worker processes running as ` +
        `ebsync's worker does under \`EBS_RATE_LIMIT=${R}\`: the connection as fairness key, the task queue's per-key rate ${R} activities/s ` +
        `(Temporal dev server with \`matching.enableFairness=true\`), each request waiting for its slot in the shared SQLite store ` +
        `(spaced for ${PACING_HEADROOM} × ${R} a second), ${pacedPages(R).pagesPerActivity} pages per activity, ${pacedPages(R).pagesInFlight} in flight and the next ${pacedPages(R).pagesInFlight} asked for before they answer. ` +
        `The last row sets EBS_RATE_LIMIT to ${2 * R}, twice the service's limit (the service publishes none, so a setting is a guess): the pace slows after refusals and learns how far. ` +
        'Seconds from the workflow start to its close (planning and closing included); requests counted by the sandbox. ' +
        '"Served" is answered requests over those seconds; "sustained" is the same over the reading alone, from the first page activity\'s start to the last one\'s end (from the workflow history): the rate the connection holds while it syncs.',
      tables: [
        {
          head: [
            'mode',
            'workers',
            'EBS_RATE_LIMIT',
            'requests',
            'seconds',
            'asked / s',
            'served / s',
            'served',
            'sustained',
            'limited',
            'limited share',
          ],
          rows,
        },
      ],
      notes: verdicts,
    };
  },
};
