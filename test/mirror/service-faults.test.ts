import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMirrorActivities } from '../../activities/mirror/pass.js';
import { mirrorWorkflow } from '../../workflows/mirror.js';
import type { MirrorSummary } from '../../workflows/mirror-types.js';
import { startSandboxMirror, type SandboxMirror } from '../fixtures/sandbox-mirror.js';
import type { TestSandbox } from '../helpers/sandbox.js';
import type { TemporalHarness } from '../helpers/temporal.js';
import { chainHistory, failedRuns } from './run-histories.js';
import { destinationIds, expectMirrorOfSource } from './source-truth.js';

const LEADS = 20_000;
const REACH = 10_000;
const PER = 100;

let harness: SandboxMirror;
let ts: TestSandbox;
let temporal: TemporalHarness;
let deps: SandboxMirror['deps'];
const destination = () => harness.sqlite('mirror.db');

beforeAll(async () => {
  harness = await startSandboxMirror(
    'faults',
    { reachLimit: REACH, seed: { leads: LEADS } },
    { reachLimit: REACH, per: PER },
  );
  ({ ts, temporal, deps } = harness);
  // 10% of API requests answer 500, 502 or 503; 5% lose their connection without an answer.
  ts.sb.admin.setFaults({ errorRate: 0.1, errorStatuses: [500, 502, 503], dropRate: 0.05 });
}, 240_000);

afterAll(async () => {
  ts?.sb.admin.clearFaults();
  await harness?.close();
});

/** A full pass on the shared dev server; no run of it may fail. */
async function fullPass(): Promise<MirrorSummary> {
  const taskQueue = temporal.taskQueue();
  const workflowId = `mirror-faults-${taskQueue}`;
  const handle = await temporal.withWorker(
    { taskQueue, activities: createMirrorActivities(deps), maxConcurrentActivityTaskExecutions: 8 },
    async () => {
      const started = await temporal.client.workflow.start(mirrorWorkflow, {
        taskQueue,
        workflowId,
        args: [
          {
            connectionId: 'c1',
            destination: destination(),
            subjects: ['leads', 'events', 'appointments'],
            mode: 'full',
          },
        ],
      });
      await started.result();
      return started;
    },
  );
  const runs = await chainHistory(temporal.client, workflowId, handle.firstExecutionRunId);
  expect(failedRuns(runs)).toEqual([]);
  return handle.result();
}

describe('passes while the service answers 10% of requests with 5xx and drops 5%', () => {
  it('a backfill completes by retrying, and the destination equals the source', async () => {
    const faultsBefore = ts.sb.ctx.counters.faultsInjected;
    const summary = await fullPass();
    // The faults really happened, on the order the rates say (15% of requests).
    expect(ts.sb.ctx.counters.faultsInjected - faultsBefore).toBeGreaterThan(
      summary.counts.requests / 20,
    );
    await expectMirrorOfSource(ts.sb, destination(), summary);
    expect(ts.internalErrors).toEqual([]);
  }, 600_000);

  it('the deletion sweep of the next pass marks exactly the 3 deleted leads, faults and all', async () => {
    const live = await destinationIds(destination(), 'leads');
    const gone = live.slice(50, 53);
    for (const id of gone) ts.sb.admin.deleteRecord('lead', Number(id));
    const summary = await fullPass();
    expect(summary.counts.deleted).toBe(3);
    const deleted = await destinationIds(destination(), 'leads', { deleted: true });
    expect(deleted.sort()).toEqual([...gone].sort());
    await expectMirrorOfSource(ts.sb, destination(), summary);
  }, 600_000);
});
